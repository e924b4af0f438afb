r"""Propensities from top-k randomization (RandTop-k).

In sessions whose top :math:`k` results were shuffled uniformly, the document
at each slot has the same distribution, so under the position-based model
:math:`E[C_p] = \theta_p\,E[\gamma(d)]` and

.. math::
    \frac{\hat\theta_p}{\hat\theta_1} = \frac{\bar c_p}{\bar c_1}, \qquad
    \bar c_p = \frac{1}{n_p}\sum_{s} c_{s,p}

(Wang, Bendersky, Metzler & Najork, SIGIR 2016; Joachims et al. WSDM 2017;
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

from .._validation import EstimationError, InputError
from ._result import Propensities
from ._stats import (
    as_lazy,
    clicks_expr,
    count_expr,
    finish,
    intervention_is,
    log_ratio_se,
    require_columns,
    resolve_K,
)

__all__ = ["randomized", "randomized_statistics", "randomized_from_counts"]


def randomized_statistics(
    lf: pl.LazyFrame, *, weighted: bool = False, intervention: str = "randomized"
) -> dict[str, np.ndarray]:
    """Per position: impressions ``n``, clicks ``c``, co-clicks with slot 1 ``cc``, ``n1p``."""
    schema = require_columns(lf, ("session", "position", "click"), what="randomized estimator")
    if "intervention" not in schema:
        raise EstimationError(
            "randomized estimator: the log has no 'intervention' column, so no session is "
            "known to be randomized"
        )
    rand = lf.filter(intervention_is(schema, intervention))
    per_pos = rand.group_by("position").agg(n=count_expr(weighted), c=clicks_expr(weighted))
    # co-clicks with slot 1: only clicked rows of sessions that clicked at slot 1 matter,
    # so a semi-join of the (sparse) clicks replaces a join of the whole log
    clicked = rand.filter(pl.col("click").cast(pl.Boolean))
    first = clicked.filter(pl.col("position") == 1).select("session")
    co = (
        clicked.join(first, on="session", how="semi")
        .group_by("position")
        .agg(cc=count_expr(weighted))
    )
    agg = (
        per_pos.join(co, on="position", how="left")
        .with_columns(pl.col("cc").fill_null(0.0))
        .sort("position")
        .collect(engine="streaming")
    )
    out = {col: agg[col].to_numpy() for col in ("position", "n", "c", "cc")}
    # every session shows positions 1..n (the click-log contract, clickrank.clicklog), so
    # the sessions showing both slot 1 and slot p are those showing p
    out["n1p"] = out["n"].copy()
    return out


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
    cc[idx], n1p[idx] = stats["cc"][keep], stats["n1p"][keep]
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
        theta, se, n, method=method, n_sessions=n_sessions, reasons=reasons,
        info={"interval": "delta method on log ratio with session-level covariance",
              "reference": "Wang et al. SIGIR 2016; Joachims et al. WSDM 2017"},
    )


def randomized(log: Any, *, K: int | None = None) -> Propensities:
    """θ_p/θ_1 = CTR_p / CTR_1 in sessions whose top ``K`` was shuffled.

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
    """
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")
    return randomized_from_counts(randomized_statistics(as_lazy(log)), K=K)
