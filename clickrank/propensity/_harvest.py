r"""Intervention harvesting (Agarwal et al. (2019a)).

"Estimating Position Bias without Intrusive Interventions": when several
logging rankers (or one ranker whose output changes between impressions)
show the same query–document pair :math:`(q, d)` at different positions,
the position is an *intervention* that nobody had to make. For positions
:math:`k \ne k'` the interventional set is

.. math::
    S_{k,k'} = \{(q, d) : d \text{ was shown for } q \text{ at } k \text{ and at } k'\}.

Under the position-based model and if the position at which :math:`(q,d)`
is shown does not depend on the user of the session (rankers assigned to
sessions at random, or ranking changes over time unrelated to the users),
the per-cell click-through rate :math:`y_{qdk} = c_{qdk}/n_{qdk}` estimates
:math:`\theta_k\gamma_{qd}`, so weighted sums over the *same* set

.. math::
    \hat c_k^{k,k'} = \sum_{(q,d)\in S_{k,k'}} w_{qd}\,y_{qdk}, \qquad
    \hat c_{k'}^{k,k'} = \sum_{(q,d)\in S_{k,k'}} w_{qd}\,y_{qdk'}

have ratio :math:`\theta_{k'}/\theta_k` in expectation (Agarwal et al. (2019a), Eq. 6–9;
their propensity weights :math:`1/\sum_j n_j\pi_j(k\mid q,d)` reduce to these
per-cell rates for deterministic rankers). We use
:math:`w_{qd} = n_{qdk} n_{qdk'}/(n_{qdk}+n_{qdk'})` (``weighting="harmonic"``,
fewer noisy singletons; any weight that does not depend on clicks keeps the
estimator consistent) or :math:`w_{qd} = 1` (``"uniform"``, as in the paper).

Estimators
    * **pivot**: :math:`\hat\theta_k/\hat\theta_1 = \hat c_k^{1,k} / \hat c_1^{1,k}`.
    * **adjacent** chain: :math:`\hat\theta_k/\hat\theta_1 =
      \prod_{j<k}\hat c_{j+1}^{j,j+1}/\hat c_j^{j,j+1}`.
    * **allpairs** (Agarwal et al. (2019a), §4.3): maximize
      :math:`\sum_{k\ne k'} \hat c_k^{k,k'}\log(\theta_k r_{k,k'}) + (\tilde n^{k,k'} -
      \hat c_k^{k,k'})\log(1-\theta_k r_{k,k'})` over :math:`\theta` and symmetric
      relevances :math:`r_{k,k'}` (:math:`\tilde n^{k,k'} = \sum w_{qd}`), with
      scipy's L-BFGS-B.

Intervals
    The unit of independent data is the :math:`(q, d)` pair (its impressions at
    different positions come from different sessions). Pivot uses the
    delete-one-pair jackknife of :math:`\log\hat\theta_k`,
    :math:`\frac{G-1}{G}\sum_g (\Delta_g - \bar\Delta)^2` with
    :math:`\Delta_g` the change of the log ratio when pair :math:`g` is left
    out (closed form, vectorized). The plain linearized (sandwich) version
    undercovers when a set has few pairs: 86–95% for nominal 95% in the
    benchmark. The adjacent chain uses the bias-reduced linearization (CR2 of
    Bell & McCaffrey (2002)): pair :math:`g`'s linearized influence on link
    :math:`l`, :math:`u_{lg} = b_{lg}/b_l - a_{lg}/a_l` (:math:`a_{lg}`,
    :math:`b_{lg}` its terms of the link's :math:`\hat c` sums), divided by
    :math:`\sqrt{1 - h_{lg}}` with the leverage
    :math:`h_{lg} = (a_{lg}/a_l + b_{lg}/b_l)/2`, summed over the links of the
    chain and then squared and summed over pairs. The jackknife (its changes
    are :math:`\approx u_{lg}/(1 - h_{lg})`) is conservative on every link
    and catches only part of the negative covariance of consecutive links
    (which share the clicks of their middle position): on the chain it was
    13–23% too large on average over 4,000 simulated logs and covered up to
    0.976; CR2 is within 2–8% of the Monte Carlo variance.
    AllPairs uses the delete-one-:math:`(q,d)` jackknife of the MLE
    with one Newton step per deleted cluster (the "CR3" cluster variance):
    :math:`\Delta_g = (H - H_g)^{-1} s_g`, :math:`H` the observed information
    (Hessian of the negative log-likelihood), :math:`H_g` and :math:`s_g` the
    information and score of cluster :math:`g`, and the variance
    :math:`\frac{G-1}{G}\sum_g (\Delta_g - \bar\Delta)(\Delta_g - \bar\Delta)^\top`.
    The sandwich :math:`H^{-1} (\sum_g s_g s_g^\top) H^{-1}` it replaces is the
    same without :math:`H_g`, and was too narrow with few clusters (0.90
    coverage at position 3). The plain inverse Hessian would be
    narrower still: the same clicks
    enter up to :math:`K-1` interventional sets. Clicks of different documents
    in one session are treated as independent (they are, given the query, under
    the PBM).

    These variances come from a few clusters (10-25 (query, doc) pairs per set
    is common), so they are noisy themselves: with the normal quantile the
    intervals covered 0.89-0.91 at positions 3-5 (pivot) although the SEs were
    right on average. The intervals use the Student-t quantile on
    :math:`G - 1` degrees of freedom (:math:`G` the clusters of a set; for the
    adjacent chain and for AllPairs Satterthwaite's effective number of
    clusters :math:`3 (\sum_g d_g^2)^2 / \sum_g d_g^4` of the per-pair values
    :math:`d_g`, at most :math:`G - 1`, which is small when a few (query, doc)
    pairs carry most of a position's variance).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from scipy import optimize, sparse
from scipy.sparse.csgraph import connected_components

from .._core._validation import EstimationError, InputError, check_choice
from ..engine import counts, is_spark
from ._result import Propensities
from ._stats import (
    BUCKET,
    BY_BUCKET,
    add_bucketed_total,
    as_lazy,
    finish,
    grouped_counts,
    require_columns,
    resolve_K,
    to_stats,
    with_buckets,
)

__all__ = [
    "harvest",
    "harvest_pivot",
    "harvest_adjacent",
    "harvest_allpairs",
    "cell_statistics",
    "interventional_pairs",
    "harvest_from_cells",
]


def cell_statistics(
    lf: Any, *, buckets: int = 0, seed: int = 0, by: tuple[str, ...] = (),
    pooled_buckets: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Clicks and impressions per (query, doc, position) cell, with a (query, doc) index.

    One streaming aggregation; memory grows with the number of cells, not
    with the log. Returns arrays ``g`` (0-based index of the (query, doc)
    pair, sorted), ``position``, ``n``, ``c`` and the scalar ``n_sessions``
    (rows at position 1: every session shows position 1), plus per-bucket
    sums with ``buckets`` (see :func:`._stats.to_stats`), which take a second
    pass over the log in batches (:func:`_cells_by_bucket`). ``by``: columns that
    split every cell further (the contexts of :mod:`._context`); the result then
    also holds their arrays and, under ``"sessions_by"``, the sessions of each of
    their values (a table with ``n_sessions``, and the bucket with ``buckets``). Their
    values come from a pass over the first positions, and each one's counts are columns
    of the (query, doc, position) groups (:func:`_context_counts`), so that memory
    stays that of the pooled cells. ``pooled_buckets``: the per-bucket sums of the cells
    without ``by`` only (one row per (query, doc, position), in order), for a caller
    that bootstraps the pooled estimate alone.
    """
    require_columns(lf, ("session", "query", "doc", "position", "click"), what="harvesting/EM")
    keys = ["query", "doc", "position", *by]
    if is_spark(lf):  # the same counts from two aggregations on the cluster
        cells = counts(lf, keys)
        sess = counts(lf, list(by), where={"position": 1}, buckets=buckets, seed=seed)
        sess = sess.select(*by, *([BUCKET] if buckets else []), n_sessions=pl.col("n"))
    else:
        first = with_buckets(lf.filter(pl.col("position") == 1), buckets, seed)
        n_sess = pl.len().cast(pl.Float64).alias("n_sessions")
        groups = [*by, *([BUCKET] if buckets else [])]
        sess = first.group_by(groups).agg(n_sess) if groups else first.select(n_sess)
        if by:  # the contexts first (a pass over the first positions), then the cells
            sess = sess.collect(engine="streaming")
            cells = _context_counts(lf, keys[:3], by, sess.select(by).unique())
            if cells is None:
                cells = grouped_counts(lf, keys).collect(engine="streaming")
        else:
            cells, sess = pl.collect_all([grouped_counts(lf, keys), sess], engine="streaming")
    out = to_stats(cells, keys, ["n", "c"])
    bucket_keys = keys[:3] if pooled_buckets else keys
    if buckets and is_spark(lf):
        out[BY_BUCKET] = to_stats(
            counts(lf, bucket_keys, buckets=buckets, seed=seed), bucket_keys, ["n", "c"], buckets
        )[BY_BUCKET]
    elif buckets:
        table = cells.select(bucket_keys).unique(maintain_order=True)  # cells are sorted
        out[BY_BUCKET] = _cells_by_bucket(lf, table, buckets, seed)
    if by:
        out["sessions_by"] = sess
    add_bucketed_total(out, "n_sessions", sess, "n_sessions", buckets)
    q, d = out.pop("query"), out.pop("doc")
    new = np.ones(q.size, dtype=bool)
    new[1:] = (q[1:] != q[:-1]) | (d[1:] != d[:-1])
    out["g"] = np.cumsum(new) - 1
    out["position"] = out["position"].astype(np.int64)
    return out


