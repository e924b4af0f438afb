"""Shared plumbing of the propensity estimators: log input, sufficient statistics, intervals.

Every estimator is split in two: a *statistics* function that reduces a click
log (polars LazyFrame) to a few small arrays with one lazy aggregation, and a
*fit* function that turns those arrays into :class:`Propensities`. The split
lets :func:`~clickrank.propensity.bootstrap` reuse the statistics with
per-session resampling weights (column ``_w``) without touching the math.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import polars as pl

from .._validation import InputError, LogSchemaError

__all__ = [
    "as_lazy", "require_columns", "WEIGHT", "count_expr", "clicks_expr", "intervention_is",
    "log_ratio_se", "finish", "resolve_K",
]

#: Name of the per-session resampling-weight column added by the bootstrap.
WEIGHT = "_w"

LogLike = pl.DataFrame | pl.LazyFrame | str | os.PathLike


def as_lazy(log: Any) -> pl.LazyFrame:
    """Return ``log`` as a LazyFrame; paths (parquet file/folder/glob, CSV) go through
    :func:`clickrank.clicklog.read_log`, which validates the schema and values."""
    if isinstance(log, pl.LazyFrame):
        return log
    if isinstance(log, pl.DataFrame):
        return log.lazy()
    if isinstance(log, str | os.PathLike):
        p = str(log)
        from ..clicklog import read_log

        return read_log(p, lazy=True, validate=True)
    raise InputError(
        "log must be a polars DataFrame, LazyFrame or a parquet path, "
        f"got {type(log).__name__}"
    )


def require_columns(lf: pl.LazyFrame, columns: tuple[str, ...], *, what: str) -> pl.Schema:
    """Check that the log has ``columns`` (schema only, no data read)."""
    schema = lf.collect_schema()
    missing = [c for c in columns if c not in schema]
    if missing:
        raise LogSchemaError(
            f"{what} needs column(s) {', '.join(map(repr, missing))}; the log has "
            f"{', '.join(schema.names())}"
        )
    if not schema["position"].is_integer():
        raise LogSchemaError(f"position must be an integer column, got {schema['position']}")
    if schema["click"] != pl.Boolean and not schema["click"].is_integer():
        raise LogSchemaError(f"click must be Boolean (or 0/1 integers), got {schema['click']}")
    return schema


def count_expr(weighted: bool) -> pl.Expr:
    """Impressions (or their resampling weight) in a group."""
    return pl.col(WEIGHT).sum() if weighted else pl.len().cast(pl.Float64)


def clicks_expr(weighted: bool) -> pl.Expr:
    """Clicks (or weighted clicks) in a group."""
    c = pl.col("click").cast(pl.Float64)
    return (c * pl.col(WEIGHT)).sum() if weighted else c.sum()


def grouped_counts(lf: pl.LazyFrame, by: list[str], weighted: bool) -> pl.LazyFrame:
    """Impressions ``n`` and clicks ``c`` (Float64) per group of ``by``, sorted.

    Unweighted: :func:`clickrank.clicklog.click_counts`. Weighted (bootstrap):
    the same sums with the per-session weight column ``_w``.
    """
    if not weighted:
        from ..clicklog import click_counts

        return click_counts(lf, by).select(
            *by, n=pl.col("impressions").cast(pl.Float64), c=pl.col("clicks").cast(pl.Float64)
        )
    return lf.group_by(by).agg(n=count_expr(True), c=clicks_expr(True)).sort(by)


def resolve_K(K: Any, deepest: int, method: str) -> int:  # noqa: N802 - the paper's symbol
    """``K`` (default: ``deepest``, the largest position in the data the estimator uses).

    Raises :class:`InputError` for a ``K`` beyond that position: those
    positions were never shown, so nothing can be estimated for them.
    """
    if K is None:
        return int(deepest)
    if int(K) > deepest:
        raise InputError(f"{method}: K={int(K)} exceeds the deepest position in the data it "
                         f"uses ({deepest}); use K <= {deepest}")
    return int(K)


def intervention_is(schema: pl.Schema, value: str) -> pl.Expr:
    """Predicate ``intervention == value`` that works for Categorical/Enum/String columns."""
    if "intervention" not in schema:
        return pl.lit(False)
    return pl.col("intervention").cast(pl.String) == value


def log_ratio_se(
    c_num: np.ndarray, n_num: np.ndarray, c_den: np.ndarray, n_den: np.ndarray,
    cov: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Ratio of two click-through rates and the delta-method SE of its log.

    .. math::
        \hat r = \frac{c_1/n_1}{c_0/n_0}, \qquad
        \widehat{\mathrm{Var}}(\log\hat r) = \frac{1-\hat p_1}{n_1\hat p_1}
        + \frac{1-\hat p_0}{n_0\hat p_0} - \frac{2\,\widehat{\mathrm{Cov}}(\hat p_1,\hat p_0)}
        {\hat p_1\hat p_0}

    for binomial proportions :math:`\hat p = c/n` (``cov`` is the covariance
    of the two proportions, 0 for disjoint samples).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        p1 = c_num / n_num
        p0 = c_den / n_den
        r = p1 / p0
        var = (1 - p1) / (n_num * p1) + (1 - p0) / (n_den * p0) - 2 * cov / (p1 * p0)
        se = np.sqrt(np.maximum(var, 0.0))
    return r, se


def finish(
    theta: np.ndarray,
    se: np.ndarray,
    n: np.ndarray,
    *,
    method: str,
    n_sessions: int,
    reasons: dict[int, str] | None = None,
    warnings: list[str] | None = None,
    absolute: bool = False,
    info: dict | None = None,
):
    """Assemble :class:`Propensities`, turning every non-finite value into a warning.

    ``reasons`` maps a 1-based position to why it is not identified. Positions
    with ``theta == 0`` (no clicks) get an explicit warning too. Raises
    :class:`EstimationError` if no position other than the reference is identified.
    """
    from .._validation import EstimationError
    from ._result import Propensities

    theta = np.asarray(theta, dtype=float).copy()
    se = np.asarray(se, dtype=float).copy()
    reasons = dict(reasons or {})
    warns = list(warnings or [])
    for p in range(1, theta.size + 1):
        t = theta[p - 1]
        if p in reasons:
            theta[p - 1] = np.nan
            se[p - 1] = np.nan
            warns.append(f"position {p}: not identified: {reasons[p]}")
        elif not np.isfinite(t):
            theta[p - 1] = np.nan
            se[p - 1] = np.nan
            warns.append(f"position {p}: not identified (the estimate is not finite)")
        elif t == 0:
            se[p - 1] = np.inf
            warns.append(f"position {p}: no clicks in the data it is estimated from; "
                         "theta = 0 and its interval is [0, inf)")
    if theta.size > 1 and not np.isfinite(theta[1:]).any():
        detail = "; ".join(w for w in warns if w.startswith("position")) or "no data"
        raise EstimationError(f"{method}: no position beyond 1 is identified ({detail})")
    return Propensities(
        theta=theta, se=se, method=method, n_sessions=n_sessions, n=n,
        warnings=tuple(warns), absolute=absolute, info=dict(info or {}),
    )
