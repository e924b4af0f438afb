"""Value checks on a merged run configuration: one rule per key, then cross-key rules.

The range or the allowed values of every key are declared once, in :data:`RULES`
(the types are in :data:`~clickrank.experiment._schema.SCHEMA`); the rules that
relate several keys are one small function per section (:data:`_CROSS`). Every
error is one :class:`~clickrank.ConfigError` line naming ``[section] key``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core._io import special_kind
from .._core._validation import ClickRankError, ConfigError, InputError, check_jobs
from ..specs.names import (
    CANDIDATE_SETS,
    CLICK_MODELS,
    CURVE_MODELS,
    EMPTY_CONVENTIONS,
    ETA_MODELS,
    INTERLEAVING_METHODS,
    INTERVENTION_FRACTIONS,
    NAIVE_KINDS,
    NEEDS_THETA,
    NORMALIZATIONS,
    POLICY_KINDS,
    PROPENSITY_DESIGN,
    PROPENSITY_METHODS,
    RELEVANCE_MAPS,
    VALIDATION_ESTIMATES,
)
from ._schema import PRODUCTION, SCHEMA, TARGETS, _where


class _Checker:
    """Value checks on the merged configuration; every error names ``[section] key``."""

    def __init__(self, values: dict, user: Mapping[str, Any], origin: str) -> None:
        self.v = values
        self.user = user
        self.origin = origin

    def fail(self, section: str, key: str | None, message: str) -> None:
        raise ConfigError(f"{self.origin}: {_where(section, key)} {message}")

    def given(self, section: str, key: str) -> bool:
        return key in (self.user.get(section) or {})

    def value(self, section: str, key: str) -> Any:
        return (self.v if not section else self.v[section]).get(key)


# -- one rule per key ----------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """The allowed values of one key: a range (``low``/``high``) or a set of ``choices``.

    ``low``/``high`` bound the value (``open_low``/``open_high``: strictly);
    ``choices`` is a tuple or a function returning one (for names defined in a
    module that is imported only when a config is checked). ``None`` values pass
    (optional keys); ``when`` limits the rule to configs where it returns true;
    ``note`` goes before "must" in the message.
    """

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    note: str = ""
    when: Callable[[dict], bool] | None = None

    def check(self, c: _Checker, section: str, key: str) -> None:
        val = c.value(section, key)
        if val is None or (self.when is not None and not self.when(c.v)):
            return
        if self.choices is not None:
            options = tuple(self.choices() if callable(self.choices) else self.choices)
            if val not in options:
                close = difflib.get_close_matches(str(val), options, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                c.fail(section, key, f"must be one of {', '.join(options)}; got {val!r}{hint}")
            return
        if self.high is not None:  # an interval such as [0, 1]
            lo_ok = val > self.low if self.open_low else val >= self.low
            hi_ok = val < self.high if self.open_high else val <= self.high
            if not (lo_ok and hi_ok):
                rng = (
                    f"{'(' if self.open_low else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.open_high else ']'}"
                )
                c.fail(section, key, f"must be in {rng}, got {val!r}")
        elif self.open_low and not val > self.low:
            c.fail(section, key, f"{self.note}must be > {self.low:g}, got {val!r}")
        elif not self.open_low and val < self.low:
            c.fail(section, key, f"{self.note}must be >= {self.low:g}, got {val!r}")


def at_least(low: float, **kw: Any) -> Rule:
    return Rule(low=low, **kw)


def above(low: float, **kw: Any) -> Rule:
    return Rule(low=low, open_low=True, **kw)


def unit(*, open_low: bool = False, open_high: bool = False, **kw: Any) -> Rule:
    return Rule(low=0, high=1, open_low=open_low, open_high=open_high, **kw)


def one_of(choices: tuple[str, ...] | Callable[[], tuple[str, ...]]) -> Rule:
    return Rule(choices=choices)


def _synthetic(v: dict) -> bool:
    return v["data"]["source"] == "synthetic"


def _clip_is_a_number(v: dict) -> bool:
    return v["targets"].get("clip") not in ("auto", "none")


def _jobs_is_a_number(v: dict) -> bool:
    return v["lambdamart"].get("n_jobs") != "auto"


#: The allowed values of every key with a range or a fixed set of names (section ""
#: is the top level). Keys of :data:`SCHEMA` not listed here are checked by type only,
#: or by the cross-key rules. Every ``seed`` is >= 0.
RULES: dict[str, dict[str, Rule]] = {
    "": {"seed": at_least(0)},
    "data": {
        "source": one_of(("synthetic", "letor")),
        "n_queries": at_least(2, when=_synthetic),
        "docs_per_query": at_least(2, when=_synthetic),
        "n_features": at_least(6, when=_synthetic),
        "noise": at_least(0, when=_synthetic),
    },
    "production": {
        "policy": one_of(POLICY_KINDS),
        "fraction": unit(open_low=True),
        "min_queries": at_least(1),
        "temperature": above(0),
    },
    "click_model": {
        "name": one_of(CLICK_MODELS),
        "relevance": one_of(RELEVANCE_MAPS),
        "curve": one_of(("power_law", "eye_tracking")),
        "eta": at_least(0, note="(position-bias severity) "),
        "eps": unit(),
    },
    "simulation": {"sessions": at_least(1), "top_k": at_least(1), "chunk_size": at_least(1)},
    "interventions": {k: unit() for k in INTERVENTION_FRACTIONS},
    "propensity": {"bootstrap": at_least(0), "alpha": unit(open_low=True, open_high=True)},
    "targets": {
        "candidates": one_of(CANDIDATE_SETS),
        "naive_kind": one_of(NAIVE_KINDS),
        "normalize": one_of(NORMALIZATIONS),
        "clip": unit(open_low=True, when=_clip_is_a_number),
    },
    "lambdamart": {
        "n_estimators": at_least(1),
        "min_data_in_leaf": at_least(1),
        "n_jobs": at_least(1, when=_jobs_is_a_number),
        "num_leaves": at_least(2),
        "truncation_level": at_least(0),
        "early_stopping_rounds": at_least(1),
        "folds": at_least(2),
        "validation": one_of(VALIDATION_ESTIMATES),
        "learning_rate": above(0),
    },
    "evaluation": {
        "empty": one_of(EMPTY_CONVENTIONS),
        "bootstrap": at_least(1),
        "permutations": at_least(1),
        "alpha": unit(open_low=True, open_high=True),
    },
    "interleaving": {"method": one_of(INTERLEAVING_METHODS), "impressions": at_least(1)},
    "click_fit": {
        "sessions": at_least(0),
        "test_fraction": unit(open_high=True),
        "shrinkage": at_least(0),
    },
}
for _section, _keys in SCHEMA.items():
    if _section and "seed" in _keys:
        RULES.setdefault(_section, {}).setdefault("seed", at_least(0))


def _file(cfg: _Checker, key: str, base_dir: Path) -> Path | None:
    raw = cfg.v["data"].get(key)
    if raw is None:
        return None
    if not raw:
        cfg.fail("data", key, "is empty; give a file path")
    p = Path(raw).expanduser()
    p = p if p.is_absolute() else base_dir / p
    kind = special_kind(p)
    if kind is not None:
        cfg.fail("data", key, f"is {kind}, not a regular file: {p}")
    if not p.is_file():
        cfg.fail("data", key, f"does not exist: {p}")
    return p.resolve()


# -- cross-key rules, one function per section ------------------------------------------------


def _data(c: _Checker, base_dir: Path) -> None:
    d = c.v["data"]
    synth_keys = ("n_queries", "docs_per_query", "n_features", "noise")
    file_keys = ("path", "test_path", "valid_path")
    if d["source"] == "synthetic":
        for k in file_keys:
            if d.get(k) is not None:
                c.fail("data", k, 'applies to source = "letor", not "synthetic"')
    else:
        for k in synth_keys:
            if c.given("data", k):
                c.fail("data", k, 'applies to source = "synthetic", not "letor"')
        if d.get("path") is None:
            c.fail("data", "path", 'is required with source = "letor" (the training file)')
        if d.get("valid_path") is not None and d.get("test_path") is None:
            c.fail(
                "data",
                "valid_path",
                "needs test_path (with test_path the files are not "
                "split; without it, split the data with train / valid / test)",
            )
        for k in file_keys:
            d[k] = None if d.get(k) is None else str(_file(c, k, base_dir))
    if d.get("test_path") is not None:
        for k in ("train", "valid", "test"):
            if c.given("data", k):
                c.fail(
                    "data",
                    k,
                    "splits the data only without test_path (with test_path "
                    "the files are the parts)",
                )
    else:
        _split(c, d)


def _split(c: _Checker, d: dict) -> None:
    """train / valid / test: all counts or all fractions, that the data can hold."""
    parts = {k: d[k] for k in ("train", "valid", "test")}
    for k, x in parts.items():
        if x < 0:
            c.fail("data", k, f"must be >= 0 (a count or a fraction), got {x!r}")
    for k in ("train", "test"):
        if parts[k] == 0:
            c.fail("data", k, "must be > 0: a count (>= 1) or a fraction in (0, 1)")
    used = [x for x in parts.values() if x > 0]
    counts = all(x >= 1 and float(x).is_integer() for x in used)
    fractions = all(x < 1 for x in used)
    if not (counts or fractions):
        c.fail(
            "data",
            None,
            "train, valid and test must all be counts (whole numbers "
            f">= 1) or all fractions (< 1); got {parts}",
        )
    if fractions and sum(used) > 1 + 1e-9:
        c.fail(
            "data",
            "test",
            f"fractions train + valid + test must sum to at most 1, got {sum(used):g}",
        )
    if counts and d["source"] == "synthetic" and sum(used) > d["n_queries"]:
        c.fail(
            "data",
            "test",
            f"train + valid + test = {sum(used):g} queries, but n_queries = {d['n_queries']}",
        )


def _click_model(c: _Checker, base_dir: Path) -> None:
    cm = c.v["click_model"]
    if c.given("click_model", "eta") and cm["name"] not in ETA_MODELS:
        c.fail("click_model", "eta", f"applies to {', '.join(ETA_MODELS)}, not {cm['name']}")
    if c.given("click_model", "curve") and cm["name"] not in CURVE_MODELS:
        c.fail("click_model", "curve", f"applies to {', '.join(CURVE_MODELS)}, not {cm['name']}")
    if cm.get("max_label") is not None:
        if cm["relevance"] != "graded" and cm["name"] not in ("dbn", "sdbn"):
            c.fail(
                "click_model",
                "max_label",
                'applies to relevance = "graded" (and to the satisfaction of dbn and sdbn)',
            )
        if cm["max_label"] <= 0:
            c.fail("click_model", "max_label", f"must be > 0, got {cm['max_label']!r}")
    if cm.get("threshold") is not None and cm["relevance"] != "binarized":
        c.fail("click_model", "threshold", 'applies to relevance = "binarized"')


def _simulation(c: _Checker, base_dir: Path) -> None:
    d, top_k = c.v["data"], c.v["simulation"]["top_k"]
    if d["source"] == "synthetic" and top_k > d["docs_per_query"]:
        c.fail(
            "simulation",
            "top_k",
            f"= {top_k} exceeds [data] docs_per_query = {d['docs_per_query']}",
        )


def _interventions(c: _Checker, base_dir: Path) -> None:
    iv, top_k = c.v["interventions"], c.v["simulation"]["top_k"]
    total = sum(iv[k] for k in INTERVENTION_FRACTIONS)
    if total > 1 + 1e-12:
        c.fail("interventions", None, f"fractions must sum to at most 1, got {total:g}")
    for k in ("swap_k", "randomize_k"):
        if iv.get(k) is not None and not 2 <= iv[k] <= top_k:
            c.fail("interventions", k, f"must be in 2..top_k = {top_k}, got {iv[k]}")
    _trial_click_model(c)


def _trial_click_model(c: _Checker) -> None:
    """Build the click model once: surfaces bad parameters (and eye-tracking K > 10) now."""
    from ..clickmodels import make_click_model
    from ..specs import click_model_params

    cm = c.v["click_model"]
    try:
        trial = make_click_model(cm["name"], **click_model_params(cm, (0.0, 4.0))[0])
        if hasattr(trial, "propensities"):
            trial.propensities(c.v["simulation"]["top_k"])
    except InputError as err:
        key = "params" if cm.get("params") else "name"
        c.fail("click_model", key, f"gives an invalid click model: {err}")


def _context(c: _Checker, base_dir: Path) -> None:
    """``[context]``: a column name, the values' shares (summing to 1), their curves and the
    queries' concentration around the shares."""
    from ..clicklog import LOG_SCHEMA

    ctx = c.v.get("context") or {}
    if ctx.get("column") is None:
        for key in ("shares", "eta", "concentration"):
            if ctx.get(key) is not None:
                c.fail("context", key, "needs [context] column (the context's name)")
        return
    if ctx["column"] in LOG_SCHEMA or not ctx["column"]:
        c.fail("context", "column", f"must not be a log column of its own, got {ctx['column']!r}")
    shares, eta = ctx.get("shares") or {}, ctx.get("eta") or {}
    if len(shares) < 2:
        c.fail("context", "shares", "must give at least two values their share of sessions")
    bad = [v for v, x in shares.items() if isinstance(x, bool) or not isinstance(x, (int, float))
           or not 0 < x <= 1]  # fmt: skip
    if bad:
        c.fail("context", "shares", f"must be numbers in (0, 1]; {bad[0]!r} is {shares[bad[0]]!r}")
    if abs(sum(shares.values()) - 1) > 1e-9:
        c.fail("context", "shares", f"must sum to 1, got {sum(shares.values()):g}")
    if set(eta) != set(shares):
        c.fail("context", "eta", f"must give each value of shares its η: {sorted(shares)}")
    bad = [v for v, x in eta.items() if isinstance(x, bool) or not isinstance(x, (int, float))
           or x < 0]  # fmt: skip
    if bad:
        c.fail("context", "eta", f"must be numbers >= 0; {bad[0]!r} is {eta[bad[0]]!r}")
    if c.v["click_model"]["name"] not in ETA_MODELS:
        c.fail("context", "eta", f"applies to [click_model] {', '.join(ETA_MODELS)}, not "
               f"{c.v['click_model']['name']}")  # fmt: skip
    kappa = ctx.get("concentration")
    if kappa is not None and not kappa > 0:
        c.fail("context", "concentration", f"must be a number > 0, got {kappa!r}")