#: Most contexts whose cells are counted as columns of the (query, doc, position) groups.
WIDE_CONTEXTS = 100


def _context_counts(
    lf: pl.LazyFrame, keys: list[str], by: tuple[str, ...], contexts: pl.DataFrame
) -> pl.DataFrame | None:
    """:func:`~clickrank.engine.polars.grouped_counts` of ``keys`` and ``by``, counted as
    one pair of columns per context (a row of ``contexts``) of the ``keys`` groups.

    Polars' streaming group-by holds memory that grows with the log when the groups
    are split further by context; counting each context as a column keeps the groups
    those of the pooled cells. None when there are more than :data:`WIDE_CONTEXTS`
    contexts or a row's context is not among ``contexts`` (the contexts of the first
    positions): the caller groups by the context columns instead.
    """
    if contexts.height > WIDE_CONTEXTS:
        return None
    rows = contexts.rows()
    masks = [
        pl.all_horizontal(
            [
                pl.col(c).is_null() if v is None else pl.col(c) == v
                for c, v in zip(by, row, strict=True)
            ]
        )
        for row in rows
    ]
    click = pl.col("click").cast(pl.Boolean)
    wide = (
        lf.group_by(keys)
        .agg(
            pl.len().alias("_n"),
            *[m.sum().alias(f"_n{i}") for i, m in enumerate(masks)],
            *[(m & click).sum().alias(f"_c{i}") for i, m in enumerate(masks)],
        )
        .collect(engine="streaming")
    )
    counted = wide.select(pl.sum_horizontal(f"_n{i}" for i in range(len(rows)))).to_series()
    if not (counted == wide["_n"]).all():
        return None  # a context that no session's first position shows
    parts = [
        wide.filter(pl.col(f"_n{i}") > 0).select(
            *keys,
            *[pl.lit(v, dtype=contexts.schema[c]).alias(c) for c, v in zip(by, row, strict=True)],
            n=pl.col(f"_n{i}").cast(pl.Float64),
            c=pl.col(f"_c{i}").cast(pl.Float64),
        )
        for i, row in enumerate(rows)
    ]
    return pl.concat(parts).sort([*keys, *by])


