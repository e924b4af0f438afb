r"""One command from data to a bias-analysis report: run configs and the staged experiment.

A run is described by a TOML file (:func:`load_config`). The embedded default
(``clickrank/configs/default.toml``, :func:`default_config_text`) holds every
default; a user file overrides only the keys it sets. The configuration is
validated completely, with one-line :class:`~clickrank.ConfigError` messages
naming the section and key, *before* anything is written.

:func:`run_experiment` then runs the stages of DESIGN §1, each a call into the
library::

    data -> production -> simulate -> propensity -> train -> evaluate
         -> interleaving -> learning_curve -> figures -> report

and writes a results folder::

    results/NAME/
      config.toml            the effective configuration (rerun it with `clickrank run`)
      manifest.json          stage -> hash of its inputs, files written, seconds
      data/split.json        query ids of the train / valid / test parts
      production/            logging-ranker scores (train, test) and meta.json
      log.parquet            the simulated click log (DESIGN §2 schema)
      log_stats.json         CTR per position, label means, skip-above pair counts
      propensities/          <method>.json (Propensities.save), truth.json
      models/<target>/       LambdaMART.save (model.txt, meta.json); targets.json
      evaluation.json        metrics with CIs, paired tests (+ per-query values)
      interleaving.json      interleaving (and A/B) results
      learning_curve.json    headline metric vs log prefix
      figures/*.png          the bias-analysis figures (clickrank.plots)
      report.md, summary.json

Reruns
------
Every stage's inputs (its configuration sections, resolved seeds, the hash of
the stage before it and the clickrank version) are hashed. When the hash in
``manifest.json`` matches and the stage's files exist, the stage is loaded
instead of recomputed; ``force=True`` recomputes everything. Seeds are derived
from the master ``seed`` with :class:`numpy.random.SeedSequence`, so a rerun with
the same configuration gives the same numbers (``summary.json`` is identical
apart from its ``timings``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import shutil
import sys
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_write, atomic_write_json, atomic_write_text
from ._validation import ClickRankError, ConfigError, InputError
from ._version import __version__

__all__ = [
    "ExperimentConfig",
    "ExperimentResult",
    "load_config",
    "default_config_text",
    "run_experiment",
    "SCHEMA",
    "STAGES",
    "TARGETS",
    "dumps_toml",
]

# -- the schema ---------------------------------------------------------------------------

#: Allowed keys per section ("" = top level) and their kinds. Defaults live in
#: ``configs/default.toml``; keys absent there are optional (no default).
SCHEMA: dict[str, dict[str, str]] = {
    "": {"seed": "int"},
    "data": {
        "source": "str", "n_queries": "int", "docs_per_query": "int", "n_features": "int",
        "noise": "number", "path": "str", "test_path": "str", "valid_path": "str",
        "train": "number", "valid": "number", "test": "number", "seed": "int",
    },
    "production": {"policy": "str", "fraction": "number", "temperature": "number", "seed": "int"},
    "click_model": {
        "name": "str", "eta": "number", "curve": "str", "relevance": "str", "eps": "number",
        "max_label": "number", "threshold": "number", "params": "table",
    },
    "interventions": {
        "swap_fraction": "number", "randpair_fraction": "number", "randomize_fraction": "number",
        "fairpairs_fraction": "number", "swap_k": "int", "randomize_k": "int",
    },
    "simulation": {"sessions": "int", "top_k": "int", "chunk_size": "int", "seed": "int"},
    "propensity": {
        "methods": "strs", "bootstrap": "int", "alpha": "number", "use": "str", "seed": "int",
    },
    "targets": {"names": "strs", "candidates": "str", "naive_kind": "str", "clip": "number"},
    "lambdamart": {
        "n_estimators": "int", "learning_rate": "number", "num_leaves": "int", "max_depth": "int",
        "min_data_in_leaf": "int", "truncation_level": "int", "n_jobs": "int",
        "early_stopping_rounds": "int", "seed": "int",
    },
    "evaluation": {
        "metrics": "strs", "empty": "str", "bootstrap": "int", "alpha": "number",
        "permutations": "int", "compare": "pairs", "seed": "int",
    },
    "interleaving": {
        "pairs": "pairs", "method": "str", "impressions": "int", "ab": "bool", "seed": "int",
    },
    "learning_curve": {"sessions": "ints", "targets": "strs"},
    "report": {"figures": "bool"},
}

#: Training targets a run can fit (clickrank.targets builders); besides these,
#: ``"pairs:<strategy>"`` fits the preferences of ``clickrank.targets.click_preferences``
#: (e.g. ``"pairs:fairpairs"``, ``"pairs:skip-above+skip-next"``).
TARGETS = ("naive", "ips", "ips-true", "skip-above", "skip-above-ips", "oracle")
_FRACTIONS = ("swap_fraction", "randpair_fraction", "randomize_fraction", "fairpairs_fraction")
#: The logging ranker, evaluated next to the trained ones.
PRODUCTION = "production"
#: Stages in run order.
STAGES = ("data", "production", "simulate", "propensity", "train", "evaluate", "interleaving",
          "learning_curve", "figures", "report")

_POLICIES = ("production", "plackett-luce", "oracle", "random")
_CLICK_MODELS = ("pbm", "trust", "cascade", "dcm", "dbn", "sdbn", "ubm")
_ETA_MODELS = ("pbm", "trust", "ubm")
_CURVE_MODELS = ("pbm", "trust")
_PROPENSITY_DESIGN = {"swap": "swap_fraction", "randpair": "randpair_fraction",
                      "randomized": "randomize_fraction"}
# spawn keys of the stage seeds derived from the master seed (fixed: do not reorder)
_SEED_KEYS = {"data": 0, "production": 1, "simulation": 2, "propensity": 3, "lambdamart": 4,
              "evaluation": 5, "interleaving": 6}
_KIND_NAMES = {"int": "an integer", "number": "a number", "str": "a string",
               "bool": "true or false", "strs": "a list of strings", "ints": "a list of integers",
               "pairs": 'a list of pairs such as [["ips", "naive"]]', "table": "a table"}


def default_config_text() -> str:
    """The embedded default configuration (``clickrank/configs/default.toml``), with comments."""
    return resources.files("clickrank").joinpath("configs/default.toml").read_text("utf-8")


def _where(section: str, key: str | None = None) -> str:
    if not section:
        return str(key)
    return f"[{section}]" if key is None else f"[{section}] {key}"


def _suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(options)}"


def _type_ok(value: Any, kind: str) -> bool:
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if kind == "int":
        return is_int(value)
    if kind == "number":
        return (is_int(value) or isinstance(value, float)) and math.isfinite(value)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "ints":
        return isinstance(value, list) and all(is_int(v) for v in value)
    if kind == "pairs":
        return isinstance(value, list) and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(v, str) for v in p)
            for p in value)
    if kind == "table":
        return isinstance(value, dict)
    raise AssertionError(kind)


def _check_keys(raw: Mapping[str, Any], origin: str) -> None:
    """Unknown sections / keys (with a difflib suggestion) and wrong types, one line each."""
    sections = [s for s in SCHEMA if s]
    for name, value in raw.items():
        if name in SCHEMA[""]:
            if not _type_ok(value, SCHEMA[""][name]):
                raise ConfigError(f"{origin}: {name} must be {_KIND_NAMES[SCHEMA[''][name]]}, "
                                  f"got {value!r}")
            continue
        if name not in SCHEMA or not name:
            options = sections + list(SCHEMA[""])
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
            hint = (f"; did you mean [{close[0]}]?" if close and close[0] in sections
                    else f"; did you mean {close[0]!r}?" if close
                    else f"; valid sections: {', '.join(sections)}")
            raise ConfigError(f"{origin}: unknown section or key {name!r}{hint}")
        if not isinstance(value, dict):
            raise ConfigError(f"{origin}: [{name}] must be a table (a [{name}] section), "
                              f"got {value!r}")
        schema = SCHEMA[name]
        for key, v in value.items():
            if key not in schema:
                raise ConfigError(f"{origin}: unknown key {key!r} in [{name}]"
                                  f"{_suggest(key, list(schema))}")
            if not _type_ok(v, schema[key]):
                raise ConfigError(f"{origin}: {_where(name, key)} must be "
                                  f"{_KIND_NAMES[schema[key]]}, got {v!r}")


def _merge(base: dict, user: Mapping[str, Any]) -> dict:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for k, v in user.items():
        if isinstance(v, dict) and k in SCHEMA and k:
            out.setdefault(k, {}).update(v)
        else:
            out[k] = v
    return out


# -- value checks ---------------------------------------------------------------------------


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

    def unit(self, section: str, key: str, *, open_low: bool = False, optional: bool = False,
             open_high: bool = False) -> None:
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
        if section and "seed" in keys and v[section].get("seed") is not None \
                and v[section]["seed"] < 0:
            c.fail(section, "seed", f"must be >= 0, got {v[section]['seed']}")

    # data
    d = v["data"]
    c.choice("data", "source", ("synthetic", "letor"))
    synth_keys = ("n_queries", "docs_per_query", "n_features", "noise")
    file_keys = ("path", "test_path", "valid_path")
    if d["source"] == "synthetic":
        for k in file_keys:
            if d.get(k) is not None:
                c.fail("data", k, "applies to source = \"letor\", not \"synthetic\"")
        c.at_least("data", "n_queries", 2)
        c.at_least("data", "docs_per_query", 2)
        c.at_least("data", "n_features", 6)
        c.at_least("data", "noise", 0)
    else:
        for k in synth_keys:
            if c.given("data", k):
                c.fail("data", k, "applies to source = \"synthetic\", not \"letor\"")
        if d.get("path") is None:
            c.fail("data", "path", "is required with source = \"letor\" (the training file)")
        if d.get("valid_path") is not None and d.get("test_path") is None:
            c.fail("data", "valid_path", "needs test_path (with test_path the files are not "
                   "split; without it, split the data with train / valid / test)")
        for k in file_keys:
            d[k] = None if d.get(k) is None else str(_file(c, k, base_dir))
    if d.get("test_path") is not None:
        for k in ("train", "valid", "test"):
            if c.given("data", k):
                c.fail("data", k, "splits the data only without test_path (with test_path the "
                       "files are the parts)")
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
            c.fail("data", None, f"train, valid and test must all be counts (whole numbers "
                   f">= 1) or all fractions (< 1); got {parts}")
        if fractions and sum(used) > 1 + 1e-9:
            c.fail("data", "test", f"fractions train + valid + test must sum to at most 1, "
                   f"got {sum(used):g}")
        if counts and d["source"] == "synthetic" and sum(used) > d["n_queries"]:
            c.fail("data", "test", f"train + valid + test = {sum(used):g} queries, but "
                   f"n_queries = {d['n_queries']}")

    # production
    c.choice("production", "policy", _POLICIES)
    c.unit("production", "fraction", open_low=True)
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
        if cm["relevance"] != "graded":
            c.fail("click_model", "max_label", "applies to relevance = \"graded\"")
        if cm["max_label"] <= 0:
            c.fail("click_model", "max_label", f"must be > 0, got {cm['max_label']!r}")
    if cm.get("threshold") is not None and cm["relevance"] != "binarized":
        c.fail("click_model", "threshold", "applies to relevance = \"binarized\"")

    # simulation and interventions
    c.at_least("simulation", "sessions", 1)
    c.at_least("simulation", "top_k", 1)
    c.at_least("simulation", "chunk_size", 1)
    top_k = v["simulation"]["top_k"]
    if d["source"] == "synthetic" and top_k > d["docs_per_query"]:
        c.fail("simulation", "top_k", f"= {top_k} exceeds [data] docs_per_query = "
               f"{d['docs_per_query']}")
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
    from .clickmodels import make_click_model

    try:
        trial = make_click_model(cm["name"], **_click_model_params(cm, 4.0))
        if hasattr(trial, "propensities"):
            trial.propensities(top_k)
    except InputError as err:
        key = "params" if cm.get("params") else "name"
        c.fail("click_model", key, f"gives an invalid click model: {err}")

    # propensities
    p = v["propensity"]
    from .propensity import METHODS

    if len(set(p["methods"])) != len(p["methods"]):
        c.fail("propensity", "methods", f"has duplicates: {p['methods']}")
    for m in p["methods"]:
        if m not in METHODS:
            close = difflib.get_close_matches(m, METHODS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            c.fail("propensity", "methods", f"has unknown method {m!r} (valid: "
                   f"{', '.join(METHODS)}){hint}")
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
            from .targets import parse_strategy

            try:
                rules = parse_strategy(name[len("pairs:"):])
            except InputError as err:
                c.fail("targets", "names", f"has a bad target {name!r}: {err}")
            if "fairpairs" in rules and iv["fairpairs_fraction"] <= 0:
                c.fail("targets", "names", f"target {name!r} needs [interventions] "
                       "fairpairs_fraction > 0")
            continue
        if name not in TARGETS:
            close = difflib.get_close_matches(name, TARGETS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            c.fail("targets", "names", f"has unknown target {name!r} (valid: "
                   f"{', '.join(TARGETS)}, or pairs:<strategy>){hint}")
    if len(set(t["names"])) != len(t["names"]):
        c.fail("targets", "names", f"has duplicates: {t['names']}")
    if {"ips", "skip-above-ips"} & set(t["names"]) and not p["methods"]:
        c.fail("propensity", "methods", "is empty, but the ips targets need an estimate")
    c.choice("targets", "candidates", ("shown", "all"))
    c.choice("targets", "naive_kind", ("clicks", "ctr"))
    c.unit("targets", "clip", open_low=True, optional=True)

    # lambdamart
    lm = v["lambdamart"]
    for k in ("n_estimators", "min_data_in_leaf", "n_jobs"):
        c.at_least("lambdamart", k, 1)
    c.at_least("lambdamart", "num_leaves", 2)
    c.at_least("lambdamart", "truncation_level", 0)
    c.at_least("lambdamart", "early_stopping_rounds", 1, optional=True)
    if lm["learning_rate"] <= 0:
        c.fail("lambdamart", "learning_rate", f"must be > 0, got {lm['learning_rate']}")
    if lm["max_depth"] == 0 or lm["max_depth"] < -1:
        c.fail("lambdamart", "max_depth", f"must be -1 (no limit) or >= 1, got {lm['max_depth']}")
    has_valid = d.get("valid_path") is not None or (d.get("test_path") is None and d["valid"] > 0)
    if lm.get("early_stopping_rounds") is not None and not has_valid:
        c.fail("lambdamart", "early_stopping_rounds", "needs validation queries: set [data] "
               "valid > 0 (or valid_path)")

    # evaluation
    e = v["evaluation"]
    from .metrics import get_metric

    if not e["metrics"]:
        c.fail("evaluation", "metrics", "is empty; give at least one metric such as \"ndcg@10\"")
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
                    c.fail(section, key, f"names {r!r}, which is not a ranker of this run "
                           f"(production or [targets] names: {', '.join(t['names'])})")
            if a == b:
                c.fail(section, key, f"compares {a!r} with itself")

    # interleaving
    from .interleaving import METHODS as IL_METHODS

    c.choice("interleaving", "method", tuple(IL_METHODS))
    c.at_least("interleaving", "impressions", 1)

    # learning curve
    lc = v["learning_curve"]
    for n in lc["sessions"]:
        if n < 1:
            c.fail("learning_curve", "sessions", f"must hold session counts >= 1, got {n}")
    for name in lc["targets"]:
        if name not in t["names"] or name == "oracle":
            c.fail("learning_curve", "targets", f"has {name!r}; it must be one of the "
                   "click-based [targets] names")


def _click_model_params(cm: Mapping[str, Any], y_max: float) -> dict[str, Any]:
    """Parameters of :func:`clickrank.clickmodels.make_click_model` from ``[click_model]``."""
    name = cm["name"]
    if cm["relevance"] == "graded":
        top = cm.get("max_label")
        rel = {"kind": "graded", "eps": cm["eps"],
               "max_label": float(top) if top is not None else max(float(y_max), 1.0)}
    else:
        thr = cm.get("threshold")
        rel = {"kind": "binarized", "eps_minus": cm["eps"],
               "threshold": float(thr) if thr is not None else max(1.0, float(y_max) - 1.0)}
    params: dict[str, Any] = {"relevance" if name == "trust" else "attractiveness": rel}
    if name in _ETA_MODELS:
        params["eta"] = cm["eta"]
    if name in _CURVE_MODELS:
        params["curve"] = cm["curve"]
    params.update(cm.get("params") or {})
    return params


# -- the configuration object ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ExperimentConfig:
    """A validated run configuration (defaults merged with the user's keys).

    Use :func:`load_config` to build one. ``values`` maps each section name to
    a dict of keys (``values["seed"]`` is the master seed); data paths are
    absolute. Treat it as read-only.

    Attributes
    ----------
    values : dict
    origin : str
        Where it came from (a file path, ``"<default>"`` or ``"<dict>"``).
    """

    values: dict
    origin: str = "<default>"

    def __getitem__(self, section: str) -> Any:
        return self.values[section]

    def to_dict(self) -> dict:
        """A deep copy of the values (JSON- and TOML-ready)."""
        return json.loads(json.dumps(self.values))

    def to_toml(self) -> str:
        """The effective configuration as TOML (readable by :func:`load_config`)."""
        return dumps_toml(self.values)

    def seed(self, section: str) -> int:
        """Seed of a stage: the section's own ``seed``, else derived from the master seed."""
        own = self.values.get(section, {}).get("seed")
        if own is not None:
            return int(own)
        return _derive(self.values["seed"], _SEED_KEYS[section])

    def section_key(self, *sections: str) -> dict:
        """The named sections with their resolved seeds (input of the stage hashes)."""
        out = {}
        for s in sections:
            sec = dict(self.values[s])
            if s in _SEED_KEYS:
                sec["seed"] = self.seed(s)
            out[s] = sec
        return out

    def hash(self) -> str:
        """SHA-256 of the whole configuration (first 16 hex digits)."""
        return _digest(self.values)

    def __repr__(self) -> str:
        return f"ExperimentConfig(origin={self.origin!r}, hash={self.hash()})"


def load_config(config: Any = None, *, base_dir: str | os.PathLike | None = None
                ) -> ExperimentConfig:
    """Read and validate a run configuration; defaults come from the embedded default.toml.

    Parameters
    ----------
    config : None, path, dict or ExperimentConfig
        None: the embedded default. A path: a TOML file. A dict: the same
        structure as the TOML (sections as nested dicts). Only the keys given
        override the defaults.
    base_dir : path, optional
        Folder that relative data paths are resolved against: default the
        folder of the config file (the current folder for a dict).

    Raises
    ------
    ConfigError
        One line naming the section and key: unknown key (with the closest
        valid key), wrong type, value out of range, missing data file.
        Nothing is written.
    """
    if isinstance(config, ExperimentConfig):
        return config
    defaults = tomllib.loads(default_config_text())
    if config is None:
        user: dict = {}
        origin = "<default>"
        folder = Path.cwd()
    elif isinstance(config, Mapping):
        user = json.loads(json.dumps(config))  # a deep, plain copy
        origin = "<dict>"
        folder = Path.cwd()
    elif isinstance(config, (str, os.PathLike)):
        path = Path(config)
        origin = str(path)
        if not path.is_file():
            raise ConfigError(f"{origin}: config file not found")
        try:
            user = tomllib.loads(path.read_text("utf-8"))
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{origin}: not valid TOML: {err}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{origin}: cannot read the config file: {err}") from None
        folder = path.resolve().parent
    else:
        raise ConfigError(f"config must be a TOML path, a dict or None, got "
                          f"{type(config).__name__}")
    if base_dir is not None:
        folder = Path(base_dir)
    _check_keys(user, origin)
    values = _merge(defaults, user)
    _check_values(_Checker(values, user, origin), folder)
    return ExperimentConfig(values, origin)


# -- TOML output ----------------------------------------------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise InputError(f"cannot write {type(v).__name__} as TOML")


def _toml_key(k: str) -> str:
    bare = k and all(ch.isalnum() or ch in "-_" for ch in k)
    return k if bare else json.dumps(k)


def dumps_toml(values: Mapping[str, Any]) -> str:
    """A configuration dict (top-level keys, then one table per section) as TOML text.

    Nested tables inside a section are written inline; ``None`` values are left
    out (they are optional keys without a value).
    """
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in values.items()
             if not isinstance(v, Mapping) and v is not None]
    for name, sec in values.items():
        if isinstance(sec, Mapping):
            lines.append("")
            lines.append(f"[{_toml_key(name)}]")
            lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in sec.items()
                         if v is not None)
    return "\n".join(lines) + "\n"


