r"""Propensities from pair swaps: Swap (Joachims et al. (2017)), RandPair (Wang et al. (2018)).

Both designs exchange the results at two ranks :math:`a < b` in a random
subset of sessions and record the pair (columns ``swap_pivot`` = a and
``swap_k`` = b; see :mod:`clickrank.simulation`). Under the position-based
model (PBM) :math:`P(C=1\mid d, p) = \theta_p\,\gamma(d)`; write
:math:`d_r` for the document the logging ranker puts at rank :math:`r`.
Because interventions are assigned at random, the distribution of
:math:`d_r` is the same in every arm, so click-through rates (CTR) of the
*same* :math:`d_r` at two positions give a propensity ratio.

**Swap** (Joachims et al. (2017), §5.3): swap ranks 1
and :math:`k`. Route ``"top"`` follows :math:`d_1` down:

.. math::
    \frac{\theta_k}{\theta_1} =
    \frac{\mathrm{CTR}(\text{slot }k \mid \text{swap }1\leftrightarrow k)}
    {\mathrm{CTR}(\text{slot }1 \mid \text{rank 1 not swapped})}
    = \frac{\theta_k\,E\gamma(d_1)}{\theta_1\,E\gamma(d_1)}.

Route ``"bottom"`` follows :math:`d_k` up: CTR at slot :math:`k` in sessions
where rank :math:`k` was not swapped, over CTR at slot 1 in the swap-k
sessions.

**RandPair** (Wang et al. (2018), §4):
swap the pivot rank (1) with a uniformly chosen other rank :math:`j`. Every
session is intervened on, so rank 1 keeps :math:`d_1` only in control
sessions; the default route is therefore ``"bottom"``: CTR of :math:`d_j`
at slot :math:`j` (sessions whose pair does not contain :math:`j`) over CTR of
:math:`d_j` at slot 1 (sessions with pair :math:`(1, j)`). With a random
pivot (``RandPair(pivot=None)``) the pairs that contain rank 1 are used.

Interval: numerator and denominator come from disjoint sessions and a
session shows one result per slot, so the click counts are independent
binomials. ``se`` is the delta method on the log ratio,
:math:`\widehat{\mathrm{Var}}\log\hat r = \frac{1-\hat p_k}{n_k \hat p_k}
+ \frac{1-\hat p_1}{n_1\hat p_1}`; the interval is the score interval of
the ratio of the two rates (:func:`._intervals.ratio_score_interval`; Koopman
(1984)): the delta method evaluates the variance at the estimate, which with
the few dozen clicks a swapped pair gets is smallest exactly when the
estimate is too high, and the interval undercovered (0.90 at position 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import EstimationError, InputError, LogSchemaError, check_choice
from ..engine import counts
from ._result import Propensities
from ._stats import (
    BUCKET,
    as_lazy,
    finish,
    log_ratio_se,
    require_columns,
    resolve_K,
    to_stats,
)

__all__ = ["swap", "randpair", "pair_statistics", "pair_from_counts"]

_KINDS = {"none": 0, "swap": 1, "randpair": 2}


def pair_statistics(
    lf: Any, *, buckets: int = 0, seed: int = 0, by: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Clicks and impressions per (arm, swapped pair a<b, position), in one streaming pass.

    Uses sessions with intervention ``none`` (or null), ``swap`` and
    ``randpair``. Returns arrays ``kind`` (0 none, 1 swap, 2 randpair), ``a``,
    ``b`` (0 when nothing was swapped), ``position``, ``n``, ``c`` (and, with
    ``buckets``, their per-bucket sums; see :func:`._stats.to_stats`). ``by``:
    further columns to group on (the context columns), returned as String arrays.
    """
    schema = require_columns(lf, ("session", "position", "click"), what="pair-swap estimators")
    if "intervention" not in schema:
        raise EstimationError(
            "the log has no 'intervention' column, so it has no swap or randpair sessions"
        )
    has_k = "swap_k" in schema
    has_pivot = "swap_pivot" in schema
    keys = (
        ["intervention"]
        + (["swap_pivot"] if has_pivot else [])
        + (["swap_k"] if has_k else [])
        + ["position"]
        + list(by)
    )
    # group on the raw (categorical) columns over the whole log, map labels on the small result
    iv = pl.col("intervention").cast(pl.String).fill_null("none").replace("", "none")
    kind = iv.replace_strict(_KINDS, default=-1, return_dtype=pl.Int8)
    swapped = pl.col("kind") > 0
    b = pl.col("swap_k").cast(pl.Int64).fill_null(0) if has_k else pl.lit(0, dtype=pl.Int64)
    a = pl.col("swap_pivot").cast(pl.Int64).fill_null(0) if has_pivot else pl.lit(1)
    out_keys = ["kind", "a", "b", "position", *by] + ([BUCKET] if buckets else [])
    agg = (
        counts(lf, keys, buckets=buckets, seed=seed)  # the pass over the log, on its engine
        .lazy()
        .with_columns(kind=kind)
        .filter(pl.col("kind") >= 0)
        .with_columns(
            *(pl.col(c).cast(pl.String) for c in by),
            a=pl.when(swapped).then(a).otherwise(0),
            b=pl.when(swapped).then(b).otherwise(0),
            position=pl.col("position").cast(pl.Int64),
        )
        .group_by(out_keys)
        .agg(pl.col("n").sum(), pl.col("c").sum())
        .collect()
    )
    if not has_k and (agg["kind"] > 0).any():
        raise LogSchemaError(
            "swap/randpair sessions must record the swapped rank in a 'swap_k' column "
            "(and the other rank in 'swap_pivot', default 1)",
            column="swap_k",
        )
    return to_stats(agg, ["kind", "a", "b", "position", *by], ["n", "c"], buckets)


