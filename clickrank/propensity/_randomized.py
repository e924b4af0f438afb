r"""Propensities from top-k randomization (RandTop-k).

In sessions whose top :math:`k` results were shuffled uniformly, the document
at each slot has the same distribution, so under the position-based model
:math:`E[C_p] = \theta_p\,E[\gamma(d)]` and

.. math::
    \frac{\hat\theta_p}{\hat\theta_1} = \frac{\bar c_p}{\bar c_1}, \qquad
    \bar c_p = \frac{1}{n_p}\sum_{s} c_{s,p}

(Wang et al. (2016); Joachims et al. (2017);
the estimator of ULTRA's ``RandomizedPropensityEstimator``).

Interval: the same session contributes to every position, so
:math:`\bar c_p` and :math:`\bar c_1` are correlated (a user who clicks at 1
may be more or less likely to click at p). The delta method with the
session-level covariance

.. math::
    \widehat{\mathrm{Var}}\log\frac{\bar c_p}{\bar c_1} = \frac{1-\bar c_p}{n_p\bar c_p}
    + \frac{1-\bar c_1}{n_1\bar c_1} - \frac{2\,n_{1p}\,\hat\sigma_{1p}}{n_p n_1\,\bar c_p\bar c_1},
    \qquad \hat\sigma_{1p} = \frac{1}{n_{1p}}\sum_s c_{s,1}c_{s,p} - \bar c_1\bar c_p,

(:math:`n_{1p}` sessions showing both slots) uses four sums per position,
one lazy aggregation over the log.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import EstimationError, InputError
from ..engine import co_clicks, counts, is_spark
from ._result import Propensities
from ._stats import (
    BUCKET,
    as_lazy,
    finish,
    intervention_is,
    log_ratio_se,
    require_columns,
    resolve_K,
    to_stats,
    with_buckets,
)

__all__ = ["randomized", "randomized_statistics", "randomized_from_counts"]


def _co_clicks_in_order(
    clicked: pl.LazyFrame, buckets: int, group: str = BUCKET
) -> pl.DataFrame | None:
    """Co-clicks with slot 1 per position (and bucket) from clicked rows in session order.

    In a log sorted by (session, position) -- as clickrank writes logs -- a
    clicked row co-clicks with slot 1 iff the first clicked row of its session
    is at position 1, which a pass over batches can tell with one row of
    carry: memory does not grow with the log. Returns None as soon as the
    rows turn out not to be in that order. ``group``: the column of the
    ``buckets`` codes (the bootstrap's session bucket, or a context's index).
    """
    cols = ["session", "position", *([group] if buckets else [])]
    width = max(int(buckets), 1)
    counts = np.zeros(0, dtype=np.int64)
    last_s, last_p, last_ok = None, 0, False
    for batch in clicked.select(cols).collect_batches(chunk_size=1 << 20):
        if batch.height == 0:
            continue
        s = batch["session"].to_numpy()
        p = batch["position"].to_numpy().astype(np.int64)
        prev_s = np.r_[s[0] if last_s is None else last_s, s[:-1]]
        new = s != prev_s
        if last_s is None:
            new[0] = True
        prev_p = np.r_[last_p, p[:-1]]
        if np.any(s < prev_s) or np.any(~new & (p <= prev_p)):
            return None
        start = np.maximum.accumulate(np.where(new, np.arange(s.size), -1))
        first_is_1 = np.where(start >= 0, p[np.maximum(start, 0)] == 1, last_ok)
        key = (p - 1) * width + (batch[group].to_numpy().astype(np.int64) if buckets else 0)
        add = np.bincount(key[first_is_1], minlength=0)
        if add.size > counts.size:
            counts = np.r_[counts, np.zeros(add.size - counts.size, dtype=np.int64)]
        counts[: add.size] += add
        last_s, last_p, last_ok = s[-1], int(p[-1]), bool(first_is_1[-1])
    nz = np.flatnonzero(counts)
    out = {"position": (nz // width + 1).astype(np.int64), "cc": counts[nz].astype(np.float64)}
    if buckets:
        out[group] = (nz % width).astype(np.uint32)
    return pl.DataFrame(out)


def randomized_statistics(
    lf: Any,
    *,
    buckets: int = 0,
    seed: int = 0,
    intervention: str = "randomized",
    by: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Per position: impressions ``n``, clicks ``c`` and co-clicks with slot 1 ``cc``.

    One streaming aggregation gives ``n`` and ``c``; the co-clicks need to
    know, per session, whether slot 1 was clicked: a pass over the clicked
    rows in session order (constant memory) or, for a log in another order, a
    semi-join of the sessions clicked at slot 1 (memory grows with them).
    ``by``: columns that split every position further (the contexts of
    :mod:`._context`; not with ``buckets``), whose arrays the result then holds.
    """
    schema = require_columns(lf, ("session", "position", "click"), what="randomized estimator")
    if "intervention" not in schema:
        raise EstimationError(
            "randomized estimator: the log has no 'intervention' column, so no session is "
            "known to be randomized"
        )
    if by and (buckets or is_spark(lf)):
        raise InputError("randomized statistics by context take a polars log, no buckets")
    keys = ["position", *by, *([BUCKET] if buckets else [])]
    where = {"intervention": intervention}
    per_pos = counts(lf, ["position", *by], where=where, buckets=buckets, seed=seed)
    if is_spark(lf):  # a semi-join on the cluster
        co = co_clicks(lf, where=where, buckets=buckets, seed=seed)
    elif by:  # each context's index as the group of the ordered pass
        codes = per_pos.select(by).unique().with_row_index("_context")
        rand = lf.filter(intervention_is(schema, intervention)).join(
            codes.lazy(), on=list(by), how="inner", nulls_equal=True
        )
        clicked = rand.filter(pl.col("click").cast(pl.Boolean))
        co = _co_clicks_in_order(clicked, max(codes.height, 1), group="_context")
        if co is not None:
            co = co.join(codes, on="_context").drop("_context")
    else:
        rand = with_buckets(lf.filter(intervention_is(schema, intervention)), buckets, seed)
        clicked = rand.filter(pl.col("click").cast(pl.Boolean))
        co = _co_clicks_in_order(clicked, buckets)
    if co is None:  # not in session order: join the (sparse) clicks instead
        first = clicked.filter(pl.col("position") == 1).select("session")
        co = (
            clicked.join(first, on="session", how="semi")
            .group_by(keys)
            .agg(cc=pl.len().cast(pl.Float64))
            .collect(engine="streaming")
        )
    table = (
        per_pos.with_columns(pl.col("position").cast(pl.Int64))
        .join(
            co.with_columns(pl.col("position").cast(pl.Int64)),
            on=keys,
            how="left",
            nulls_equal=True,
        )  # fmt: skip
        .with_columns(pl.col("cc").fill_null(0.0))
    )
    # every session shows positions 1..n (the click-log contract, clickrank.clicklog), so
    # the sessions showing both slot 1 and slot p are those showing p: n1p = n
    return to_stats(table, ["position", *by], ["n", "c", "cc"], buckets)


