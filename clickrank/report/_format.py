"""Number formatting, names and markdown tables shared by the report's sections."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

_NAMES = {
    "ips": "IPS",
    "ips-true": "IPS with the true θ",
    "naive": "naive",
    "skip-above": "skip-above",
    "skip-above-ips": "IPS-weighted skip-above",
    "oracle": "oracle",
    "production": "the logging (production) ranker",
    "unbiased-lambdamart": "Unbiased LambdaMART",
    "prs-pairs": "propensity-ratio pairs",
    "ips-pairs": "IPS-weighted rank pairs",
    "pairs:fairpairs": "FairPairs",
}
_DETERMINISTIC = ("production", "oracle")


def _name(r: str) -> str:
    return _NAMES.get(r, r)


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _p(p: Any) -> str:
    if p is None:
        return "–"
    if p == 0:
        return "< 1e-300"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _peq(p: Any) -> str:
    """``p = 0.012`` in a sentence (``p < 1e-300`` when it underflows)."""
    return "p < 1e-300" if p == 0 else f"p = {_p(p)}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _metric_rows(results: dict) -> dict[tuple[str, str], dict]:
    return {(r["ranker"], r["metric"]): r for r in results["evaluation"]["table"]}


def _headline(results: dict) -> str:
    return results["evaluation"]["metrics"][0]


def _level(alpha: float) -> str:
    return f"{100 * (1 - alpha):g}%"
