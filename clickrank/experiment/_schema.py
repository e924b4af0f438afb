"""The run-configuration schema: sections, keys and their kinds; key and type checks.

Defaults live in ``clickrank/configs/default.toml``; the value checks are in
:mod:`clickrank.experiment._checks`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

from .._core._validation import ConfigError
from ..specs.names import RUN_TARGETS

#: Allowed keys per section ("" = top level) and their kinds. Defaults live in
#: ``configs/default.toml``; keys absent there are optional (no default).
SCHEMA: dict[str, dict[str, str]] = {
    "": {"seed": "int"},
    "data": {
        "source": "str",
        "n_queries": "int",
        "docs_per_query": "int",
        "n_features": "int",
        "noise": "number",
        "path": "str",
        "test_path": "str",
        "valid_path": "str",
        "train": "number",
        "valid": "number",
        "test": "number",
        "seed": "int",
    },
    "production": {
        "policy": "str",
        "fraction": "number",
        "min_queries": "int",
        "temperature": "number",
        "seed": "int",
    },
    "click_model": {
        "name": "str",
        "eta": "number",
        "curve": "str",
        "relevance": "str",
        "eps": "number",
        "max_label": "number",
        "threshold": "number",
        "params": "table",
    },
    "interventions": {
        "swap_fraction": "number",
        "randpair_fraction": "number",
        "randomize_fraction": "number",
        "fairpairs_fraction": "number",
        "swap_k": "int",
        "randomize_k": "int",
    },
    "simulation": {"sessions": "int", "top_k": "int", "chunk_size": "int", "seed": "int"},
    "context": {"column": "str", "shares": "table", "eta": "table", "concentration": "number"},
    "propensity": {
        "methods": "strs",
        "bootstrap": "int",
        "alpha": "number",
        "use": "str",
        "seed": "int",
    },
    "targets": {
        "names": "strs",
        "candidates": "str",
        "naive_kind": "str",
        "clip": "clip",
        "normalize": "str",
    },
    "lambdamart": {
        "select": "bool",
        "folds": "int",
        "validation": "str",
        "grid": "tables",
        "n_estimators": "int",
        "learning_rate": "number",
        "num_leaves": "int",
        "max_depth": "int",
        "min_data_in_leaf": "int",
        "truncation_level": "int",
        "n_jobs": "jobs",
        "early_stopping_rounds": "int",
        "seed": "int",
    },
    "evaluation": {
        "metrics": "strs",
        "empty": "str",
        "bootstrap": "int",
        "alpha": "number",
        "permutations": "int",
        "compare": "pairs",
        "seed": "int",
    },
    "interleaving": {
        "pairs": "pairs",
        "method": "str",
        "impressions": "int",
        "ab": "bool",
        "seed": "int",
    },
    "learning_curve": {"sessions": "ints", "targets": "strs"},
    "click_fit": {
        "models": "strs",
        "sessions": "int",
        "test_fraction": "number",
        "shrinkage": "number",
    },
    "report": {"figures": "bool"},
}

#: Training targets a run can fit (``[targets] names``; defined in :mod:`clickrank.specs`);
#: besides these, ``"pairs:<strategy>"`` fits the preferences of
#: ``clickrank.targets.click_preferences`` (e.g. ``"pairs:fairpairs"``).
TARGETS = RUN_TARGETS
#: The logging ranker, evaluated next to the trained ones.
PRODUCTION = "production"
#: Stages in run order.
STAGES = (
    "data",
    "production",
    "simulate",
    "propensity",
    "click_fit",
    "train",
    "evaluate",
    "interleaving",
    "learning_curve",
    "figures",
    "report",
)

# spawn keys of the stage seeds derived from the master seed (fixed: do not reorder)
_SEED_KEYS = {
    "data": 0,
    "production": 1,
    "simulation": 2,
    "propensity": 3,
    "lambdamart": 4,
    "evaluation": 5,
    "interleaving": 6,
}
_KIND_NAMES = {
    "int": "an integer",
    "number": "a number",
    "str": "a string",
    "bool": "true or false",
    "strs": "a list of strings",
    "ints": "a list of integers",
    "pairs": 'a list of pairs such as [["ips", "naive"]]',
    "table": "a table",
    "tables": "a list of tables such as [{num_leaves = 8, max_depth = 3}]",
    "clip": 'a number in (0, 1], "auto" or "none"',
    "jobs": 'a positive integer or "auto" (the CPUs other processes leave free)',
}


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
            for p in value
        )
    if kind == "table":
        return isinstance(value, dict)
    if kind == "tables":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if kind == "clip":
        return value in ("auto", "none") or _type_ok(value, "number")
    if kind == "jobs":
        return value == "auto" or is_int(value)
    raise AssertionError(kind)


def _check_keys(raw: Mapping[str, Any], origin: str) -> None:
    """Unknown sections / keys (with a difflib suggestion) and wrong types, one line each."""
    sections = [s for s in SCHEMA if s]
    for name, value in raw.items():
        if name in SCHEMA[""]:
            if not _type_ok(value, SCHEMA[""][name]):
                raise ConfigError(
                    f"{origin}: {name} must be {_KIND_NAMES[SCHEMA[''][name]]}, got {value!r}"
                )
            continue
        if name not in SCHEMA or not name:
            options = sections + list(SCHEMA[""])
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
            hint = (
                f"; did you mean [{close[0]}]?"
                if close and close[0] in sections
                else f"; did you mean {close[0]!r}?"
                if close
                else f"; valid sections: {', '.join(sections)}"
            )
            raise ConfigError(f"{origin}: unknown section or key {name!r}{hint}")
        if not isinstance(value, dict):
            raise ConfigError(
                f"{origin}: [{name}] must be a table (a [{name}] section), got {value!r}"
            )
        schema = SCHEMA[name]
        for key, v in value.items():
            if key not in schema:
                raise ConfigError(
                    f"{origin}: unknown key {key!r} in [{name}]{_suggest(key, list(schema))}"
                )
            if not _type_ok(v, schema[key]):
                raise ConfigError(
                    f"{origin}: {_where(name, key)} must be {_KIND_NAMES[schema[key]]}, got {v!r}"
                )


def _merge(base: dict, user: Mapping[str, Any]) -> dict:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for k, v in user.items():
        if isinstance(v, dict) and k in SCHEMA and k:
            out.setdefault(k, {}).update(v)
        else:
            out[k] = v
    return out