def _route(
    design: str,
    route: str,
    kind: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    pos: np.ndarray,
    n: np.ndarray,
) -> tuple[str, np.ndarray]:
    """The route and slot-1 control cells: the denominator step of :func:`pair_from_counts`."""
    # slot 1 shows d_1 where rank 1 was not part of a swapped pair
    one_kept = (pos == 1) & ((kind == 0) | ((a != 1) & (b != 1)))
    if route == "auto":
        route = "top" if (design == "swap" and n[one_kept].sum() > 0) else "bottom"
    if route == "top" and n[one_kept].sum() == 0:
        raise EstimationError(
            f"{design} estimator, route 'top': no session shows the rank-1 document at "
            "rank 1 (no control sessions); use route='bottom'"
        )
    return route, one_kept


def pair_from_counts(
    stats: dict[str, np.ndarray],
    *,
    design: str = "swap",
    route: str = "auto",
    K: int | None = None,
) -> Propensities:
    """θ_k/θ_1 from the counts of :func:`pair_statistics` (see the module docstring)."""
    design = check_choice(design, ("swap", "randpair"), name="design")
    route = check_choice(route, ("auto", "top", "bottom"), name="route")
    kind, a, b, pos, n, c = (np.asarray(stats[x]) for x in ("kind", "a", "b", "position", "n", "c"))
    code = _KINDS[design]
    mine = (kind == code) & (a == 1) & (b >= 2)
    ks = np.unique(b[mine])
    if ks.size == 0:
        what = (
            "swap sessions (intervention 'swap')"
            if design == "swap"
            else ("randpair sessions (intervention 'randpair') whose pair contains rank 1")
        )
        raise EstimationError(
            f"{design} estimator: the log has no {what}; use another method "
            "(randomized, harvest-allpairs, em)"
        )
    route, one_kept = _route(design, route, kind, a, b, pos, n)
    K = resolve_K(K, int(ks.max()) if K is None else int(pos.max()), design)
    theta = np.full(K, np.nan)
    se = np.full(K, np.nan)
    used = np.zeros(K)
    theta[0], se[0] = 1.0, 0.0
    counts4 = np.full((K, 4), np.nan)  # clicks, impressions of numerator and denominator
    reasons: dict[int, str] = {}
    c1, n1 = float(c[one_kept].sum()), float(n[one_kept].sum())
    used[0] = n1 if route == "top" else float(n[mine & (pos == 1)].sum())
    for k in range(2, K + 1):  # loop over positions (<= K), not over data
        arm = mine & (b == k)
        if not arm.any():
            reasons[k] = f"no {design} session exchanged rank 1 with rank {k}"
            continue
        if route == "top":
            cn, nn = float(c[arm & (pos == k)].sum()), float(n[arm & (pos == k)].sum())
            cd, nd = c1, n1
        else:
            kept = (pos == k) & ((kind == 0) | ((a != k) & (b != k)))
            cn, nn = float(c[kept].sum()), float(n[kept].sum())
            cd, nd = float(c[arm & (pos == 1)].sum()), float(n[arm & (pos == 1)].sum())
        used[k - 1] = nn
        if nn == 0:
            reasons[k] = f"the rank-{k if route == 'bottom' else 1} document was never shown at {k}"
            continue
        if cd == 0:
            reasons[k] = "no clicks at position 1 in the sessions of the denominator"
            continue
        theta[k - 1], se[k - 1] = log_ratio_se(
            np.float64(cn), np.float64(nn), np.float64(cd), np.float64(nd)
        )
        counts4[k - 1] = (cn, nn, cd, nd)
    n_sessions = int(round(float(n[(pos == 1) & ((kind == 0) | (kind == code))].sum())))
    ref = (
        "Joachims, Swaminathan & Schnabel, WSDM 2017, sec. 5.3"
        if design == "swap"
        else "Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, sec. 4"
    )
    return finish(
        theta,
        se,
        used,
        method=design,
        n_sessions=n_sessions,
        reasons=reasons,
        info={"route": route, "reference": ref, "interval": "score interval of the CTR ratio"},
        ci_method="score",
        ci_counts=counts4,
    )