def _unique(c: _Checker, section: str, key: str) -> None:
    names = c.v[section][key]
    if len(set(names)) != len(names):
        c.fail(section, key, f"has duplicates: {names}")


def _known(
    c: _Checker, section: str, key: str, name: str, options: tuple, what: str, extra: str = ""
) -> None:
    """``name`` must be one of ``options`` (with a difflib suggestion)."""
    if name not in options:
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        c.fail(
            section, key, f"has unknown {what} {name!r} (valid: {', '.join(options)}{extra}){hint}"
        )


def _propensity(c: _Checker, base_dir: Path) -> None:
    p, iv = c.v["propensity"], c.v["interventions"]
    _unique(c, "propensity", "methods")
    for m in p["methods"]:
        _known(c, "propensity", "methods", m, PROPENSITY_METHODS, "method")
        need = PROPENSITY_DESIGN.get(m)
        if need is not None and iv[need] <= 0:
            c.fail("propensity", "methods", f"method {m!r} needs [interventions] {need} > 0")
    if p.get("use") is not None and p["use"] not in p["methods"]:
        c.fail("propensity", "use", f"must be one of methods {p['methods']}, got {p['use']!r}")


def _targets(c: _Checker, base_dir: Path) -> None:
    t, iv = c.v["targets"], c.v["interventions"]
    if not t["names"]:
        c.fail("targets", "names", "is empty; give at least one target")
    for name in t["names"]:
        if not name.startswith("pairs:"):
            _known(c, "targets", "names", name, TARGETS, "target", ", or pairs:<strategy>")
            continue
        from ..targets import parse_strategy

        try:
            rules = parse_strategy(name[len("pairs:") :])
        except InputError as err:
            c.fail("targets", "names", f"has a bad target {name!r}: {err}")
        if "fairpairs" in rules and iv["fairpairs_fraction"] <= 0:
            c.fail(
                "targets", "names", f"target {name!r} needs [interventions] fairpairs_fraction > 0"
            )
    _unique(c, "targets", "names")
    if set(NEEDS_THETA) & set(t["names"]) and not c.v["propensity"]["methods"]:
        c.fail("propensity", "methods", "is empty, but the ips targets need an estimate")


