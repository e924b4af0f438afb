"""Shared plumbing of the propensity estimators: log input, sufficient statistics, intervals.

Every estimator is split in two: a *statistics* function that reduces a click
log (polars LazyFrame) to a few small arrays in one streaming pass, and a
*fit* function that turns those arrays into :class:`Propensities`. Memory is
that of the statistics (positions, swapped pairs, or (query, doc, position)
cells), not of the log.

With ``buckets=B`` a statistics function also splits every sum over ``B``
session buckets (a hash of the session, :func:`bucket_expr`) in the same
pass; :func:`reweight` then forms the statistics of a bootstrap replicate
from one weight per bucket, which is how
:func:`~clickrank.propensity.bootstrap` resamples sessions without reading
the log again.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import polars as pl
from scipy import sparse

from .._core._validation import InputError
from ..engine import as_lazy, require_columns
from ..engine.polars import BUCKET, bucket_expr, grouped_counts, with_buckets

__all__ = [
    "as_lazy",
    "require_columns",
    "BUCKET",
    "bucket_expr",
    "with_buckets",
    "grouped_counts",
    "to_stats",
    "reweight",
    "intervention_is",
    "log_ratio_se",
    "finish",
    "resolve_K",
]

#: Key of the per-bucket sums in a statistics dict (value name -> sparse [rows, buckets]).
BY_BUCKET = "_by_bucket"

LogLike = pl.DataFrame | pl.LazyFrame | str | os.PathLike


def to_stats(
    table: pl.DataFrame, keys: list[str], values: list[str], buckets: int = 0
) -> dict[str, Any]:
    """Statistics dict from a grouped table: key arrays and value totals per key row.

    With ``buckets``, ``table`` has one row per (key, bucket); the totals sum
    over buckets and :data:`BY_BUCKET` holds, for each value, the sparse
    ``[key rows, buckets]`` matrix of per-bucket sums (for :func:`reweight`).
    Keys are sorted.
    """
    if not buckets:
        table = table.sort(keys)
        return {k: table[k].to_numpy() for k in [*keys, *values]}
    uniq = table.select(keys).unique().sort(keys).with_row_index("_row")
    t = table.join(uniq, on=keys, how="left", nulls_equal=True)
    rows, cols = t["_row"].to_numpy(), t[BUCKET].to_numpy()
    out: dict[str, Any] = {k: uniq[k].to_numpy() for k in keys}
    mats = {
        v: sparse.csr_matrix(
            (t[v].to_numpy().astype(np.float64), (rows, cols)), shape=(uniq.height, buckets)
        )
        for v in values
    }
    out.update({v: np.asarray(m.sum(axis=1)).ravel() for v, m in mats.items()})
    out[BY_BUCKET] = mats
    return out


def add_bucketed_total(
    stats: dict[str, Any], name: str, table: pl.DataFrame, value: str, buckets: int
) -> None:
    """Add a scalar statistic (e.g. sessions) and, with buckets, its per-bucket sums."""
    if not buckets:
        stats[name] = float(table[value].sum()) if table.height else 0.0
        return
    m = sparse.csr_matrix(
        (
            table[value].to_numpy().astype(np.float64),
            (np.zeros(table.height, dtype=np.int64), table[BUCKET].to_numpy()),
        ),
        shape=(1, buckets),
    )
    stats[name] = float(m.sum())
    stats[BY_BUCKET][name] = m


def reweight(stats: dict[str, Any], weights: np.ndarray) -> dict[str, Any]:
    """The statistics of a bootstrap replicate: per-bucket sums weighted by ``weights``."""
    out = {k: v for k, v in stats.items() if k != BY_BUCKET}
    for name, m in stats[BY_BUCKET].items():
        val = m @ weights
        out[name] = float(val[0]) if np.ndim(stats[name]) == 0 else val
    return out


def resolve_K(K: Any, deepest: int, method: str) -> int:  # noqa: N802 - the paper's symbol
    """``K`` (default: ``deepest``, the largest position in the data the estimator uses).

    Raises :class:`InputError` for a ``K`` beyond that position: those
    positions were never shown, so nothing can be estimated for them.
    """
    if K is None:
        return int(deepest)
    if int(K) > deepest:
        raise InputError(
            f"{method}: K={int(K)} exceeds the deepest position in the data it "
            f"uses ({deepest}); use K <= {deepest}"
        )
    return int(K)


def intervention_is(schema: pl.Schema, value: str) -> pl.Expr:
    """Predicate ``intervention == value`` that works for Categorical/Enum/String columns."""
    if "intervention" not in schema:
        return pl.lit(False)
    return pl.col("intervention").cast(pl.String) == value


def log_ratio_se(
    c_num: np.ndarray,
    n_num: np.ndarray,
    c_den: np.ndarray,
    n_den: np.ndarray,
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


#: Why a position without a click anywhere in the log is not identified.
UNCLICKED = "no click at this position anywhere in the log"


def identified(theta: np.ndarray, clicks: np.ndarray) -> np.ndarray:
    """Bool ``[K]``: the positions an estimate identifies, the one definition that the
    estimators, ``auto``, the command line and the learner share: a finite estimate at a
    position the log has at least one click at (``clicks[p - 1]``, the log's clicks by
    position; a position without any identifies nothing, whatever an estimator returns).
    """
    theta = np.asarray(theta, dtype=np.float64)
    got = np.zeros(theta.size, dtype=bool)
    k = min(theta.size, len(clicks))
    got[:k] = np.isfinite(theta[:k]) & (np.asarray(clicks[:k]) > 0)
    return got


def _by_reason(lines: list[str]) -> str:
    """``position P: why`` lines in one phrase, positions sharing a reason together
    (``positions 2-10: not identified: ...``)."""
    groups: dict[str, list[int]] = {}
    for line in lines:
        head, _, why = line.partition(": ")
        groups.setdefault(why, []).append(int(head.removeprefix("position ")))
    parts = []
    for why, ps in groups.items():
        runs = np.split(np.array(ps), np.flatnonzero(np.diff(ps) != 1) + 1)
        span = ", ".join(f"{r[0]}" if r.size == 1 else f"{r[0]}-{r[-1]}" for r in runs)
        parts.append(f"position{'s' if len(ps) > 1 else ''} {span}: {why}")
    return "; ".join(parts)


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
    ci_method: str = "normal",
    df: np.ndarray | None = None,
    ci_counts: np.ndarray | None = None,
    whole_log: bool = False,
):
    """Assemble :class:`Propensities`, turning every non-finite value into a warning.

    ``reasons`` maps a 1-based position to why it is not identified. ``whole_log``: the
    estimate reads every impression of the log (EM, regression EM), so ``theta == 0``
    means no click at that position anywhere, which identifies nothing
    (:func:`identified`): the position is not identified. Otherwise (a randomized
    design's sessions) a zero gets the interval ``[0, inf)`` and a warning. Raises
    :class:`EstimationError` if no position other than the reference is identified.
    """
    from .._core._validation import EstimationError
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
        elif t == 0 and whole_log:  # no click at p anywhere: the likelihood is flat from 0
            theta[p - 1] = np.nan
            se[p - 1] = np.nan
            warns.append(f"position {p}: not identified: {UNCLICKED}")
        elif t == 0:
            se[p - 1] = np.inf
            warns.append(
                f"position {p}: no clicks in the data it is estimated from; "
                "theta = 0 and its interval is [0, inf)"
            )
    if theta.size > 1 and not np.isfinite(theta[1:]).any():
        detail = _by_reason([w for w in warns if w.startswith("position")]) or "no data"
        raise EstimationError(f"{method}: no position beyond 1 is identified ({detail})")
    return Propensities(
        theta=theta,
        se=se,
        method=method,
        n_sessions=n_sessions,
        n=n,
        warnings=tuple(warns),
        absolute=absolute,
        info=dict(info or {}),
        ci_method=ci_method,
        df=df,
        ci_counts=ci_counts,
    )