def _cells_by_bucket(
    lf: pl.LazyFrame, cells: pl.DataFrame, buckets: int, seed: int
) -> dict[str, Any]:
    """Per-bucket impressions and clicks of every cell: sparse ``[cells, buckets]`` matrices.

    The log, joined to the (small) cell table in polars' streaming engine,
    arrives in batches whose rows are counted into dense ``cells x buckets``
    arrays with ``numpy.bincount``. Memory is those arrays plus a few batches;
    a streaming group-by over (query, doc, position, bucket) holds several
    times more and is slower.
    """
    from .._core._random import STREAM_BOOTSTRAP, session_buckets

    size = cells.height * buckets
    n, c = np.zeros(size), np.zeros(size)
    rows = lf.join(
        cells.with_row_index("_cell").lazy(),
        on=cells.columns,
        how="inner",
        nulls_equal=True,
    ).select("_cell", "session", pl.col("click").cast(pl.Float64))
    keys: list[np.ndarray] = []
    clicks: list[np.ndarray] = []

    def flush() -> None:
        if keys:
            k = np.concatenate(keys)
            np.add(n, np.bincount(k, minlength=size), out=n)
            np.add(c, np.bincount(k, weights=np.concatenate(clicks), minlength=size), out=c)
            keys.clear()
            clicks.clear()

    for batch in rows.collect_batches(chunk_size=1 << 20):
        b = session_buckets(seed, batch["session"].to_numpy(), buckets, STREAM_BOOTSTRAP)
        keys.append(batch["_cell"].to_numpy().astype(np.int64) * buckets + b)
        clicks.append(batch["click"].to_numpy())
        if len(keys) == 8:  # one bincount per ~8M rows
            flush()
    flush()
    shape = (cells.height, buckets)
    return {"n": sparse.csr_matrix(n.reshape(shape)), "c": sparse.csr_matrix(c.reshape(shape))}


def interventional_pairs(
    cells: dict[str, np.ndarray], *, K: int, weighting: str = "harmonic"
) -> dict[str, np.ndarray]:
    """All (q,d) members of the interventional sets S_{k,k'} with k < k' <= K.

    Returns arrays ``g`` (cluster), ``k``, ``k2`` (positions, k < k2), ``w``
    (weight), ``y``/``y2`` (CTR of the cell at k / k2), ``n``/``n2``.
    """
    weighting = check_choice(weighting, ("harmonic", "uniform"), name="weighting")
    g, pos, n, c = cells["g"], cells["position"], cells["n"], cells["c"]
    keep = (pos <= K) & (n > 0)
    g, pos, n, c = g[keep], pos[keep], n[keep], c[keep]
    # cells are sorted by (g, position); pair every cell with each later cell of its g
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    size = np.diff(np.r_[starts, g.size])
    multi = size >= 2
    starts, size = starts[multi], size[multi]
    if starts.size == 0:
        empty = np.zeros(0)
        return {x: empty for x in ("g", "k", "k2", "w", "y", "y2", "n", "n2")}
    # left index i runs over every cell of a multi-position cluster but its last
    rep = size - 1
    i_idx = np.repeat(starts, rep) + _ranges(rep)
    # right partners: for left cell at offset o in a cluster of size m: o+1..m-1
    end = np.repeat(starts + size, rep)
    n_right = end - i_idx - 1
    left = np.repeat(i_idx, n_right)
    right = left + 1 + _ranges(n_right)
    nl, nr = n[left], n[right]
    w = nl * nr / (nl + nr) if weighting == "harmonic" else np.ones(left.size)
    return {
        "g": g[left],
        "k": pos[left],
        "k2": pos[right],
        "w": w,
        "y": c[left] / nl,
        "y2": c[right] / nr,
        "n": nl,
        "n2": nr,
    }