def _lambdamart(c: _Checker, base_dir: Path) -> None:
    lm, d = c.v["lambdamart"], c.v["data"]
    if not lm["grid"]:
        c.fail("lambdamart", "grid", "is empty; give at least one tree shape")
    for entry in lm["grid"]:
        bad = set(entry) - {"num_leaves", "max_depth", "min_data_in_leaf", "lambda_l2"}
        if bad:
            c.fail(
                "lambdamart",
                "grid",
                "entries may set num_leaves, max_depth, "
                f"min_data_in_leaf and lambda_l2, not {sorted(bad)}",
            )
    try:
        if lm["n_jobs"] != "auto":
            check_jobs(lm["n_jobs"], name="n_jobs")
    except InputError as err:
        c.fail("lambdamart", "n_jobs", str(err).removeprefix("n_jobs "))
    if lm["max_depth"] == 0 or lm["max_depth"] < -1:
        c.fail("lambdamart", "max_depth", f"must be -1 (no limit) or >= 1, got {lm['max_depth']}")
    has_valid = d.get("valid_path") is not None or (d.get("test_path") is None and d["valid"] > 0)
    if lm.get("early_stopping_rounds") is not None and not has_valid and not lm["select"]:
        c.fail(
            "lambdamart",
            "early_stopping_rounds",
            "needs validation queries (set [data] valid > 0 or valid_path) or select = true",
        )