# -- the run -------------------------------------------------------------------------------


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _derive(seed: int, key: int) -> int:
    """An independent 32-bit seed for sub-stream ``key`` of ``seed`` (SeedSequence)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(key),))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def _fingerprint(path: str | None) -> dict | None:
    if path is None:
        return None
    st = Path(path).stat()
    return {"path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _folder(name: str) -> str:
    """A file-system-safe folder name for a target (``pairs:a+b`` -> ``pairs_a_b``)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _save_npy(path: Path, arr: np.ndarray) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, arr)

    atomic_write(path, write)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def _clean(obj: Any) -> Any:
    """JSON-ready copy: numpy to Python, NaN/inf to None, tuples to lists."""
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


@dataclass(frozen=True, eq=False)
class ExperimentResult:
    """What :func:`run_experiment` produced.

    Attributes
    ----------
    out_dir : Path
        The results folder.
    report_path, summary_path : Path
        ``report.md`` and ``summary.json`` inside it.
    results : dict
        The content of ``summary.json`` (config, propensities, metrics with
        CIs, paired tests, interleaving, learning curve, reading, timings, versions).
    """

    out_dir: Path
    report_path: Path
    summary_path: Path
    results: dict = field(repr=False)

    @property
    def timings(self) -> dict:
        """Stage -> ``{"seconds": float, "reused": bool}``."""
        return self.results["timings"]["stages"]

    def metric(self, ranker: str, metric: str | None = None) -> dict:
        """The metrics row (mean, se, ci_low, ci_high, ...) of one ranker."""
        metric = metric or self.results["evaluation"]["metrics"][0]
        for row in self.results["evaluation"]["table"]:
            if row["ranker"] == ranker and row["metric"] == metric:
                return row
        raise InputError(f"no {metric!r} result for ranker {ranker!r}")

    def summary(self) -> str:
        """Headline metric per ranker, the reading, and where the report is."""
        ev = self.results["evaluation"]
        m = ev["metrics"][0]
        pct = f"{100 * (1 - ev['alpha']):g}%"
        lines = [f"Experiment {self.out_dir} ({self.results['timings']['total_seconds']:.1f} s)",
                 f"  {m} on {ev['n_queries']} test queries ({pct} bootstrap CI):"]
        w = max(len(r) for r in ev["rankers"]) + 2
        for row in ev["table"]:
            if row["metric"] == m:
                lines.append(f"    {row['ranker']:<{w}}{row['mean']:.4f}  "
                             f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]")
        lines.extend(f"  - {s}" for s in self.results.get("reading", []))
        lines.append(f"  report: {self.report_path}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


class _Runner:
    """Runs the stages, reusing artefacts whose input hash matches the manifest."""

    def __init__(self, cfg: ExperimentConfig, out: Path, progress: bool, force: bool) -> None:
        self.cfg = cfg
        self.out = out
        self.progress = progress
        self.force = force
        self.manifest_path = out / "manifest.json"
        manifest = None
        if self.manifest_path.is_file():
            try:
                manifest = _read_json(self.manifest_path)
            except (OSError, json.JSONDecodeError):
                manifest = None
        if not isinstance(manifest, dict) or manifest.get("format") != "clickrank.experiment":
            manifest = {"format": "clickrank.experiment", "stages": {}}
        self.manifest = manifest
        self.timings: dict[str, dict] = {}
        self.hashes: dict[str, str] = {}

    def log(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr, flush=True)

    def stage(self, name: str, key: dict, compute: Callable[[], tuple[Any, list[str]]],
              load: Callable[[], Any], *, cache: bool = True,
              detail: Callable[[Any], str] | None = None) -> Any:
        """Run or reuse one stage; ``compute`` returns (value, files written)."""
        i = STAGES.index(name) + 1
        h = _digest({"stage": name, "clickrank": __version__, **key})
        self.hashes[name] = h
        self.log(f"[{i:>2}/{len(STAGES)}] {name} ...")
        t0 = time.perf_counter()
        entry = self.manifest["stages"].get(name)
        reuse = (cache and not self.force and isinstance(entry, dict) and entry.get("hash") == h
                 and all((self.out / f).exists() for f in entry.get("files", ())))
        if reuse:
            value = load()
            dt = time.perf_counter() - t0
            self.timings[name] = {"seconds": round(dt, 3), "reused": True,
                                  "computed_seconds": entry.get("seconds")}
        else:
            # forget the old entry first: a stage that fails half-way is never reused
            if self.manifest["stages"].pop(name, None) is not None:
                atomic_write_json(self.manifest_path, self.manifest)
            try:
                value, files = compute()
            except ClickRankError as err:  # name the stage in the one-line message
                err.args = (f"{name} stage: {err}", *err.args[1:])
                raise
            dt = time.perf_counter() - t0
            self.manifest["stages"][name] = {"hash": h, "files": sorted(files),
                                             "seconds": round(dt, 3)}
            atomic_write_json(self.manifest_path, self.manifest)
            self.timings[name] = {"seconds": round(dt, 3), "reused": False}
        note = f"; {detail(value)}" if detail is not None else ""
        self.log(f"        {name}: {'reused' if reuse else 'done'} in {dt:.1f} s{note}")
        return value


def _check_out_dir(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").is_file() and not force:
        raise InputError(f"{out} exists, is not empty and is not a clickrank results folder "
                         "(no manifest.json); choose another --out or pass --force")


def run_experiment(
    config: Any = None,
    out_dir: str | os.PathLike = "results/default",
    *,
    progress: bool = True,
    force: bool = False,
) -> ExperimentResult:
    """Run the whole flow from data to ``report.md`` (see the module docs for the stages).

    Parameters
    ----------
    config : None, path, dict or ExperimentConfig
        Passed to :func:`load_config` (None: the embedded default). It is
        validated completely before anything is written.
    out_dir : path
        Results folder (created). A stage whose inputs are unchanged since the
        last run into the same folder is loaded instead of recomputed.
    progress : bool
        Print one line per stage with its timing to stderr.
    force : bool
        Recompute every stage (and accept a non-empty folder without a manifest).

    Returns
    -------
    ExperimentResult

    Raises
    ------
    ConfigError
        For a bad configuration (nothing is written).
    ClickRankError
        From a stage (e.g. an estimator that the log cannot identify).
    """
    cfg = load_config(config)
    out = Path(out_dir)
    _check_out_dir(out, force)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    run = _Runner(cfg, out, progress, force)
    run.log(f"clickrank run -> {out} (config {cfg.origin}, hash {cfg.hash()})")
    atomic_write_text(out / "config.toml", cfg.to_toml())
    ctx = _Context(cfg, out, run)
    ctx.go()
    from . import report as _report

    results = ctx.results()
    run.log(f"[{len(STAGES):>2}/{len(STAGES)}] report ...")
    t0 = time.perf_counter()
    results["reading"] = _report.reading(results)
    _report.render_report(results)  # timed here; written below with the timings in it
    run.timings["report"] = {"seconds": round(time.perf_counter() - t0, 3), "reused": False}
    results["timings"] = {"stages": run.timings,
                          "total_seconds": round(time.perf_counter() - t_start, 3)}
    report_path, summary_path = _report.write_report(results, out)
    run.log(f"        report: {report_path} ({results['timings']['total_seconds']:.1f} s in all)")
    return ExperimentResult(out, report_path, summary_path, results)


class _Context:
    """The stages of one run and the values they hand to each other."""

    def __init__(self, cfg: ExperimentConfig, out: Path, run: _Runner) -> None:
        self.cfg = cfg
        self.out = out
        self.run = run

    # -- driver ---------------------------------------------------------------------------
    def go(self) -> None:
        cfg, run = self.cfg, self.run
        self.data = run.stage("data", {"config": cfg.section_key("data"),
                                       "files": self._fingerprints()},
                              self._data, self._data_load, cache=False,
                              detail=self._data_detail)
        up = run.hashes["data"]
        self.prod = run.stage("production", {"up": up, "config": cfg.section_key("production")},
                              self._production, self._production_load,
                              detail=lambda m: f"{m['policy']} policy")
        up = run.hashes["production"]
        self.log_stats = run.stage(
            "simulate", {"up": up, "config": cfg.section_key("click_model", "interventions",
                                                              "simulation")},
            self._simulate, lambda: _read_json(self.out / "log_stats.json"),
            detail=lambda s: f"{s['sessions']:,} sessions, {s['impressions']:,} rows, "
                             f"{s['clicks']:,} clicks")
        up = run.hashes["simulate"]
        self.prop = run.stage("propensity", {"up": up, "config": cfg.section_key("propensity")},
                              self._propensity, self._propensity_load,
                              detail=lambda p: ", ".join(p["estimates"]) or "none")
        up = run.hashes["propensity"]
        self.train = run.stage("train", {"up": up, "config": cfg.section_key("targets",
                                                                             "lambdamart"),
                                         "eval_at": self._eval_at()},
                               self._train, lambda: _read_json(self.out / "models/targets.json"),
                               detail=lambda t: ", ".join(t["models"]))
        up = run.hashes["train"]
        self.evaluation = run.stage(
            "evaluate", {"up": up, "config": cfg.section_key("evaluation")},
            self._evaluate, lambda: _read_json(self.out / "evaluation.json"),
            detail=lambda e: f"{len(e['rankers'])} rankers on {e['n_queries']} queries")
        self.interleaving = run.stage(
            "interleaving", {"up": up, "config": cfg.section_key("interleaving"),
                             "alpha": cfg["evaluation"]["alpha"]},
            self._interleaving, lambda: _read_json(self.out / "interleaving.json"),
            detail=lambda r: f"{len(r['experiments'])} pair(s)")
        self.curve = run.stage(
            "learning_curve", {"up": up, "config": cfg.section_key("learning_curve",
                                                                   "evaluation")},
            self._learning_curve, lambda: _read_json(self.out / "learning_curve.json"),
            detail=lambda c: f"{len(c['rows'])} points")
        key = {"up": [run.hashes[s] for s in ("evaluate", "interleaving", "learning_curve")],
               "config": cfg.section_key("report")}
        self.figures = run.stage("figures", key, self._figures,
                                 lambda: _read_json(self.out / "figures/figures.json"),
                                 detail=lambda f: f"{len(f['files'])} PNG files")

    # -- data -----------------------------------------------------------------------------
    def _fingerprints(self) -> dict:
        d = self.cfg["data"]
        return {k: _fingerprint(d.get(k)) for k in ("path", "test_path", "valid_path")}

    def _load_parts(self) -> dict:
        from .datasets import load_letor, split_queries, synthetic

        d, seed = self.cfg["data"], self.cfg.seed("data")
        if d["source"] == "synthetic":
            full = synthetic(d["n_queries"], d["docs_per_query"], d["n_features"],
                             noise=d["noise"], seed=seed)
        else:
            full = load_letor(d["path"])
        if d.get("test_path") is not None:
            parts = {"train": full, "test": load_letor(d["test_path"])}
            if d.get("valid_path") is not None:
                parts["valid"] = load_letor(d["valid_path"])
        else:
            names = [k for k in ("train", "valid", "test") if d[k] > 0]
            split = split_queries(full, [d[k] for k in names], seed=_derive(seed, 1))
            parts = dict(zip(names, split, strict=True))
        for name, part in parts.items():
            if part.y is None:
                raise InputError(f"the {name} data ({part.name}) has no relevance labels")
            if part.n_queries == 0:
                raise InputError(f"the {name} part of the data has no queries")
        train, test = parts["train"], parts["test"]
        if train.n_features != test.n_features:
            raise InputError(f"train has {train.n_features} features, test {test.n_features}")
        return parts

    def _data(self) -> tuple[dict, list[str]]:
        parts = self._load_parts()
        self.parts = parts
        info = {
            "name": parts["train"].name.split("/")[0] if parts["train"].name else "",
            "source": self.cfg["data"]["source"],
            "n_features": parts["train"].n_features,
            "parts": {k: {"queries": p.n_queries, "docs": p.n_docs,
                          "labels": {str(lab): int(c) for lab, c in
                                     zip(*np.unique(p.y, return_counts=True), strict=True)}}
                      for k, p in parts.items()},
        }
        split = {"format": "clickrank.experiment.split", **info,
                 "qid": {k: np.asarray(p.qid).tolist() for k, p in parts.items()}}
        atomic_write_json(self.out / "data" / "split.json", _clean(split))
        return info, ["data/split.json"]

    def _data_load(self) -> dict:  # pragma: no cover - the data stage is never cached
        raise AssertionError("the data stage is always recomputed")

    @staticmethod
    def _data_detail(info: dict) -> str:
        p = info["parts"]
        return " / ".join(f"{v['queries']} {k}" for k, v in p.items()) + " queries"

    # -- production ranker ----------------------------------------------------------------
    def _production(self) -> tuple[dict, list[str]]:
        from .policies import production_ranker

        pc, seed = self.cfg["production"], self.cfg.seed("production")
        train, test = self.parts["train"], self.parts["test"]
        policy = pc["policy"]
        if policy in ("production", "plackett-luce"):
            ranker = production_ranker(train, pc["fraction"], seed=seed)
            s_train, s_test = ranker.predict(train.X), ranker.predict(test.X)
            trained_on = int(len(ranker.train_queries_))
        elif policy == "oracle":
            s_train, s_test = np.asarray(train.y, float), np.asarray(test.y, float)
            trained_on = 0
        else:  # random: a uniform shuffle when logging; random scores when evaluated
            rng = np.random.default_rng(seed)
            s_train, s_test = np.zeros(train.n_docs), rng.random(test.n_docs)
            trained_on = 0
        _save_npy(self.out / "production/scores_train.npy", s_train)
        _save_npy(self.out / "production/scores_test.npy", s_test)
        meta = {"policy": policy, "fraction": pc["fraction"], "trained_on_queries": trained_on,
                "temperature": pc["temperature"] if policy == "plackett-luce" else None}
        atomic_write_json(self.out / "production/meta.json", meta)
        self.scores = {"train": s_train, "test": s_test}
        return meta, ["production/scores_train.npy", "production/scores_test.npy",
                      "production/meta.json"]

    def _production_load(self) -> dict:
        self.scores = {k: np.load(self.out / f"production/scores_{k}.npy")
                       for k in ("train", "test")}
        return _read_json(self.out / "production/meta.json")

    def _policy(self):
        from .policies import DeterministicPolicy, PlackettLuce, UniformRandom

        policy = self.prod["policy"]
        if policy == "random":
            return UniformRandom(name="random")
        if policy == "plackett-luce":
            return PlackettLuce(self.scores["train"], temperature=self.prod["temperature"],
                                name="plackett-luce")
        return DeterministicPolicy(self.scores["train"], name=policy)

    # -- click model and simulation ---------------------------------------------------------
    def click_model(self):
        from .clickmodels import make_click_model

        if not hasattr(self, "_cm"):
            y_max = max(float(p.y.max()) for p in self.parts.values())
            cm = self.cfg["click_model"]
            self._cm = make_click_model(cm["name"], **_click_model_params(cm, y_max))
        return self._cm

    def true_theta(self) -> np.ndarray | None:
        cm = self.click_model()
        if not hasattr(cm, "propensities"):
            return None
        return np.asarray(cm.propensities(self.cfg["simulation"]["top_k"]), dtype=np.float64)

    @property
    def log_path(self) -> Path:
        return self.out / "log.parquet"

    def log(self):
        from .clicklog import read_log

        return read_log(self.log_path, validate=False)

    def _interventions(self) -> list:
        from .simulation import Randomize, RandPair, Swap

        iv = self.cfg["interventions"]
        items = []
        if iv["swap_fraction"] > 0:
            items.append(Swap(iv["swap_fraction"], k=iv.get("swap_k")))
        if iv["randpair_fraction"] > 0:
            items.append(RandPair(iv["randpair_fraction"]))
        if iv["randomize_fraction"] > 0:
            items.append(Randomize(iv["randomize_fraction"], k=iv.get("randomize_k")))
        if iv["fairpairs_fraction"] > 0:
            from .simulation import FairPairs

            items.append(FairPairs(iv["fairpairs_fraction"]))
        return items

    def _simulate(self) -> tuple[dict, list[str]]:
        from .simulation import simulate

        sim = self.cfg["simulation"]
        simulate(self.parts["train"], policy=self._policy(), click_model=self.click_model(),
                 n_sessions=sim["sessions"], interventions=self._interventions(),
                 top_k=sim["top_k"], seed=self.cfg.seed("simulation"),
                 chunk_size=sim["chunk_size"], out=self.log_path, overwrite=True,
                 progress=self.run.progress and sys.stderr.isatty())
        stats = _clean(self._log_stats())
        atomic_write_json(self.out / "log_stats.json", stats)
        return stats, ["log.parquet", "log_stats.json"]

    def _log_stats(self) -> dict:
        import polars as pl

        from .clicklog import click_counts
        from .clickmodels._relevance import evaluate_map
        from .plots import skip_above_pairs

        lf = self.log()
        cm = self.click_model()
        totals = lf.select(sessions=pl.col("session").n_unique(), impressions=pl.len(),
                           clicks=pl.col("click").cast(pl.Int64).sum()).collect().row(0,
                                                                                   named=True)
        by_iv = (lf.group_by("intervention").agg(sessions=pl.col("session").n_unique())
                 .sort(pl.col("intervention").cast(pl.String)).collect())
        sessions_by_iv = {str(r["intervention"]): int(r["sessions"])
                          for r in by_iv.iter_rows(named=True)}
        view = "none" if sessions_by_iv.get("none", 0) > 0 else None
        sel = lf if view is None else lf.filter(pl.col("intervention").cast(pl.String) == view)
        ctr = click_counts(sel, ["position"]).collect()
        # label counts per position -> mean label and mean P(click | examined) of shown docs
        cells = (sel.group_by("position", "label").agg(n=pl.len()).sort("position", "label")
                 .collect())
        pos = cells["position"].to_numpy().astype(np.int64)
        lab = cells["label"].to_numpy().astype(np.float64)
        n = cells["n"].to_numpy().astype(np.float64)
        size = int(pos.max()) + 1 if pos.size else 1
        shown = np.bincount(pos, weights=n, minlength=size)
        mean_label = np.bincount(pos, weights=n * lab, minlength=size) / np.maximum(shown, 1)
        rel = getattr(cm, "attractiveness", getattr(cm, "relevance", None))
        mean_alpha = None
        if rel is not None:
            a = evaluate_map(rel, lab[None, :], name="relevance")[0]
            mean_alpha = np.bincount(pos, weights=n * a, minlength=size) / np.maximum(shown, 1)
        theta = self.true_theta()
        rows = []
        for r in ctr.iter_rows(named=True):
            p = int(r["position"])
            rows.append({"position": p, "impressions": int(r["impressions"]),
                         "clicks": int(r["clicks"]), "ctr": r["ctr"], "se": r["se"],
                         "mean_label": float(mean_label[p]),
                         "mean_click_given_examined": None if mean_alpha is None
                         else float(mean_alpha[p]),
                         "true_theta": None if theta is None or p > theta.size
                         else float(theta[p - 1])})
        pairs = skip_above_pairs(lf)
        n_pairs = int(pairs["pairs"].sum()) if pairs.height else 0
        sa = {"preferences": n_pairs,
              "agree": int(pairs["agree"].sum()) if n_pairs else 0,
              "tie": int(pairs["tie"].sum()) if n_pairs else 0,
              "invert": int(pairs["invert"].sum()) if n_pairs else 0}
        return {"sessions": int(totals["sessions"]), "impressions": int(totals["impressions"]),
                "clicks": int(totals["clicks"]), "sessions_by_intervention": sessions_by_iv,
                "ctr_view": view or "all", "ctr_by_position": rows, "skip_above": sa,
                "click_model": repr(cm), "path": "log.parquet"}

    # -- propensities ---------------------------------------------------------------------
    def _estimate(self, method: str, log: Any):
        from .propensity import bootstrap, estimate_propensities

        p = self.cfg["propensity"]
        B, seed = p["bootstrap"], self.cfg.seed("propensity")
        if method == "em":
            return estimate_propensities(log, method="em", n_boot=B or 100, seed=seed)
        if B > 0:
            return bootstrap(method, log, n=B, seed=seed)
        return estimate_propensities(log, method=method)

    def _propensity(self) -> tuple[dict, list[str]]:
        p = self.cfg["propensity"]
        files, estimates = [], {}
        folder = self.out / "propensities"
        if folder.is_dir():
            shutil.rmtree(folder)
        for m in p["methods"]:
            est = self._estimate(m, self.log())
            est.save(folder / f"{m}.json", alpha=p["alpha"])
            files.append(f"propensities/{m}.json")
            estimates[m] = est
        theta = self.true_theta()
        truth = None if theta is None else {"theta": theta.tolist(), "source": "click model",
                                            "click_model": repr(self.click_model())}
        atomic_write_json(folder / "truth.json", {"truth": truth})
        files.append("propensities/truth.json")
        self.estimates = estimates
        return self._propensity_summary(truth), files

    def _propensity_load(self) -> dict:
        from .propensity import Propensities

        p = self.cfg["propensity"]
        self.estimates = {m: Propensities.load(self.out / f"propensities/{m}.json")
                          for m in p["methods"]}
        truth = _read_json(self.out / "propensities/truth.json")["truth"]
        return self._propensity_summary(truth)

    def _propensity_summary(self, truth: dict | None) -> dict:
        p = self.cfg["propensity"]
        use = p.get("use") or (p["methods"][0] if p["methods"] else None)
        return _clean({"use": use, "alpha": p["alpha"],
                       "truth": None if truth is None else truth["theta"],
                       "estimates": {m: e.to_dict(p["alpha"]) for m, e in self.estimates.items()}})

    # -- targets and models ---------------------------------------------------------------
    def _target(self, name: str, log: Any, theta_est: Any):
        from . import targets as T

        t = self.cfg["targets"]
        train = self.parts["train"]
        if name == "oracle":
            return T.oracle(train)
        if name == "naive":
            return T.naive(train, log, kind=t["naive_kind"], candidates=t["candidates"])
        if name in ("ips", "ips-true"):
            theta = theta_est if name == "ips" else self.true_theta()
            tgt = T.ips(train, log, theta, clip=t.get("clip"), candidates=t["candidates"])
            return T.Target(name, gains=tgt.gains, candidates=tgt.candidates,
                            metadata=tgt.metadata)
        if name.startswith("pairs:"):
            tgt = T.click_preferences(train, log, strategy=name[len("pairs:"):],
                                      candidates=t["candidates"])
            return T.Target(name, pairs=tgt.pairs, pair_weights=tgt.pair_weights,
                            candidates=tgt.candidates, metadata=tgt.metadata)
        ips_w = name == "skip-above-ips"
        tgt = T.skip_above(train, log, ips_weighted=ips_w,
                           propensities=theta_est if ips_w else None, candidates=t["candidates"])
        return T.Target(name, pairs=tgt.pairs, pair_weights=tgt.pair_weights,
                        candidates=tgt.candidates, metadata=tgt.metadata)

    def _eval_at(self) -> int:
        """Cut-off of LambdaMART's validation NDCG: that of the headline metric (default 10)."""
        metric = self.cfg["evaluation"]["metrics"][0]
        k = metric.rsplit("@", 1)[1] if "@" in metric else ""
        return int(k) if k.isdigit() and int(k) > 0 else 10

    def _lambdamart(self):
        from .lambdamart import LambdaMART

        lm = self.cfg["lambdamart"]
        return LambdaMART(
            n_estimators=lm["n_estimators"], learning_rate=lm["learning_rate"],
            num_leaves=lm["num_leaves"], max_depth=lm["max_depth"],
            min_data_in_leaf=lm["min_data_in_leaf"],
            truncation_level=lm["truncation_level"] or None,
            early_stopping_rounds=lm.get("early_stopping_rounds"), eval_at=self._eval_at(),
            seed=self.cfg.seed("lambdamart"), n_jobs=lm["n_jobs"])

    def _skipped(self, name: str) -> str | None:
        if name == "ips-true" and self.true_theta() is None:
            return (f"ips-true skipped: the {self.cfg['click_model']['name']} click model has "
                    "no position-only examination curve (no true θ)")
        return None

    def _use_estimate(self):
        use = self.prop["use"]
        return None if use is None else self.estimates[use]

    def _train(self) -> tuple[dict, list[str]]:
        folder = self.out / "models"
        if folder.is_dir():
            shutil.rmtree(folder)
        log, est = self.log(), self._use_estimate()
        self.models, info, notes, files = {}, {}, [], []
        for name in self.cfg["targets"]["names"]:
            why = self._skipped(name)
            if why is not None:
                notes.append(why)
                continue
            tgt = self._target(name, log, est)
            model = self._lambdamart().fit(self.parts["train"], tgt,
                                           valid=self.parts.get("valid"))
            sub = _folder(name)
            model.save(folder / sub, overwrite=True)
            files += [f"models/{sub}/model.txt", f"models/{sub}/meta.json"]
            self.models[name] = model
            info[name] = {"kind": tgt.kind, "candidates": tgt.n_candidates,
                          "trees": model.best_iteration_, "metadata": tgt.metadata,
                          "path": f"models/{sub}"}
        out = _clean({"models": info, "notes": notes})
        atomic_write_json(folder / "targets.json", out)
        return out, [*files, "models/targets.json"]

    def rankers(self) -> dict:
        """Name -> ranker or test scores: the production ranker first, then the models."""
        from .lambdamart import LambdaMART

        if not hasattr(self, "models"):
            self.models = {n: LambdaMART.load(self.out / info["path"])
                           for n, info in self.train["models"].items()}
        return {PRODUCTION: self.scores["test"], **self.models}

    # -- evaluation -----------------------------------------------------------------------
    def _evaluate(self) -> tuple[dict, list[str]]:
        from .evaluation import evaluate

        e = self.cfg["evaluation"]
        test = self.parts["test"]
        res = evaluate(self.rankers(), test, e["metrics"], empty=e["empty"],
                       n_bootstrap=e["bootstrap"], alpha=e["alpha"],
                       seed=self.cfg.seed("evaluation"))
        comparisons, notes = [], []
        for a, b in e["compare"]:
            if a not in res.rankers or b not in res.rankers:
                notes.append(f"comparison {a} vs {b} skipped: "
                             f"{a if a not in res.rankers else b} was not trained")
                continue
            for m in res.metrics:
                comparisons.append(res.compare(a, b, m, n_permutations=e["permutations"])
                                   .to_dict())
        res.save(self.out / "evaluation_per_query.json")
        out = _clean({"rankers": list(res.rankers), "metrics": list(res.metrics),
                      "n_queries": test.n_queries, "alpha": res.alpha,
                      "n_bootstrap": res.n_bootstrap, "empty": res.empty,
                      "table": res.table.to_dicts(), "comparisons": comparisons, "notes": notes})
        atomic_write_json(self.out / "evaluation.json", out)
        return out, ["evaluation.json", "evaluation_per_query.json"]

    # -- interleaving ---------------------------------------------------------------------
    def _interleaving(self) -> tuple[dict, list[str]]:
        from .online import ab_experiment, interleaving_experiment

        il = self.cfg["interleaving"]
        rankers = self.rankers()
        test, cm = self.parts["test"], self.click_model()
        k = self.cfg["simulation"]["top_k"]
        alpha, seed = self.cfg["evaluation"]["alpha"], self.cfg.seed("interleaving")
        experiments, notes = [], []
        for a, b in il["pairs"]:
            if a not in rankers or b not in rankers:
                notes.append(f"interleaving {a} vs {b} skipped: "
                             f"{a if a not in rankers else b} was not trained")
                continue
            res = interleaving_experiment(test, rankers[a], rankers[b], method=il["method"],
                                          click_model=cm, n_impressions=il["impressions"], k=k,
                                          alpha=alpha, seed=seed)
            row = {"a": a, "b": b, **res.to_dict()}
            if il["ab"]:
                ab = ab_experiment(test, rankers[a], rankers[b], click_model=cm,
                                   n_impressions=il["impressions"], k=k, alpha=alpha, seed=seed)
                row["ab"] = ab.to_dict()
            experiments.append(row)
        out = _clean({"experiments": experiments, "notes": notes})
        atomic_write_json(self.out / "interleaving.json", out)
        return out, ["interleaving.json"]

    # -- learning curve -------------------------------------------------------------------
    def _learning_curve(self) -> tuple[dict, list[str]]:
        import polars as pl

        from .evaluation import evaluate

        lc, e = self.cfg["learning_curve"], self.cfg["evaluation"]
        metric = e["metrics"][0]
        total = self.cfg["simulation"]["sessions"]
        sizes = sorted({n for n in lc["sessions"] if n < total})
        notes = [f"prefix of {n:,} sessions dropped: the log has only {total:,}"
                 for n in sorted(set(lc["sessions"])) if n >= total]
        methods = [m for m in lc["targets"] if m in self.train["models"]]
        rows = []
        table = {(r["ranker"], r["metric"]): r for r in self.evaluation["table"]}
        if sizes and methods:
            test = self.parts["test"]
            for n in sizes:
                log = self.log().filter(pl.col("session") < n)
                est = None
                if {"ips", "skip-above-ips"} & set(methods):
                    try:
                        est = self._estimate(self.prop["use"], log)
                    except ClickRankError as err:
                        notes.append(f"{n:,} sessions: propensities not estimated ({err})")
                fitted = {}
                for m in methods:
                    if m in ("ips", "skip-above-ips") and est is None:
                        continue
                    try:
                        tgt = self._target(m, log, est)
                        fitted[m] = self._lambdamart().fit(self.parts["train"], tgt,
                                                           valid=self.parts.get("valid"))
                    except ClickRankError as err:
                        notes.append(f"{n:,} sessions, {m}: not trained ({err})")
                if not fitted:
                    continue
                res = evaluate(fitted, test, [metric], empty=e["empty"],
                               n_bootstrap=e["bootstrap"], alpha=e["alpha"],
                               seed=self.cfg.seed("evaluation"))
                for r in res.table.iter_rows(named=True):
                    rows.append({"method": r["ranker"], "sessions": n, "mean": r["mean"],
                                 "lower": r["ci_low"], "upper": r["ci_high"]})
        if rows:
            for m in methods:
                r = table[(m, metric)]
                rows.append({"method": m, "sessions": total, "mean": r["mean"],
                             "lower": r["ci_low"], "upper": r["ci_high"]})
            for ref in ("oracle", PRODUCTION):
                if (ref, metric) in table:
                    r = table[(ref, metric)]
                    rows.append({"method": ref, "sessions": None, "mean": r["mean"],
                                 "lower": r["ci_low"], "upper": r["ci_high"]})
        out = _clean({"metric": metric, "rows": rows, "notes": notes})
        atomic_write_json(self.out / "learning_curve.json", out)
        return out, ["learning_curve.json"]

    # -- figures --------------------------------------------------------------------------
    def _figures(self) -> tuple[dict, list[str]]:
        from . import plots

        folder = self.out / "figures"
        if folder.is_dir():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        made: dict[str, str] = {}
        if not self.cfg["report"]["figures"]:
            out = {"files": made}
            atomic_write_json(folder / "figures.json", out)
            return out, ["figures/figures.json"]
        log, truth, cm = self.log(), self.true_theta(), self.click_model()
        est = self._use_estimate()

        def fig(name: str, draw: Callable[[Path], Any]) -> None:
            path = folder / f"{name}.png"
            draw(path)
            made[name] = f"figures/{name}.png"

        has_alpha = hasattr(cm, "attractiveness")
        view = self.log_stats["ctr_view"]
        fig("ctr_by_position", lambda p: plots.ctr_by_position(
            log, propensities=est, true_theta=truth, relevance=cm if has_alpha else None,
            intervention=None if view == "all" else view, path=p))
        if self.estimates:
            fig("propensities", lambda p: plots.propensity_vs_truth(
                self.estimates if len(self.estimates) > 1 else next(iter(self.estimates.values())),
                truth, alpha=self.cfg["propensity"]["alpha"], path=p))
        fig("click_heatmap", lambda p: plots.click_heatmap(log, path=p))
        if self.log_stats["skip_above"]["preferences"] > 0:
            fig("skip_above_bias", lambda p: plots.skip_above_bias(log, path=p))
        if self.curve["rows"]:
            import polars as pl

            frame = pl.DataFrame(self.curve["rows"], schema={
                "method": pl.String, "sessions": pl.Int64, "mean": pl.Float64,
                "lower": pl.Float64, "upper": pl.Float64})
            fig("learning_curve", lambda p: plots.learning_curves(
                frame, metric=self.curve["metric"].upper(),
                level=1 - self.cfg["evaluation"]["alpha"], path=p))
        forces = self._forces_example()
        if forces is not None:
            scores, labels, info = forces
            fig("forces", lambda p: plots.forces(scores, labels, path=p))
            made_info = info
        else:
            made_info = None
        out = {"files": made, "forces": made_info}
        atomic_write_json(folder / "figures.json", _clean(out))
        return out, ["figures/figures.json", *made.values()]

    def _forces_example(self) -> tuple[np.ndarray, np.ndarray, dict] | None:
        """The top 10 of a test query as ranked by the naive (else first) model."""
        from ._segments import rank_order

        rankers = self.rankers()
        name = "naive" if "naive" in rankers else next(iter(rankers))
        test = self.parts["test"]
        ranker = rankers[name]
        s = ranker if isinstance(ranker, np.ndarray) else ranker.predict(test.X)
        order = rank_order(s, test.qptr)
        for q in range(test.n_queries):
            a, b = int(test.qptr[q]), int(test.qptr[q + 1])
            rows = order[a:b][:10]
            if np.unique(test.y[rows]).size >= 3:
                return s[rows], test.y[rows], {"ranker": name, "query": str(test.qid[q]),
                                               "docs": len(rows)}
        return None

    # -- results --------------------------------------------------------------------------
    def results(self) -> dict:
        from importlib.metadata import PackageNotFoundError, version

        versions = {"clickrank": __version__, "python": sys.version.split()[0]}
        for pkg in ("numpy", "polars", "lightgbm", "scipy", "numba", "matplotlib"):
            try:
                versions[pkg] = version(pkg)
            except PackageNotFoundError:
                versions[pkg] = None
        notes = [*self.train["notes"], *self.evaluation["notes"], *self.interleaving["notes"],
                 *self.curve["notes"]]
        return _clean({
            "format": "clickrank.experiment.summary",
            "config": self.cfg.to_dict(),
            "config_origin": self.cfg.origin,
            "config_hash": self.cfg.hash(),
            "stage_hashes": dict(self.run.hashes),
            "data": self.data,
            "production": self.prod,
            "log": self.log_stats,
            "propensities": self.prop,
            "models": self.train["models"],
            "evaluation": self.evaluation,
            "interleaving": self.interleaving["experiments"],
            "learning_curve": {"metric": self.curve["metric"], "rows": self.curve["rows"]},
            "figures": self.figures["files"],
            "forces_example": self.figures.get("forces"),
            "notes": notes,
            "versions": versions,
        })