def _check_K(K: Any) -> None:
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")


def swap(log: Any, *, route: str = "auto", K: int | None = None) -> Propensities:
    r"""θ_k/θ_1 from rank-1 ↔ rank-k swap sessions (Joachims et al. (2017), §5.3).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log (DESIGN §2) with ``intervention`` (``none``/``swap``) and
        ``swap_k`` (``swap_pivot`` = 1 when present).
    route : {"auto", "top", "bottom"}
        ``top``: the rank-1 document at k vs. at 1 (needs sessions where rank 1
        was not swapped); ``bottom``: the rank-k document at 1 vs. at k.
        ``auto``: ``top`` when control sessions exist.
    K : int, optional
        Positions to report (default: the largest swapped rank).

    Returns
    -------
    Propensities
        ``theta[0] = 1``; ``se`` is the delta-method SE of log θ_k; score intervals.

    Raises
    ------
    EstimationError
        If the log has no swap sessions, or no position beyond 1 is identified.

    Notes
    -----
    Under the position-based model :math:`P(C = 1 \mid d, p) = \theta_p\,\gamma(d)`,
    with :math:`d_r` the document the logging ranker puts at rank :math:`r`
    (route ``"top"``):

    .. math::
        \frac{\hat\theta_k}{\hat\theta_1}
        = \frac{\mathrm{CTR}(\text{slot } k \mid \text{swap } 1 \leftrightarrow k)}
               {\mathrm{CTR}(\text{slot } 1 \mid \text{rank 1 not swapped})}
        \;\to\; \frac{\theta_k\,E\gamma(d_1)}{\theta_1\,E\gamma(d_1)},
        \qquad
        \widehat{\mathrm{Var}}\,\log\frac{\hat\theta_k}{\hat\theta_1}
        = \frac{1 - \hat p_k}{n_k \hat p_k} + \frac{1 - \hat p_1}{n_1 \hat p_1},

    where :math:`\hat p_k, n_k` are the CTR and sessions of the numerator,
    :math:`\hat p_1, n_1` those of the denominator (disjoint sessions, so the
    counts are independent binomials) gives ``se``; the interval is the score
    interval of the ratio of the two rates (Koopman (1984)), which keeps its
    level with few clicks where :math:`\hat\theta_k \exp(\pm z\,\mathrm{se})`
    does not. Route
    ``"bottom"`` follows :math:`d_k` up instead (Joachims et al. (2017), §5.3).

    Assumes PBM clicks and swap sessions chosen at random. Position k is
    flagged (NaN) if no session swapped 1 with k or the denominator has no clicks.
    """
    _check_K(K)
    return pair_from_counts(pair_statistics(as_lazy(log)), design="swap", route=route, K=K)


def randpair(log: Any, *, route: str = "bottom", K: int | None = None) -> Propensities:
    r"""θ_j/θ_1 from RandPair sessions (Wang et al. (2018), §4), pivot rank 1.

    Parameters as in :func:`swap`; the default route is ``"bottom"``.

    Notes
    -----
    Every session swaps the pivot rank 1 with a uniformly chosen rank
    :math:`j`, so rank 1 keeps its own document only in control sessions. The
    ``"bottom"`` route compares the document :math:`d_j` at its own slot and at
    slot 1:

    .. math::
        \frac{\hat\theta_j}{\hat\theta_1}
        = \frac{\mathrm{CTR}(\text{slot } j \mid \text{pair} \not\ni j)}
               {\mathrm{CTR}(\text{slot } 1 \mid \text{pair } (1, j))}
        \;\to\; \frac{\theta_j\,E\gamma(d_j)}{\theta_1\,E\gamma(d_j)},

    with the same delta-method interval as :func:`swap` (the two CTRs come from
    disjoint sessions). See Wang et al. (2018) and Joachims et al. (2017).
    """
    _check_K(K)
    return pair_from_counts(pair_statistics(as_lazy(log)), design="randpair", route=route, K=K)
