"""Helpers shared by the figures: colours, table conversion, input checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError

#: Columns of the frame read by :func:`learning_curves` (with ``sessions``) and
#: :func:`severity_curves` (with ``eta``).
CURVE_COLUMNS = ("method", "mean", "lower", "upper")

# one colour per well-known method, so every figure of a report agrees
_METHOD_COLORS = {
    "naive": "#d62728",
    "ips": "#1f77b4",
    "skip-above": "#ff7f0e",
    "skip-above-ips": "#9467bd",
    "oracle": "#2ca02c",
    "production": "#7f7f7f",
    "logging": "#7f7f7f",
}
_REFERENCE_METHODS = ("oracle", "production", "logging")


# -- shared helpers ---------------------------------------------------------------------


def _color(method: str, i: int) -> str:
    return _METHOD_COLORS.get(str(method).lower(), f"C{(i + 3) % 10}")


def _as_polars(frame: Any, what: str) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    if isinstance(frame, Mapping):
        try:
            return pl.DataFrame(dict(frame))
        except (TypeError, ValueError, pl.exceptions.PolarsError) as err:
            raise InputError(f"{what}: cannot build a table from the mapping: {err}") from None
    if type(frame).__module__.startswith("pandas") and hasattr(frame, "columns"):
        # column by column (no pyarrow needed); NaN in float columns means missing
        cols = {}
        for c in frame.columns:
            arr = frame[c].to_numpy()
            cols[str(c)] = (
                pl.Series(str(c), arr, nan_to_null=True)
                if arr.dtype.kind == "f"
                else pl.Series(str(c), frame[c].tolist())
            )
        return pl.DataFrame(cols)
    raise InputError(
        f"{what}: expected a polars or pandas DataFrame (or a dict of columns), "
        f"got {type(frame).__name__}"
    )


def _empty_check(n: int, what: str, detail: str) -> None:
    if n == 0:
        raise InputError(f"{what}: nothing to plot ({detail})")


def _propensity_arrays(propensities: Any, name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(theta / theta_1, se of log theta, method)`` of a Propensities or an array."""
    theta = np.asarray(getattr(propensities, "theta", propensities), dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise InputError(f"{name} must be a Propensities or a 1-d array theta[p-1]")
    if not np.isfinite(theta[0]) or theta[0] <= 0:
        raise InputError(f"{name}: theta at position 1 must be finite and > 0")
    if np.any(theta[np.isfinite(theta)] <= 0):
        raise InputError(f"{name}: propensities must be > 0")
    se = np.asarray(getattr(propensities, "se", np.zeros_like(theta)), dtype=np.float64)
    se = np.where(np.isfinite(se), se, 0.0)
    return theta / theta[0], se, str(getattr(propensities, "method", "given θ"))


def _relevance_function(relevance: Any):
    """A labels -> P(click | examined) function from a click model or a relevance map."""
    from ..clickmodels import as_relevance_map, evaluate_map

    rel = getattr(relevance, "attractiveness", relevance)
    if hasattr(relevance, "relevance") and not hasattr(relevance, "attractiveness"):
        raise InputError(
            f"relevance: {type(relevance).__name__} clicks depend on the position beyond "
            "examination; pass its relevance map explicitly"
        )
    rel = as_relevance_map(rel, name="relevance")
    return lambda y: evaluate_map(rel, y, name="relevance")