def _ranges(lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(m)`` for every m in ``lengths`` (vectorized)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - offsets


def _pair_sums(pairs: dict[str, np.ndarray], K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense [K, K] arrays: A[k,k2] = ĉ_k^{k,k2}, B[k,k2] = ĉ_{k2}^{k,k2}, W = Σw (k<k2)."""
    flat = (pairs["k"] - 1) * K + (pairs["k2"] - 1)
    A = np.bincount(flat, pairs["w"] * pairs["y"], minlength=K * K).reshape(K, K)
    B = np.bincount(flat, pairs["w"] * pairs["y2"], minlength=K * K).reshape(K, K)
    W = np.bincount(flat, pairs["w"], minlength=K * K).reshape(K, K)
    return A, B, W


def _jackknife_var(d: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Delete-one-cluster jackknife variance from per-row leave-one-out changes ``d``."""
    if d.shape[0] == 0:
        return np.zeros(d.shape[1])
    _, inv = np.unique(g, return_inverse=True)
    G = int(inv.max()) + 1
    D = np.zeros((G, d.shape[1]))
    np.add.at(D, inv, d)
    if G < 2:
        return np.full(d.shape[1], np.nan)
    with np.errstate(invalid="ignore"):
        return (G - 1) / G * ((D - D.mean(axis=0)) ** 2).sum(axis=0)


def _ratio_chain(
    pairs: dict[str, np.ndarray],
    K: int,
    links: list[tuple[int, int]],
    *,
    variance: str = "jackknife",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    r"""log θ_k as a sum of log(ĉ_{k2}/ĉ_k) over ``links`` leading to k; SE and df.

    ``links[k-2]`` is the (from, to) pair whose ratio brings position ``from``
    to position ``to == k`` (pivot: (1, k); adjacent: (k-1, k)).

    ``variance="jackknife"`` (pivot): the delete-one-(query, doc) jackknife,
    on :math:`G_l - 1` degrees of freedom for a link's :math:`G_l` pairs
    (combined over a chain by Satterthwaite's rule
    :math:`(\sum v_l)^2 / \sum v_l^2/(G_l - 1)`, :math:`v_l` the link's own
    jackknife variance).

    ``variance="cr2"`` (adjacent chain): the bias-reduced linearization
    (CR2 of Bell & McCaffrey (2002)). Pair :math:`g`'s influence on link
    :math:`l`'s log ratio is :math:`u_{lg} = b_{lg}/b_l - a_{lg}/a_l`
    (:math:`a_{lg} = w y` and :math:`b_{lg} = w y'` its terms of
    :math:`\hat c_{lo}` and :math:`\hat c_{hi}`), scaled by
    :math:`1/\sqrt{1 - h_{lg}}` with the leverage
    :math:`h_{lg} = (a_{lg}/a_l + b_{lg}/b_l)/2` (symmetric, so the ratio's
    direction does not matter), and summed over the links to :math:`k`
    before squaring: :math:`\hat V_k = \sum_g (\sum_{l \le k} u_{lg}/\sqrt{1 - h_{lg}})^2`.
    Summing per pair keeps the negative covariance of consecutive links,
    which share the clicks of their middle position. The jackknife (whose
    changes are :math:`\approx u_{lg}/(1 - h_{lg})`) over-estimated the
    chain's variance by 13-23%. Degrees of freedom: the effective
    number of clusters of those summed values :math:`D_g`,
    :math:`3 (\sum_g D_g^2)^2 / \sum_g D_g^4`, clipped to :math:`[1, G_k - 1]`
    (:math:`G_k` the pairs in the chain's links), as for AllPairs.
    """
    variance = check_choice(variance, ("jackknife", "cr2"), name="variance")
    A, B, _ = _pair_sums(pairs, K)
    log_theta = np.full(K, np.nan)
    log_theta[0] = 0.0
    reasons: dict[int, str] = {}
    infl = np.zeros((pairs["g"].size, K))
    member = np.zeros((pairs["g"].size, K), dtype=bool)  # row in a link of the chain to k
    used = np.zeros(pairs["g"].size, dtype=bool)
    ok = np.zeros(K, dtype=bool)
    ok[0] = True
    v_sum = np.zeros(K)  # summed per-link variances along the chain to k
    v_den = np.zeros(K)  # Satterthwaite's denominator, sum of v_l^2 / (G_l - 1)
    for lo, hi in links:  # at most K-1 links: a loop over positions, not data
        a, b = A[lo - 1, hi - 1], B[lo - 1, hi - 1]
        if not ok[lo - 1]:
            reasons[hi] = f"position {lo} (its link in the chain) is not identified"
            continue
        on = (pairs["k"] == lo) & (pairs["k2"] == hi)
        if not on.any():
            reasons[hi] = f"no (query, doc) pair was shown at both {lo} and {hi}"
            continue
        if a == 0:
            reasons[hi] = f"no clicks at {lo} on the (query, doc) pairs also shown at {hi}"
            continue
        ok[hi - 1] = True
        if b == 0:
            log_theta[hi - 1] = -np.inf
            continue
        log_theta[hi - 1] = log_theta[lo - 1] + np.log(b / a)
        d = _link_influence(pairs, a, b, variance)
        d = np.where(on, d, 0.0)
        infl[:, hi - 1] = infl[:, lo - 1] + d
        member[:, hi - 1] = member[:, lo - 1] | on
        used |= on
        if variance == "jackknife":
            v_l = float(_jackknife_var(d[on, None], pairs["g"][on])[0])
            g_l = int(np.unique(pairs["g"][on]).size)
            v_sum[hi - 1] = v_sum[lo - 1] + v_l
            v_den[hi - 1] = v_den[lo - 1] + (v_l * v_l / (g_l - 1) if g_l > 1 else np.inf)
    theta = np.exp(log_theta)
    se, df = _chain_se_df(variance, infl, member, used, v_sum, v_den, pairs["g"])
    return theta, se, df, reasons


def _link_influence(pairs: dict[str, np.ndarray], a: float, b: float, variance: str) -> np.ndarray:
    """Each row's change of a link's log ratio (jackknife or CR2): the chain's per-link step."""
    ag, bg = pairs["w"] * pairs["y"], pairs["w"] * pairs["y2"]
    with np.errstate(divide="ignore", invalid="ignore"):
        if variance == "jackknife":
            # change of the log ratio when pair g is left out
            d = np.log((b - bg) / (a - ag)) - np.log(b / a)
        else:  # CR2: linearized influence over sqrt(1 - leverage)
            h = 0.5 * (ag / a + bg / b)
            d = (bg / b - ag / a) / np.sqrt(np.where(h < 1, 1 - h, np.nan))
    return d


def _chain_se_df(
    variance: str,
    infl: np.ndarray,
    member: np.ndarray,
    used: np.ndarray,
    v_sum: np.ndarray,
    v_den: np.ndarray,
    g: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """SE and degrees of freedom of the chain's log theta: the last step of :func:`_ratio_chain`."""
    if variance == "jackknife":
        var = _jackknife_var(infl[used], g[used])
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(v_den > 0, v_sum * v_sum / v_den, np.inf)
        df[~np.isfinite(df) & (v_den > 0)] = np.nan
    else:
        var, df = _cr2_var_df(infl, member, g)
    se = np.sqrt(var)
    se[0] = 0.0
    df[0] = np.inf
    return se, df


def _cr2_var_df(
    infl: np.ndarray, member: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""CR2 variance :math:`\sum_g D_g^2` and effective clusters of per-row values ``infl``.

    ``infl[:, k]`` holds the rows' (already leverage-scaled) influence on
    position k, ``member[:, k]`` which rows enter it; rows of one
    (query, doc) pair ``g`` are summed to :math:`D_g` first. The degrees of
    freedom are :math:`3 (\sum D_g^2)^2 / \sum D_g^4` in :math:`[1, G_k - 1]`;
    fewer than two pairs give NaN.
    """
    K = infl.shape[1]
    if g.size == 0:
        return np.zeros(K), np.full(K, np.inf)
    _, inv = np.unique(g, return_inverse=True)
    G = int(inv.max()) + 1
    D = np.zeros((G, K))
    np.add.at(D, inv, infl)
    M = np.zeros((G, K))
    np.add.at(M, inv, member.astype(float))
    G_k = (M > 0).sum(axis=0)
    var = (D**2).sum(axis=0)
    s4 = (D**4).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(s4 > 0, 3 * var * var / s4, G_k - 1.0)
        df = np.clip(df, 1.0, np.maximum(G_k - 1.0, 1.0))
    few = G_k < 2
    var[few & (G_k > 0)] = np.nan
    df[few] = np.inf
    df[np.isnan(var)] = np.nan
    return var, df


def _allpairs_fit(
    pairs: dict[str, np.ndarray], K: int, *, max_iter: int = 2000
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str], list[str]]:
    r"""AllPairs maximum likelihood with a cluster-jackknife covariance (see module docstring).

    The degrees of freedom of position k's SE are Satterthwaite's for the
    jackknife sum: :math:`3 (\sum_g d_g^2)^2 / \sum_g d_g^4` (:math:`d_g` the
    centred per-cluster changes of :math:`\log\hat\theta_k`), the effective
    number of clusters, at most :math:`G - 1`.
    """
    A, B, W = _pair_sums(pairs, K)
    warns: list[str] = []
    lo_idx, hi_idx, reasons, zero = _allpairs_identified(A, B, W, K)
    free = [p for p in range(2, K + 1) if p not in reasons and p not in zero]
    col_of = {p: i for i, p in enumerate(free)}
    bad = np.zeros(K, dtype=bool)
    bad[[p - 1 for p in reasons]] = True
    keep_pair = ~bad[lo_idx] & ~bad[hi_idx]
    lo_idx, hi_idx = lo_idx[keep_pair], hi_idx[keep_pair]
    P = lo_idx.size
    n_par = len(free) + P
    # rows: side "lo" then side "hi" of every kept pair
    side_pos = np.r_[lo_idx, hi_idx] + 1
    Y = np.r_[A[lo_idx, hi_idx], B[lo_idx, hi_idx]]
    Wt = np.r_[W[lo_idx, hi_idx], W[lo_idx, hi_idx]]
    pair_col = len(free) + np.r_[np.arange(P), np.arange(P)]
    fixed_zero = np.isin(side_pos, zero)  # θ = 0 at zero-click positions: no information
    col_map = np.full(K + 1, -1, dtype=np.int64)
    col_map[free] = np.arange(len(free))
    rows = np.flatnonzero(col_map[side_pos] >= 0)
    cols = col_map[side_pos[rows]]
    X = sparse.csr_matrix(
        (np.ones(len(rows) + 2 * P), (np.r_[rows, np.arange(2 * P)], np.r_[cols, pair_col])),
        shape=(2 * P, n_par),
    )
    use = ~fixed_zero
    X_u, Y_u, W_u = X[use], Y[use], Wt[use]
    cap = 1.0 - 1e-10

    def nll(beta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = X_u @ beta
        mu = np.minimum(np.exp(eta), cap)
        f = -(Y_u * eta + (W_u - Y_u) * np.log1p(-mu)).sum()
        d = -(Y_u - (W_u - Y_u) * mu / (1 - mu))
        return float(f), X_u.T @ d

    beta0 = np.zeros(n_par)
    with np.errstate(divide="ignore", invalid="ignore"):
        ctr = np.where(Wt > 0, Y / Wt, 0.0)
    pair_ctr = 0.5 * (ctr[:P] + ctr[P:])
    beta0[len(free) :] = np.log(np.clip(pair_ctr, 1e-6, 0.5))
    res = optimize.minimize(
        nll,
        beta0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-10, "ftol": 1e-15},
    )
    if not res.success:
        warns.append(f"harvest-allpairs: the optimizer did not converge ({res.message})")
    beta = res.x
    eta = X_u @ beta
    mu = np.minimum(np.exp(eta), cap)
    if np.any(mu >= cap):
        warns.append("harvest-allpairs: a fitted click probability reached 1 (boundary)")
    # observed information (bread)
    h = (W_u - Y_u) * mu / (1 - mu) ** 2
    H = (X_u.T @ sparse.diags(h) @ X_u).toarray()
    cov, df_par = _allpairs_jackknife(pairs, lo_idx, hi_idx, K, X, beta, H, fixed_zero,
                                      len(free), col_map, side_pos, warns)  # fmt: skip
    theta, se, df = _allpairs_positions(K, col_of, beta, cov, df_par, zero)
    return theta, se, df, reasons, warns


def _allpairs_positions(
    K: int,
    col_of: dict[int, int],
    beta: np.ndarray,
    cov: np.ndarray,
    df_par: np.ndarray,
    zero: list[int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Theta, SE and df per position from the fit: the result step of :func:`_allpairs_fit`."""
    theta = np.full(K, np.nan)
    se = np.full(K, np.nan)
    df = np.full(K, np.inf)
    theta[0], se[0] = 1.0, 0.0
    for p, i in col_of.items():
        theta[p - 1] = np.exp(beta[i])
        se[p - 1] = np.sqrt(max(cov[i, i], 0.0))
        df[p - 1] = df_par[i]
    for p in zero:
        theta[p - 1] = 0.0
    return theta, se, df


def _allpairs_identified(
    A: np.ndarray, B: np.ndarray, W: np.ndarray, K: int
) -> tuple[np.ndarray, np.ndarray, dict[int, str], list[int]]:
    """Informative cells, unlinked and zero-click positions: the identification step of AllPairs."""
    lo_idx, hi_idx = np.nonzero((W > 0) & ((A + B) > 0))
    # identification: positions connected to 1 through informative pairs
    graph = sparse.coo_matrix((np.ones(lo_idx.size), (lo_idx, hi_idx)), shape=(K, K))
    _, comp = connected_components(graph, directed=False)
    clicks_at = np.zeros(K)
    np.add.at(clicks_at, lo_idx, A[lo_idx, hi_idx])
    np.add.at(clicks_at, hi_idx, B[lo_idx, hi_idx])
    reasons: dict[int, str] = {}
    zero: list[int] = []
    for p in range(2, K + 1):
        if comp[p - 1] != comp[0]:
            reasons[p] = (
                "no chain of (query, doc) pairs shown at several positions links it to position 1"
            )
        elif clicks_at[p - 1] == 0:
            zero.append(p)
    if clicks_at[0] == 0:
        raise EstimationError(
            "harvest-allpairs: no clicks at position 1 on any (query, doc) pair that was also "
            "shown elsewhere; position 1 cannot serve as the reference"
        )
    return lo_idx, hi_idx, reasons, zero


def _allpairs_jackknife(
    pairs: dict[str, np.ndarray],
    lo_idx: np.ndarray,
    hi_idx: np.ndarray,
    K: int,
    X: sparse.csr_matrix,
    beta: np.ndarray,
    H: np.ndarray,
    fixed_zero: np.ndarray,
    n_free: int,
    col_map: np.ndarray,
    side_pos: np.ndarray,
    warns: list[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-jackknife covariance and df of the theta parameters (``[n_free, n_free]``,
    ``[n_free]``): the after-fit step of AllPairs."""
    P = lo_idx.size
    cap = 1.0 - 1e-10
    # per-(q,d) scores (meat): each pair member contributes to both sides of its pair
    pk = _lookup_pairs(pairs, lo_idx, hi_idx, K)
    eta_full = X @ beta
    mu_full = np.minimum(np.exp(eta_full), cap)
    member = pk >= 0
    g = pairs["g"][member]
    pk_m = pk[member]
    w_m = pairs["w"][member]
    mu_lo, mu_hi = mu_full[pk_m], mu_full[P + pk_m]
    s_lo = w_m * (pairs["y"][member] - mu_lo) / (1 - mu_lo)
    s_hi = w_m * (pairs["y2"][member] - mu_hi) / (1 - mu_hi)
    # zero-click positions carry no parameter: drop their score rows
    s_lo = np.where(fixed_zero[pk_m], 0.0, s_lo)
    s_hi = np.where(fixed_zero[P + pk_m], 0.0, s_hi)
    seen = np.zeros(int(g.max()) + 1 if g.size else 0, dtype=bool)
    seen[g] = True
    ginv = (np.cumsum(seen) - 1)[g]  # the clusters with members, numbered in order
    G = int(ginv.max()) + 1 if ginv.size else 0
    # the clusters' scores U = S X [G, n_par]: a side's score goes to its pair's column and
    # to its position's theta column (the two ones of its row of X; none at position 1)
    n_par = X.shape[1]
    cols = [n_free + pk_m]
    scores = [s_lo + s_hi]
    for s_side, r in ((s_lo, pk_m), (s_hi, P + pk_m)):
        c = col_map[side_pos[r]]
        on = c >= 0
        cols.append(np.where(on, c, n_free + pk_m))
        scores.append(np.where(on, s_side, 0.0))
    rows = np.tile(ginv, 3) * n_par
    # delete-one-cluster jackknife, one Newton step per cluster (CR3): the change of beta
    # when cluster g is left out is (H - H_g)^-1 s_g, with H_g its share of the information;
    # each pair side adds its weight to H_g at (p, p) and, with a theta column t, at (t, t),
    # (t, p) and (p, t)
    curv = mu_full / (1 - mu_full) ** 2
    sides = []
    for y_side, off in ((pairs["y"][member], 0), (pairs["y2"][member], P)):
        r = off + pk_m
        hv = np.where(fixed_zero[r], 0.0, w_m * (1 - y_side) * curv[r])
        sides.append((ginv, col_map[side_pos[r]], pk_m, hv))
    try:
        if G < 2:
            raise np.linalg.LinAlgError
        Ud = np.bincount(rows + np.concatenate(cols), np.concatenate(scores),
                         minlength=G * n_par).reshape(G, n_par)  # fmt: skip
        # a cluster alone in its set takes that set's relevance with it: a tiny ridge keeps
        # the solve finite, and that block is decoupled from the theta block
        ridge = 1e-9 * max(float(np.max(np.diag(H))), 1e-300)
        D = _leave_one_out(sides, H, ridge, Ud, n_free)
        Dc = D - D.mean(axis=0)
        cov = (G - 1) / G * (Dc.T @ Dc)
        # Satterthwaite's degrees of freedom of each variance: the effective number of
        # clusters, 3 (sum d^2)^2 / sum d^4 (E d^4 = 3 var^2), at most G - 1
        s2, s4 = (Dc**2).sum(axis=0), (Dc**4).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            df_par = np.clip(np.where(s4 > 0, 3 * s2 * s2 / s4, G - 1), 1, G - 1)
    except np.linalg.LinAlgError:
        warns.append("harvest-allpairs: singular information matrix; no standard errors")
        cov = np.full((n_free, n_free), np.nan)
        df_par = np.full(n_free, np.inf)
    return cov, df_par


#: Entries of the cross block (clusters x theta columns x pairs) formed at a time.
JACKKNIFE_CHUNK = 1 << 22


def _leave_one_out(
    sides: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    H: np.ndarray,
    ridge: float,
    Ud: np.ndarray,
    n_free: int,
) -> np.ndarray:
    """The theta part of ``(H - H_g + ridge I)^-1 u_g`` for every cluster g ``[G, n_free]``.

    ``sides``: each pair side's (cluster, theta column or -1, pair, weight), its terms of
    H_g; ``Ud``: the clusters' scores ``[G, n_par]``, theta columns first. Every row of
    the design has one pair column, so the pair block of H and of H_g is diagonal, and
    the theta part is the solution of its Schur complement, an ``n_free`` system per
    cluster instead of an ``n_par`` one (formed for as many clusters at a time as keep the
    cross block within :data:`JACKKNIFE_CHUNK` entries).
    """
    G = Ud.shape[0]
    t_n, P = n_free, Ud.shape[1] - n_free
    T = t_n + 1  # a last theta column, dropped, takes the sides without one (position 1)
    step = max(1, JACKKNIFE_CHUNK // max(T * P, 1))
    g, t, pair, w = (np.concatenate([s[i] for s in sides]) for i in range(4))
    t = np.where(t >= 0, t, t_n)
    if G > step:  # chunks of clusters: their terms in cluster order
        order = np.argsort(g, kind="stable")
        g, t, pair, w = g[order], t[order], pair[order], w[order]
    H_tp = H[:t_n, t_n:]
    H_pp = np.diag(H)[t_n:] + ridge
    A0 = H[:t_n, :t_n] + ridge * np.eye(t_n)
    D = np.empty((G, t_n))
    for start in range(0, G, step):  # a loop over chunks of clusters
        stop = min(start + step, G)
        m = stop - start
        lo, hi = np.searchsorted(g, [start, stop]) if G > step else (0, g.size)
        gc, tc, pc, wc = g[lo:hi] - start, t[lo:hi], pair[lo:hi], w[lo:hi]
        d = H_pp - np.bincount(gc * P + pc, wc, minlength=m * P).reshape(m, P)
        row = gc * T + tc
        g_tt = np.bincount(row, wc, minlength=m * T).reshape(m, T)[:, :t_n]
        g_tp = np.bincount(row * P + pc, wc, minlength=m * T * P).reshape(m, T, P)[:, :t_n]
        A_tp = H_tp - g_tp  # H's cross block without the cluster's terms (contiguous)
        A_tt = np.broadcast_to(A0, (m, t_n, t_n)).copy()
        A_tt[:, np.arange(t_n), np.arange(t_n)] -= g_tt
        u_t, u_p = Ud[start:stop, :t_n], Ud[start:stop, t_n:]
        # the pair block's transpose is the cross block (H and H_g are symmetric)
        S = A_tt - (A_tp / d[:, None, :]) @ A_tp.transpose(0, 2, 1)
        rhs = u_t - (A_tp @ (u_p / d)[:, :, None])[:, :, 0]
        D[start:stop] = np.linalg.solve(S, rhs[:, :, None])[:, :, 0]
    return D


def _lookup_pairs(
    pairs: dict[str, np.ndarray], lo_idx: np.ndarray, hi_idx: np.ndarray, K: int
) -> np.ndarray:
    """Index of each pair member's (k, k2) among the kept pairs (-1 if dropped)."""
    table = np.full(K * K, -1, dtype=np.int64)
    table[lo_idx * K + hi_idx] = np.arange(lo_idx.size)
    return table[(pairs["k"] - 1) * K + (pairs["k2"] - 1)]


def harvest_from_cells(
    cells: dict[str, np.ndarray],
    *,
    estimator: str = "allpairs",
    K: int | None = None,
    weighting: str = "harmonic",
) -> Propensities:
    """Harvesting estimate from :func:`cell_statistics` output."""
    estimator = check_choice(estimator, ("allpairs", "pivot", "adjacent"), name="estimator")
    pos = cells["position"]
    if pos.size == 0:
        raise EstimationError("harvesting: the log is empty")
    K = resolve_K(K, int(pos.max()), f"harvest-{estimator}")
    pairs = interventional_pairs(cells, K=K, weighting=weighting)
    if pairs["g"].size == 0:
        raise EstimationError(
            "harvesting: no (query, doc) pair was shown at two different positions, so there "
            "are no interventional sets; position bias is not identified without interventions "
            "or ranking variation"
        )
    warns: list[str] = []
    if estimator == "pivot":
        theta, se, df, reasons = _ratio_chain(pairs, K, [(1, k) for k in range(2, K + 1)])
    elif estimator == "adjacent":
        theta, se, df, reasons = _ratio_chain(
            pairs, K, [(k - 1, k) for k in range(2, K + 1)], variance="cr2"
        )
    else:
        theta, se, df, reasons, warns = _allpairs_fit(pairs, K)
    flat = (pairs["k"] - 1) * K + (pairs["k2"] - 1)
    # impressions at each position of the (q, d) pairs that are in some interventional set
    paired = np.zeros(int(cells["g"].max()) + 1, dtype=bool)
    paired[pairs["g"]] = True
    in_sets = paired[cells["g"]] & (pos <= K)
    n_at = np.bincount(pos[in_sets] - 1, cells["n"][in_sets], minlength=K)[:K]
    n_sets = int(np.count_nonzero(np.bincount(flat, minlength=K * K)))
    return finish(
        theta,
        se,
        n_at,
        method=f"harvest-{estimator}",
        n_sessions=round(cells["n_sessions"]),
        reasons=reasons,
        warnings=warns,
        ci_method="t",
        df=df,
        info={
            "weighting": weighting,
            "n_query_doc_pairs": int(paired.sum()),
            "n_interventional_sets": n_sets,
            "interval": {
                "allpairs": "delete-one-(query, doc) jackknife (one Newton step), t on the "
                "effective number of pairs",
                "pivot": "delete-one-(query, doc) jackknife on log theta, t on G - 1 df",
                "adjacent": "CR2 (bias-reduced linearization) over (query, doc) pairs on "
                "log theta, t on their effective number",
            }[estimator],
            "reference": "Agarwal, Zaitsev, Wang, Li, Najork & Joachims, WSDM 2019",
        },
    )


def harvest(
    log: Any, *, estimator: str = "allpairs", K: int | None = None, weighting: str = "harmonic"
) -> Propensities:
    r"""Position bias by intervention harvesting (Agarwal et al. (2019a)).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log with ``query``, ``doc``, ``position``, ``click`` (and
        ``session``). No intervention is needed: the same (query, doc) must
        appear at different positions, e.g. logged by several rankers
        (``ranker`` column) or by a ranking that changes over time.
    estimator : {"allpairs", "pivot", "adjacent"}
        See the module docstring.
    K : int, optional
        Positions to estimate (default: the largest position in the log).
    weighting : {"harmonic", "uniform"}
        Weight of a (query, doc) pair in an interventional set.

    Returns
    -------
    Propensities
        ``theta[0] = 1``; ``se`` of log θ over (query, doc) pairs (jackknife; CR2 for
        ``adjacent``); t intervals.

    Raises
    ------
    EstimationError
        No (query, doc) shown at two positions, or no position identified.

    Notes
    -----
    For positions :math:`k \ne k'`, the interventional set
    :math:`S_{k,k'}` holds the (query, doc) pairs shown at both; with the
    per-cell click-through rates :math:`y_{qdk} = c_{qdk}/n_{qdk}` and weights
    :math:`w_{qd}` that do not depend on clicks,

    .. math::
        \hat c_k^{k,k'} = \sum_{(q,d) \in S_{k,k'}} w_{qd}\,y_{qdk},
        \qquad
        E\Bigl[\hat c_{k'}^{k,k'} \big/ \hat c_k^{k,k'}\Bigr] \approx \theta_{k'}/\theta_k

    (Agarwal et al. (2019a), Eq. 6–9). ``pivot`` takes
    :math:`\hat\theta_k/\hat\theta_1 = \hat c_k^{1,k}/\hat c_1^{1,k}`, ``adjacent``
    the product :math:`\prod_{j<k} \hat c_{j+1}^{j,j+1}/\hat c_j^{j,j+1}`, and
    ``allpairs`` maximizes the AllPairs likelihood

    .. math::
        \sum_{k \ne k'} \hat c_k^{k,k'} \log(\theta_k r_{k,k'})
        + \bigl(\tilde n^{k,k'} - \hat c_k^{k,k'}\bigr) \log(1 - \theta_k r_{k,k'}),
        \qquad \tilde n^{k,k'} = \sum_{(q,d) \in S_{k,k'}} w_{qd},

    over :math:`\theta` and symmetric :math:`r_{k,k'}` (Agarwal et al. (2019a),
    §4.3). Fang et al. (2019) extend the same harvesting to examination that
    depends on the query context.

    Assumes PBM clicks and that where a document is shown is independent of
    the user (e.g. rankers assigned to sessions at random). A ranker that
    reacts to the clicks of the same users (online learning) breaks it.
    """
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")
    return harvest_from_cells(
        cell_statistics(as_lazy(log)), estimator=estimator, K=K, weighting=weighting
    )


def harvest_pivot(log: Any, **kw: Any) -> Propensities:
    """:func:`harvest` with ``estimator="pivot"`` (ratios to position 1)."""
    return harvest(log, estimator="pivot", **kw)


def harvest_adjacent(log: Any, **kw: Any) -> Propensities:
    """:func:`harvest` with ``estimator="adjacent"`` (chain of neighbour ratios)."""
    return harvest(log, estimator="adjacent", **kw)


def harvest_allpairs(log: Any, **kw: Any) -> Propensities:
    """:func:`harvest` with ``estimator="allpairs"`` (AllPairs MLE)."""
    return harvest(log, estimator="allpairs", **kw)