def _evaluation(c: _Checker, base_dir: Path) -> None:
    from ..metrics import get_metric

    if not c.v["evaluation"]["metrics"]:
        c.fail("evaluation", "metrics", 'is empty; give at least one metric such as "ndcg@10"')
    for m in c.v["evaluation"]["metrics"]:
        try:
            get_metric(m)
        except ClickRankError as err:
            c.fail("evaluation", "metrics", f"has a bad metric {m!r}: {err}")
    _pairs_of_rankers(c, "evaluation", "compare")


def _pairs_of_rankers(c: _Checker, section: str, key: str) -> None:
    names = c.v["targets"]["names"]
    for a, b in c.v[section][key]:
        for r in (a, b):
            if r not in (PRODUCTION, *names):
                c.fail(
                    section,
                    key,
                    f"names {r!r}, which is not a ranker of this run "
                    f"(production or [targets] names: {', '.join(names)})",
                )
        if a == b:
            c.fail(section, key, f"compares {a!r} with itself")


def _interleaving(c: _Checker, base_dir: Path) -> None:
    _pairs_of_rankers(c, "interleaving", "pairs")


def _click_fit(c: _Checker, base_dir: Path) -> None:
    from ..clickmodels.fitting import FIT_MODELS

    for name in c.v["click_fit"]["models"]:
        if name not in FIT_MODELS:
            c.fail("click_fit", "models", f"has {name!r}; choose from {', '.join(FIT_MODELS)}")


