"""Value checks on a merged run configuration: ranges and cross-key rules.

Every error is one :class:`~clickrank.ConfigError` line naming ``[section] key``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._validation import ClickRankError, ConfigError, InputError
from ..specs._names import CLICK_MODELS as _CLICK_MODELS
from ..specs._names import CURVE_MODELS as _CURVE_MODELS
from ..specs._names import ETA_MODELS as _ETA_MODELS
from ..specs._names import INTERVENTION_FRACTIONS as _FRACTIONS
from ..specs._names import NEEDS_THETA
from ..specs._names import POLICY_KINDS as _POLICIES
from ..specs._names import PROPENSITY_DESIGN as _PROPENSITY_DESIGN
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

    def at_least(self, section: str, key: str, low: float, *, optional: bool = False) -> None:
        val = self.v[section].get(key)
        if val is None and optional:
            return
        if val < low:
            self.fail(section, key, f"must be >= {low:g}, got {val!r}")

    def unit(
        self,
        section: str,
        key: str,
        *,
        open_low: bool = False,
        optional: bool = False,
        open_high: bool = False,
    ) -> None:
        val = self.v[section].get(key)
        if val is None and optional:
            return
        lo_ok = val > 0 if open_low else val >= 0
        hi_ok = val < 1 if open_high else val <= 1
        if not (lo_ok and hi_ok):
            rng = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
            self.fail(section, key, f"must be in {rng}, got {val!r}")

    def choice(self, section: str, key: str, options: tuple[str, ...]) -> None:
        val = self.v[section].get(key)
        if val is not None and val not in options:
            close = difflib.get_close_matches(str(val), options, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.fail(section, key, f"must be one of {', '.join(options)}; got {val!r}{hint}")


def _file(cfg: _Checker, key: str, base_dir: Path) -> Path | None:
    raw = cfg.v["data"].get(key)
    if raw is None:
        return None
    if not raw:
        cfg.fail("data", key, "is empty; give a file path")
    p = Path(raw).expanduser()
    p = p if p.is_absolute() else base_dir / p
    if not p.is_file():
        cfg.fail("data", key, f"does not exist: {p}")
    return p.resolve()


def _check_values(c: _Checker, base_dir: Path) -> None:
    """Ranges and cross-key rules on the merged values (in place: data paths made absolute)."""
    v = c.v
    if v["seed"] < 0:
        c.fail("", "seed", f"must be >= 0, got {v['seed']}")
    for section, keys in SCHEMA.items():
        if (
            section
            and "seed" in keys
            and v[section].get("seed") is not None
            and v[section]["seed"] < 0
        ):
            c.fail(section, "seed", f"must be >= 0, got {v[section]['seed']}")

    # data
    d = v["data"]
    c.choice("data", "source", ("synthetic", "letor"))
    synth_keys = ("n_queries", "docs_per_query", "n_features", "noise")
    file_keys = ("path", "test_path", "valid_path")
    if d["source"] == "synthetic":
        for k in file_keys:
            if d.get(k) is not None:
                c.fail("data", k, 'applies to source = "letor", not "synthetic"')
        c.at_least("data", "n_queries", 2)
        c.at_least("data", "docs_per_query", 2)
        c.at_least("data", "n_features", 6)
        c.at_least("data", "noise", 0)
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
                    "splits the data only without test_path (with test_path the "
                    "files are the parts)",
                )
    else:
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
                f"train, valid and test must all be counts (whole numbers "
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

    # production
    c.choice("production", "policy", _POLICIES)
    c.unit("production", "fraction", open_low=True)
    c.at_least("production", "min_queries", 1)
    if v["production"]["temperature"] <= 0:
        c.fail("production", "temperature", f"must be > 0, got {v['production']['temperature']}")

    # click model
    cm = v["click_model"]
    c.choice("click_model", "name", _CLICK_MODELS)
    c.choice("click_model", "relevance", ("graded", "binarized"))
    c.choice("click_model", "curve", ("power_law", "eye_tracking"))
    if cm["eta"] < 0:
        c.fail("click_model", "eta", f"(position-bias severity) must be >= 0, got {cm['eta']!r}")
    c.unit("click_model", "eps")
    if c.given("click_model", "eta") and cm["name"] not in _ETA_MODELS:
        c.fail("click_model", "eta", f"applies to {', '.join(_ETA_MODELS)}, not {cm['name']}")
    if c.given("click_model", "curve") and cm["name"] not in _CURVE_MODELS:
        c.fail("click_model", "curve", f"applies to {', '.join(_CURVE_MODELS)}, not {cm['name']}")
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

    # simulation and interventions
    c.at_least("simulation", "sessions", 1)
    c.at_least("simulation", "top_k", 1)
    c.at_least("simulation", "chunk_size", 1)
    top_k = v["simulation"]["top_k"]
    if d["source"] == "synthetic" and top_k > d["docs_per_query"]:
        c.fail(
            "simulation",
            "top_k",
            f"= {top_k} exceeds [data] docs_per_query = {d['docs_per_query']}",
        )
    iv = v["interventions"]
    for k in _FRACTIONS:
        c.unit("interventions", k)
    total = sum(iv[k] for k in _FRACTIONS)
    if total > 1 + 1e-12:
        c.fail("interventions", None, f"fractions must sum to at most 1, got {total:g}")
    for k in ("swap_k", "randomize_k"):
        if iv.get(k) is not None and not 2 <= iv[k] <= top_k:
            c.fail("interventions", k, f"must be in 2..top_k = {top_k}, got {iv[k]}")

    # trial click model: surfaces bad model parameters (and eye-tracking K > 10) now
    from ..clickmodels import make_click_model
    from ..specs import click_model_params

    try:
        trial = make_click_model(cm["name"], **click_model_params(cm, (0.0, 4.0))[0])
        if hasattr(trial, "propensities"):
            trial.propensities(top_k)
    except InputError as err:
        key = "params" if cm.get("params") else "name"
        c.fail("click_model", key, f"gives an invalid click model: {err}")

    # propensities
    p = v["propensity"]
    from ..propensity import METHODS

    if len(set(p["methods"])) != len(p["methods"]):
        c.fail("propensity", "methods", f"has duplicates: {p['methods']}")
    for m in p["methods"]:
        if m not in METHODS:
            close = difflib.get_close_matches(m, METHODS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            c.fail(
                "propensity",
                "methods",
                f"has unknown method {m!r} (valid: {', '.join(METHODS)}){hint}",
            )
        need = _PROPENSITY_DESIGN.get(m)
        if need is not None and iv[need] <= 0:
            c.fail("propensity", "methods", f"method {m!r} needs [interventions] {need} > 0")
    c.at_least("propensity", "bootstrap", 0)
    c.unit("propensity", "alpha", open_low=True, open_high=True)
    if p.get("use") is not None and p["use"] not in p["methods"]:
        c.fail("propensity", "use", f"must be one of methods {p['methods']}, got {p['use']!r}")

    # targets
    t = v["targets"]
    if not t["names"]:
        c.fail("targets", "names", "is empty; give at least one target")
    for name in t["names"]:
        if name.startswith("pairs:"):
            from ..targets import parse_strategy

            try:
                rules = parse_strategy(name[len("pairs:") :])
            except InputError as err:
                c.fail("targets", "names", f"has a bad target {name!r}: {err}")
            if "fairpairs" in rules and iv["fairpairs_fraction"] <= 0:
                c.fail(
                    "targets",
                    "names",
                    f"target {name!r} needs [interventions] fairpairs_fraction > 0",
                )
            continue
        if name not in TARGETS:
            close = difflib.get_close_matches(name, TARGETS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            c.fail(
                "targets",
                "names",
                f"has unknown target {name!r} (valid: "
                f"{', '.join(TARGETS)}, or pairs:<strategy>){hint}",
            )
    if len(set(t["names"])) != len(t["names"]):
        c.fail("targets", "names", f"has duplicates: {t['names']}")
    if set(NEEDS_THETA) & set(t["names"]) and not p["methods"]:
        c.fail("propensity", "methods", "is empty, but the ips targets need an estimate")
    from ..targets import CANDIDATE_SETS, NORMALIZATIONS

    c.choice("targets", "candidates", CANDIDATE_SETS)
    c.choice("targets", "naive_kind", ("clicks", "ctr"))
    c.choice("targets", "normalize", NORMALIZATIONS)
    if t.get("clip") not in (None, "auto", "none"):
        c.unit("targets", "clip", open_low=True, optional=True)

    # lambdamart
    lm = v["lambdamart"]
    for k in ("n_estimators", "min_data_in_leaf", "n_jobs"):
        c.at_least("lambdamart", k, 1)
    c.at_least("lambdamart", "num_leaves", 2)
    c.at_least("lambdamart", "truncation_level", 0)
    c.at_least("lambdamart", "early_stopping_rounds", 1, optional=True)
    c.at_least("lambdamart", "folds", 2)
    c.choice("lambdamart", "validation", ("ips", "dr", "clicks"))
    if not lm["grid"]:
        c.fail("lambdamart", "grid", "is empty; give at least one tree shape")
    for entry in lm["grid"]:
        bad = set(entry) - {"num_leaves", "max_depth", "min_data_in_leaf", "lambda_l2"}
        if bad:
            c.fail(
                "lambdamart",
                "grid",
                f"entries may set num_leaves, max_depth, "
                f"min_data_in_leaf and lambda_l2, not {sorted(bad)}",
            )
    if lm["learning_rate"] <= 0:
        c.fail("lambdamart", "learning_rate", f"must be > 0, got {lm['learning_rate']}")
    if lm["max_depth"] == 0 or lm["max_depth"] < -1:
        c.fail("lambdamart", "max_depth", f"must be -1 (no limit) or >= 1, got {lm['max_depth']}")
    has_valid = d.get("valid_path") is not None or (d.get("test_path") is None and d["valid"] > 0)
    if lm.get("early_stopping_rounds") is not None and not has_valid and not lm["select"]:
        c.fail(
            "lambdamart",
            "early_stopping_rounds",
            "needs validation queries (set [data] valid > 0 or valid_path) or select = true",
        )

    # evaluation
    e = v["evaluation"]
    from ..metrics import get_metric

    if not e["metrics"]:
        c.fail("evaluation", "metrics", 'is empty; give at least one metric such as "ndcg@10"')
    for m in e["metrics"]:
        try:
            get_metric(m)
        except ClickRankError as err:
            c.fail("evaluation", "metrics", f"has a bad metric {m!r}: {err}")
    c.choice("evaluation", "empty", ("skip", "zero", "one"))
    c.at_least("evaluation", "bootstrap", 1)
    c.at_least("evaluation", "permutations", 1)
    c.unit("evaluation", "alpha", open_low=True, open_high=True)
    rankers = (PRODUCTION, *t["names"])
    for section, key in (("evaluation", "compare"), ("interleaving", "pairs")):
        for a, b in v[section][key]:
            for r in (a, b):
                if r not in rankers:
                    c.fail(
                        section,
                        key,
                        f"names {r!r}, which is not a ranker of this run "
                        f"(production or [targets] names: {', '.join(t['names'])})",
                    )
            if a == b:
                c.fail(section, key, f"compares {a!r} with itself")

    # interleaving
    from ..interleaving import METHODS as IL_METHODS

    c.choice("interleaving", "method", tuple(IL_METHODS))
    c.at_least("interleaving", "impressions", 1)

    # click-model fit
    from ..clickmodels.fitting import FIT_MODELS

    for name in v["click_fit"]["models"]:
        if name not in FIT_MODELS:
            c.fail("click_fit", "models", f"has {name!r}; choose from {', '.join(FIT_MODELS)}")
    c.at_least("click_fit", "sessions", 0)
    c.unit("click_fit", "test_fraction", open_high=True)
    c.at_least("click_fit", "shrinkage", 0)

    # learning curve
    lc = v["learning_curve"]
    for n in lc["sessions"]:
        if n < 1:
            c.fail("learning_curve", "sessions", f"must hold session counts >= 1, got {n}")
    for name in lc["targets"]:
        if name not in t["names"] or name == "oracle":
            c.fail(
                "learning_curve",
                "targets",
                f"has {name!r}; it must be one of the click-based [targets] names",
            )