def randomized_from_counts(
    stats: dict[str, np.ndarray], *, K: int | None = None, method: str = "randomized"
) -> Propensities:
    """θ_p/θ_1 and session-level delta-method SE from :func:`randomized_statistics`."""
    pos = np.asarray(stats["position"], dtype=np.int64)
    if pos.size == 0:
        raise EstimationError(
            f"{method} estimator: the log has no randomized sessions (intervention "
            "'randomized'); use swap, harvest-allpairs or em"
        )
    K = resolve_K(K, int(pos.max()), method)
    n = np.zeros(K)
    c = np.zeros(K)
    cc = np.zeros(K)
    n1p = np.zeros(K)
    keep = pos <= K
    idx = pos[keep] - 1
    n[idx], c[idx] = stats["n"][keep], stats["c"][keep]
    cc[idx] = stats["cc"][keep]
    n1p[idx] = stats["n1p"][keep] if "n1p" in stats else stats["n"][keep]
    reasons: dict[int, str] = {}
    if n[0] == 0:
        raise EstimationError(
            f"{method} estimator: position 1 is never shown in randomized sessions"
        )
    if c[0] == 0:
        raise EstimationError(
            f"{method} estimator: no clicks at position 1 in {n[0]:,.0f} randomized sessions; "
            "the ratios to position 1 are not identified"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        m = c / n
        sigma = np.where(n1p > 0, cc / n1p - m * m[0], 0.0)
        cov = n1p * sigma / (n * n[0])
    theta, se = log_ratio_se(c, n, np.full(K, c[0]), np.full(K, n[0]), cov)
    theta[0], se[0] = 1.0, 0.0
    for p in np.flatnonzero(n == 0) + 1:
        reasons[int(p)] = "never shown in a randomized session"
    n_sessions = int(round(n[0]))  # every randomized session shows position 1
    return finish(
        theta,
        se,
        n,
        method=method,
        n_sessions=n_sessions,
        reasons=reasons,
        info={
            "interval": "delta method on log ratio with session-level covariance",
            "reference": "Wang et al. SIGIR 2016; Joachims et al. WSDM 2017",
        },
    )


def randomized(log: Any, *, K: int | None = None) -> Propensities:
    r"""θ_p/θ_1 = CTR_p / CTR_1 in sessions whose top ``K`` was shuffled.

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log with ``intervention == "randomized"`` sessions.
    K : int, optional
        Number of shuffled positions. **Set it when only the top k < displayed
        results were shuffled** (``Randomize(k=...)``): the log does not record
        k, and positions below it are not randomized (their ratios would be
        biased). Default: every position shown in randomized sessions.

    Returns
    -------
    Propensities
        ``theta[0] = 1``; ``se`` from the delta method with session covariance.

    Raises
    ------
    EstimationError
        No randomized sessions, or no clicks at position 1.

    Notes
    -----
    In a session whose top :math:`K` results were shuffled uniformly, every slot
    shows a document drawn from the same distribution, so under the
    position-based model :math:`E[c_{s,p}] = \theta_p\,E[\gamma(d)]` and
    (Wang et al. (2016); Joachims et al. (2017))

    .. math::
        \frac{\hat\theta_p}{\hat\theta_1} = \frac{\bar c_p}{\bar c_1},
        \qquad \bar c_p = \frac{1}{n_p}\sum_s c_{s,p},

    with the delta-method variance that keeps the covariance of the two means
    (the same session contributes to both):

    .. math::
        \widehat{\mathrm{Var}}\,\log\frac{\bar c_p}{\bar c_1}
        = \frac{1 - \bar c_p}{n_p \bar c_p} + \frac{1 - \bar c_1}{n_1 \bar c_1}
        - \frac{2\,n_{1p}\,\hat\sigma_{1p}}{n_p n_1\,\bar c_p \bar c_1},
        \qquad \hat\sigma_{1p} = \frac{1}{n_{1p}}\sum_s c_{s,1} c_{s,p} - \bar c_1 \bar c_p,

    where :math:`n_{1p}` sessions show both slots.
    """
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")
    return randomized_from_counts(randomized_statistics(as_lazy(log)), K=K)