def _learning_curve(c: _Checker, base_dir: Path) -> None:
    lc, names = c.v["learning_curve"], c.v["targets"]["names"]
    for n in lc["sessions"]:
        if n < 1:
            c.fail("learning_curve", "sessions", f"must hold session counts >= 1, got {n}")
    for name in lc["targets"]:
        if name not in names or name == "oracle":
            c.fail(
                "learning_curve",
                "targets",
                f"has {name!r}; it must be one of the click-based [targets] names",
            )


#: Cross-key rules per section, run after that section's :data:`RULES`.
_CROSS: dict[str, Callable[[_Checker, Path], None]] = {
    "data": _data,
    "click_model": _click_model,
    "simulation": _simulation,
    "interventions": _interventions,
    "context": _context,
    "propensity": _propensity,
    "targets": _targets,
    "lambdamart": _lambdamart,
    "evaluation": _evaluation,
    "interleaving": _interleaving,
    "click_fit": _click_fit,
    "learning_curve": _learning_curve,
}


#: The order sections are checked in (``[interventions]`` reads ``[simulation] top_k``).
_ORDER = ("", "data", "production", "click_model", "simulation", "interventions",
          *(s for s in SCHEMA if s not in ("", "data", "production", "click_model",
                                            "simulation", "interventions")))  # fmt: skip


def _check_values(c: _Checker, base_dir: Path) -> None:
    """Ranges and cross-key rules on the merged values (in place: data paths made absolute).

    Sections are checked in :data:`_ORDER` (a section's rules may read the
    sections before it): first each key's :data:`RULES`, then the section's
    cross-key rules.
    """
    for section in _ORDER:
        for key, rule in RULES.get(section, {}).items():
            rule.check(c, section, key)
        if section in _CROSS:
            _CROSS[section](c, base_dir)
