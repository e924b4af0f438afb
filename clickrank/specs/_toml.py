"""TOML output of a configuration (the inverse of :func:`tomllib.loads` for run configs)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .._core._validation import InputError

__all__ = ["dumps_toml"]


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
    lines = [
        f"{_toml_key(k)} = {_toml_value(v)}"
        for k, v in values.items()
        if not isinstance(v, Mapping) and v is not None
    ]
    for name, sec in values.items():
        if isinstance(sec, Mapping):
            lines.append("")
            lines.append(f"[{_toml_key(name)}]")
            lines.extend(
                f"{_toml_key(k)} = {_toml_value(v)}" for k, v in sec.items() if v is not None
            )
    return "\n".join(lines) + "\n"
