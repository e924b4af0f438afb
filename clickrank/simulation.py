r"""Click-log simulation: a logging policy, interventions and a click model over sessions.

:func:`simulate` draws ``n_sessions`` impressions. For each session it picks a
query (uniformly, or by a frequency array), lets the logging policy rank the
query's documents (:mod:`clickrank.policies`), optionally applies a
randomized intervention, and lets a click model
(:mod:`clickrank.clickmodels`) click on the displayed top ``K``. Everything
runs on dense ``[sessions, positions]`` arrays in chunks and becomes the long
click-log table (:mod:`clickrank.clicklog`) in one vectorized conversion.

Reproducibility
---------------
Every random draw is a counter-based function of ``(seed, session index,
stream)`` (:mod:`clickrank._random`), so the log does not depend on
``chunk_size``: the same seed gives the same bytes for any chunking, and
session ``i`` of a run is the same in a longer run.

Interventions
-------------
``Swap(fraction, k)``
    Swap the results at ranks 1 and ``k`` (Joachims, Swaminathan & Schnabel,
    WSDM 2017 §5.3). Under the PBM the click-through rate of the swapped-in
    rank-1 document at position ``k`` over that of rank-1 documents at
    position 1 estimates :math:`\theta_k / \theta_1`.
``RandPair(fraction, pivot)``
    Swap the result at the pivot rank with the result at a uniformly chosen
    other rank (Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018 §4,
    "RandPair"); ``pivot=None`` swaps a uniformly chosen pair of ranks.
``Randomize(fraction, k)``
    Shuffle the top ``k`` uniformly ("RandTop-k"; Wang et al. 2016, 2018;
    Joachims et al. 2017): CTR per position is then proportional to
    :math:`\theta_p` under the PBM.
``FairPairs(fraction)``
    Pair up adjacent ranks, starting at rank 1 or 2 with probability 1/2
    each ((1,2), (3,4), ... or (2,3), (4,5), ...), and swap each pair
    independently with probability 1/2 (Radlinski & Joachims, AAAI 2006).
    A click on the lower result of a pair with no click on the upper one is
    a preference free of presentation bias under the paper's assumptions
    (:func:`clickrank.targets.fair_pairs`).

Swapped sessions record the two exchanged positions in ``swap_pivot`` and
``swap_k`` (0 in other sessions), so estimators need not guess them.
FairPairs sessions record the first paired rank (1 or 2) in ``swap_pivot``
and the lower rank of the last complete pair in ``swap_k``: the pairs are
``(r, r + 1)`` for ``r = swap_pivot, swap_pivot + 2, ...`` with ``r + 1 <= swap_k``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np
import polars as pl

from ._io import (
    check_output,
    clean_stale,
    discard,
    first_foreign,
    output_errors,
    publish,
    record,
    remove_owned,
    temp_path,
)
from ._random import (
    STREAM_CLICK,
    STREAM_INTERVENTION,
    STREAM_INTERVENTION_DETAIL,
    STREAM_POLICY,
    STREAM_QUERY,
    _check_seed,
    session_bernoulli,
    session_state,
    session_uniforms,
    stream_key,
    uniform_at,
)
from ._validation import InputError, check_fraction, check_positive
from ._version import __version__
from .clicklog import _parquet_metadata
from .datasets import RankingData
from .policies import DeterministicPolicy, LoggingPolicy, MixturePolicy

__all__ = [
    "Intervention",
    "Swap",
    "RandPair",
    "Randomize",
    "FairPairs",
    "simulate",
    "estimate_log_bytes",
    "INTERVENTION_CATEGORIES",
]

INTERVENTION_CATEGORIES = ("none", "swap", "randpair", "randomized", "fairpairs")


@dataclass(frozen=True)
class Intervention:
    """Base of the randomized interventions; ``fraction`` of sessions receive it."""

    fraction: float

    label = "none"

    def _check(self, top_k: int) -> None:
        check_fraction(self.fraction, name=f"{type(self).__name__}.fraction")


@dataclass(frozen=True)
class Swap(Intervention):
    """Swap ranks 1 and ``k`` (Joachims et al. WSDM 2017 §5.3).

    Parameters
    ----------
    fraction : float
        Share of sessions swapped, in [0, 1].
    k : int, optional
        The rank swapped with rank 1 (2..top_k). None draws ``k`` uniformly
        from 2..n per session, ``n`` the number of displayed results.
        A session showing fewer than ``k`` results is left unswapped and
        recorded as ``none``.
    """

    k: int | None = None
    label = "swap"

    def _check(self, top_k: int) -> None:
        super()._check(top_k)
        if self.k is not None:
            k = check_positive(self.k, name="Swap.k", integer=True)
            if not 2 <= k <= top_k:
                raise InputError(f"Swap.k must be in 2..top_k={top_k}, got {self.k}")


@dataclass(frozen=True)
class RandPair(Intervention):
    """Swap the result at rank ``pivot`` with one at a uniformly chosen other rank.

    RandPair of Wang et al. (WSDM 2018 §4). With ``pivot=None`` both ranks of
    the pair are random (a uniformly chosen unordered pair of the displayed
    ranks). Sessions with fewer than two results (or than ``pivot``) are left
    unchanged and recorded as ``none``.
    """

    pivot: int | None = 1
    label = "randpair"

    def _check(self, top_k: int) -> None:
        super()._check(top_k)
        if self.pivot is not None:
            p = check_positive(self.pivot, name="RandPair.pivot", integer=True)
            if p > top_k:
                raise InputError(f"RandPair.pivot must be in 1..top_k={top_k}, got {self.pivot}")


@dataclass(frozen=True)
class Randomize(Intervention):
    """Shuffle the top ``k`` results uniformly (all ``k!`` orders equally likely).

    ``k=None`` shuffles every displayed result (the whole top ``K``).
    """

    k: int | None = None
    label = "randomized"

    def _check(self, top_k: int) -> None:
        super()._check(top_k)
        if self.k is not None:
            k = check_positive(self.k, name="Randomize.k", integer=True)
            if not 2 <= k <= top_k:
                raise InputError(f"Randomize.k must be in 2..top_k={top_k}, got {self.k}")


@dataclass(frozen=True)
class FairPairs(Intervention):
    r"""FairPairs: swap adjacent pairs of results at random (Radlinski & Joachims, AAAI 2006).

    In a FairPairs session the displayed ranks are paired from rank 1,
    ``(1,2), (3,4), ...``, or from rank 2, ``(2,3), (4,5), ...``, each with
    probability 1/2 (an odd last rank, and rank 1 when starting at 2, stay
    unpaired); then every pair is swapped independently with probability
    1/2. Each result moves by at most one rank, so the presented ranking
    stays close to the logging policy's ("minimally invasive").

    Within a pair, each of the two documents is on top equally often. If
    whether a user examines and clicks within a pair depends on the pair's
    ranks but not on which document is on top, the preference "lower clicked,
    upper not clicked" is then as likely to favour either document for equal
    relevance, and favours the more relevant one otherwise: it carries no
    presentation bias (Radlinski & Joachims 2006). The preferences are
    extracted by :func:`clickrank.targets.fair_pairs`.

    Parameters
    ----------
    fraction : float
        Share of sessions receiving FairPairs, in [0, 1]. A session whose
        drawn pairing has no complete pair (one result, or two results with
        pairing from rank 2) is left unchanged and recorded as ``none``.

    Notes
    -----
    Logged as intervention ``"fairpairs"`` with ``swap_pivot`` = the first
    paired rank (1 or 2) and ``swap_k`` = the lower rank of the last
    complete pair, so the pairs are ``(r, r + 1)``, ``r = swap_pivot,
    swap_pivot + 2, ...``, ``r + 1 <= swap_k``. Which pairs were swapped is
    not needed to extract the preferences and is not recorded.
    """

    label = "fairpairs"


def _fair_pairs_permutation(n: np.ndarray, d: np.ndarray, K: int) -> tuple[np.ndarray, ...]:
    """Column permutation ``[m, K]`` of FairPairs, its first paired rank and last paired rank.

    ``d`` holds the session's detail uniforms: ``d[:, 0]`` picks the start
    (rank 1 or 2), ``d[:, 1 + i]`` decides whether the pair whose upper rank
    is ``i + 1`` is swapped.
    """
    start = 1 + (d[:, 0] >= 0.5).astype(np.int64)  # 1 or 2, probability 1/2 each
    last = start + 2 * ((n - start + 1) // 2) - 1  # lower rank of the last complete pair
    upper = np.arange(1, K)[None, :]  # candidate upper ranks 1..K-1
    is_pair = (upper >= start[:, None]) & ((upper - start[:, None]) % 2 == 0)
    is_pair &= upper + 1 <= last[:, None]
    flip = is_pair & (d[:, 1:K] < 0.5)
    perm = np.broadcast_to(np.arange(K), (len(n), K)).copy()
    perm[:, :-1] += flip  # the upper slot takes the lower result
    perm[:, 1:] -= flip  # and the lower slot the upper one
    return perm, start, last


def _as_interventions(interventions: Any, top_k: int) -> list[Intervention]:
    if interventions is None:
        return []
    if isinstance(interventions, Intervention):
        interventions = [interventions]
    items = list(interventions)
    for it in items:
        if not isinstance(it, Intervention) or type(it) is Intervention:
            raise InputError(
                f"interventions must be Swap, RandPair, Randomize or FairPairs objects, got {it!r}"
            )
        it._check(top_k)
    total = sum(float(it.fraction) for it in items)
    if total > 1 + 1e-12:
        raise InputError(f"intervention fractions must sum to at most 1, got {total:g}")
    return items


# -- the steps on dense arrays -------------------------------------------------------


@nb.njit(cache=True)
def _uniform_pick(key: np.uint64, sessions: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[min(floor(u * n), n - 1)]`` with ``u`` the session's first draw."""
    n = table.shape[0]
    out = np.empty(sessions.shape[0], dtype=np.int64)
    for i in range(sessions.shape[0]):
        j = np.int64(uniform_at(session_state(key, sessions[i]), 0) * n)
        out[i] = table[min(j, n - 1)]
    return out


def _sample_queries(seed: int, sessions: np.ndarray, sampler: tuple) -> np.ndarray:
    """Query index per session: uniform over ``sampler[1]`` or inverse CDF ``sampler[1]``."""
    kind, table = sampler
    if kind == "uniform":
        key = stream_key(seed, STREAM_QUERY)
        return _uniform_pick(key, np.ascontiguousarray(sessions, dtype=np.uint64), table)
    u = session_uniforms(seed, sessions, 1, STREAM_QUERY)[:, 0]
    q = np.searchsorted(table, u, side="right")
    return np.minimum(q, len(table)).astype(np.int64)


def _apply_interventions(
    items: list[Intervention],
    rows: np.ndarray,
    seed: int,
    sessions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Apply interventions in place; return rows, codes, swap_pivot, swap_k."""
    S, K = rows.shape
    code = np.zeros(S, dtype=np.uint8)
    pivot = np.zeros(S, dtype=np.uint16)
    swap_k = np.zeros(S, dtype=np.uint16)
    if not items:
        return rows, code, pivot, swap_k
    v = session_uniforms(seed, sessions, 1, STREAM_INTERVENTION)[:, 0]
    bounds = np.cumsum([float(it.fraction) for it in items])
    which = np.searchsorted(bounds, v, side="right")  # == len(items) -> none
    n_shown = (rows >= 0).sum(axis=1)
    arange = np.arange(K)
    for i, it in enumerate(items):  # a loop over intervention kinds, not sessions
        idx = np.flatnonzero(which == i)
        if idx.size == 0:
            continue
        n = n_shown[idx]
        d = session_uniforms(seed, sessions[idx], K + 2, STREAM_INTERVENTION_DETAIL)
        cat = np.uint8(INTERVENTION_CATEGORIES.index(it.label))
        if isinstance(it, Randomize):
            m = n if it.k is None else np.minimum(n, int(it.k))
            ok = m >= 2
            keys = np.where(arange[None, :] < m[:, None], d[:, :K], arange[None, :] + 2.0)
            perm = np.argsort(keys, axis=1, kind="stable")
            sub = rows[idx]
            rows[idx] = np.take_along_axis(sub, perm, axis=1)
            code[idx[ok]] = cat
            continue
        if isinstance(it, FairPairs):
            perm, start, last = _fair_pairs_permutation(n, d, K)
            ok = last > start  # at least one complete pair
            rows[idx] = np.take_along_axis(rows[idx], perm, axis=1)
            code[idx[ok]] = cat
            pivot[idx[ok]] = start[ok]
            swap_k[idx[ok]] = last[ok]
            continue
        if isinstance(it, Swap):
            a = np.ones(idx.size, dtype=np.int64)
            if it.k is None:
                b = 2 + np.floor(d[:, 0] * (n - 1)).astype(np.int64)
                ok = n >= 2
            else:
                b = np.full(idx.size, int(it.k), dtype=np.int64)
                ok = n >= int(it.k)
        else:  # RandPair
            if it.pivot is None:
                a = 1 + np.floor(d[:, 0] * n).astype(np.int64)
                ok = n >= 2
            else:
                a = np.full(idx.size, int(it.pivot), dtype=np.int64)
                ok = n >= max(2, int(it.pivot))
            other = 1 + np.floor(d[:, 1] * (n - 1)).astype(np.int64)  # 1..n-1
            b = other + (other >= a)  # skip the pivot: uniform over the other ranks
            a, b = np.minimum(a, b), np.maximum(a, b)
        b = np.minimum(b, np.maximum(n, 1))  # only matters where not ok
        sel = idx[ok]
        a0, b0 = a[ok] - 1, b[ok] - 1
        ra = rows[sel, a0].copy()
        rows[sel, a0] = rows[sel, b0]
        rows[sel, b0] = ra
        code[sel] = cat
        pivot[sel] = a[ok]
        swap_k[sel] = b[ok]
    return rows, code, pivot, swap_k


# -- clicks ------------------------------------------------------------------------------

_MAX_GRADE = 1023  # larger or non-integer labels: click probabilities per chunk


@nb.njit(cache=True)
def _grade_bernoulli(
    key: np.uint64, sessions: np.ndarray, labels: np.ndarray, table: np.ndarray, step: int
) -> np.ndarray:
    """Clicks ``u < table[g, k]`` for cells with whole label ``g`` (NaN: the last row).

    ``u`` is draw ``k * step`` of the session, as in
    :func:`clickrank._random.session_bernoulli`; the row's probabilities are
    looked up first so that the hashing loop stays vectorized.
    """
    S, K = labels.shape
    empty = table.shape[0] - 1
    out = np.empty((S, K), dtype=np.bool_)
    p = np.empty(K, dtype=np.float64)
    for i in range(S):
        for k in range(K):
            y = labels[i, k]
            p[k] = table[empty if np.isnan(y) else np.int64(y), k]
        st = session_state(key, sessions[i])
        for k in range(K):
            out[i, k] = uniform_at(st, k * step) < p[k]
    return out


def _grade_table(model: Any, y: np.ndarray, K: int) -> np.ndarray | None:
    """``P(click | grade g, position k)`` for grades ``0..max(y)`` plus a row for empty slots.

    None when the labels are not small whole grades or the model rejects one
    of the grades (then the probabilities are computed chunk by chunk, so an
    error is raised only if such a label is displayed, as in the generic path).
    """
    if y.size == 0:
        return None
    lo, hi = float(y.min()), float(y.max())
    if lo < 0 or hi > _MAX_GRADE or not np.array_equal(y, np.floor(y)):
        return None
    grid = np.empty((int(hi) + 2, K))
    grid[:-1] = np.arange(int(hi) + 1, dtype=np.float64)[:, None]
    grid[-1] = np.nan
    try:
        table = np.asarray(model.click_probabilities(grid), dtype=np.float64)
    except InputError:
        return None
    return np.ascontiguousarray(table) if table.shape == grid.shape else None


def _click_sampler(
    model: Any, y: np.ndarray, K: int
) -> Callable[[int, np.ndarray, np.ndarray], np.ndarray]:
    """``clicks(seed, sessions, labels) -> bool [S, K]`` for ``model``.

    The generic path materializes the session uniforms ``[S, K, n_uniforms]``
    and calls ``model.sample``. A model with ``independent_clicks`` clicks
    cell by cell iff ``u[..., 0] < click_probabilities(labels)``, so the
    comparison is fused with the hashing (:func:`clickrank._random.session_bernoulli`,
    same draws, same bits) and, for whole-grade labels, the probabilities are
    read from a ``[grades + 1, K]`` table evaluated once by the model.
    """
    n_u = int(model.n_uniforms)
    if not (getattr(model, "independent_clicks", False) is True and n_u >= 1):

        def generic(seed: int, sessions: np.ndarray, labels: np.ndarray) -> np.ndarray:
            u = session_uniforms(seed, sessions, K * n_u, STREAM_CLICK)
            return np.asarray(model.sample(labels, u.reshape(len(sessions), K, n_u)))

        return generic
    table = _grade_table(model, y, K)

    def fused(seed: int, sessions: np.ndarray, labels: np.ndarray) -> np.ndarray:
        if table is None:
            p = model.click_probabilities(labels)
            return session_bernoulli(seed, sessions, p, STREAM_CLICK, step=n_u)
        key = stream_key(seed, STREAM_CLICK)
        return _grade_bernoulli(key, sessions, labels, table, n_u)

    return fused


# -- the click-log table ---------------------------------------------------------------


def _per_row(values: np.ndarray, K: int, sess_of_row: np.ndarray | None) -> np.ndarray:
    """A per-session array repeated onto the rows of the session's results."""
    return np.repeat(values, K) if sess_of_row is None else values[sess_of_row]


def _session_column(
    values: np.ndarray, name: str, dtype: pl.DataType, K: int, sess_of_row: np.ndarray | None
) -> pl.Series | pl.Expr:
    """Repeat a per-session value onto its rows (a literal when all values agree)."""
    if len(values) and (values == values[0]).all():
        return pl.lit(values[0].item(), dtype=dtype).alias(name)
    return pl.Series(name, _per_row(values, K, sess_of_row), dtype=dtype)


def _categorical(
    names: Sequence[str], codes: np.ndarray, name: str, K: int, sess_of_row: np.ndarray | None
) -> pl.Series | pl.Expr:
    if len(codes) and (codes == codes[0]).all():
        return pl.lit(names[int(codes[0])], dtype=pl.Categorical).alias(name)
    cats = pl.Series(name, list(names), dtype=pl.String).cast(pl.Categorical)
    return cats.gather(_per_row(codes.astype(np.uint32), K, sess_of_row))


def _session_ids(
    ids: np.ndarray | pl.Series,
    index: np.ndarray,
    name: str,
    K: int,
    sess_of_row: np.ndarray | None,
) -> pl.Series:
    """``ids[index]`` per session, repeated onto the session's rows."""
    if isinstance(ids, pl.Series):
        return ids.gather(_per_row(index, K, sess_of_row)).alias(name)
    return pl.Series(name, _per_row(np.take(ids, index), K, sess_of_row))


def _row_ids(ids: np.ndarray | pl.Series, rows: np.ndarray, name: str) -> pl.Series:
    """``ids[rows]`` (rows >= 0)."""
    if isinstance(ids, pl.Series):
        return ids.gather(rows).alias(name)
    return pl.Series(name, np.take(ids, rows))


def _id_source(ids: np.ndarray) -> np.ndarray | pl.Series:
    """Numeric ids stay numpy (fast gathers); string ids become a polars String series."""
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64, copy=False)
    return pl.Series(ids.astype(str) if ids.dtype.kind != "O" else ids, dtype=pl.String)


def _positions(S: int, K: int) -> np.ndarray:
    """Positions ``1..K`` of ``S`` full sessions, read-only (the log chunks share it)."""
    pos = np.tile(np.arange(1, K + 1, dtype=np.uint16), S)
    pos.flags.writeable = False
    return pos


def _to_table(
    *,
    sessions: np.ndarray,
    queries: np.ndarray,
    rows: np.ndarray,
    clicks: np.ndarray,
    labels: np.ndarray,
    icode: np.ndarray,
    rcode: np.ndarray,
    pivot: np.ndarray,
    swap_k: np.ndarray,
    qids: np.ndarray | pl.Series,
    docs: np.ndarray | pl.Series,
    ranker_names: Sequence[str],
    positions: np.ndarray | None = None,
) -> pl.DataFrame:
    """Dense ``[S, K]`` arrays -> the long click-log table, one vectorized pass.

    Empty slots (``rows == -1``) are dropped; as lists are filled from the
    top, the remaining positions of every session are ``1..n``. Numeric
    columns hand their numpy buffers to polars without a copy; ``positions``
    (from :func:`_positions`, at least ``S`` sessions long) is shared by the
    chunks of one run.
    """
    S, K = rows.shape
    flat = rows.reshape(-1)
    if flat.min() >= 0:  # no empty slot (a reduction, no [S, K] temporary)
        keep = sess_of_row = None
        full = positions is not None and len(positions) >= S * K
        pos = positions[: S * K] if full else _positions(S, K)
    else:
        keep = np.flatnonzero(flat >= 0)
        sess_of_row = keep // K
        pos = (keep % K + 1).astype(np.uint16)
        flat = flat[keep]

    def cell(a: np.ndarray) -> np.ndarray:
        a = a.reshape(-1)
        return a if keep is None else a[keep]

    cols = [
        pl.Series("session", _per_row(sessions, K, sess_of_row), dtype=pl.UInt64),
        _session_ids(qids, queries, "query", K, sess_of_row),
        pl.Series("position", pos, dtype=pl.UInt16),
        _row_ids(docs, flat, "doc"),
        pl.Series("click", cell(clicks), dtype=pl.Boolean),
        _categorical(INTERVENTION_CATEGORIES, icode, "intervention", K, sess_of_row),
        _categorical(ranker_names, rcode, "ranker", K, sess_of_row),
        pl.Series("label", cell(labels), dtype=pl.Float64),
        _session_column(pivot, "swap_pivot", pl.UInt16, K, sess_of_row),
        _session_column(swap_k, "swap_k", pl.UInt16, K, sess_of_row),
    ]
    # constant columns stay literals: polars keeps them as one scalar, not n copies
    table = pl.DataFrame([c for c in cols if isinstance(c, pl.Series)])
    constants = [c for c in cols if isinstance(c, pl.Expr)]
    if constants:
        order = [c.name if isinstance(c, pl.Series) else c.meta.output_name() for c in cols]
        table = table.with_columns(constants).select(order)
    return table


# -- the entry point ------------------------------------------------------------------


def _resolve_click_model(click_model: Any) -> Any:
    if isinstance(click_model, str):
        from .clickmodels import make_click_model

        return make_click_model(click_model)
    for attr in ("n_uniforms", "sample"):
        if not hasattr(click_model, attr):
            raise InputError(
                f"click_model must be a model name or a click model (with n_uniforms, "
                f"sample()); got {type(click_model).__name__} without {attr!r}"
            )
    n_u = click_model.n_uniforms
    if isinstance(n_u, bool) or not isinstance(n_u, (int, np.integer)) or n_u < 0:
        raise InputError(f"click_model.n_uniforms must be an integer >= 0, got {n_u!r}")
    return click_model


def _query_sampler(data: RankingData, query_frequency: Any) -> tuple[str, np.ndarray]:
    """("uniform", query indices with documents) or ("cdf", cumulative weights)."""
    nonempty = (data.lengths > 0).astype(np.float64)
    if query_frequency is None:
        return "uniform", np.flatnonzero(nonempty).astype(np.int64)
    else:
        w = np.asarray(query_frequency, dtype=np.float64)
        if w.shape != (data.n_queries,):
            raise InputError(
                f"query_frequency must have one weight per query ({data.n_queries}), "
                f"got shape {w.shape}"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise InputError("query_frequency must hold finite non-negative weights")
        w = w * nonempty
    total = w.sum()
    if total <= 0:
        raise InputError("query_frequency gives no weight to any query with documents")
    cdf = np.cumsum(w) / total
    return "cdf", cdf[:-1]


def simulate(
    data: RankingData,
    *,
    policy: LoggingPolicy,
    click_model: Any,
    n_sessions: int,
    interventions: Intervention | Sequence[Intervention] | None = None,
    top_k: int = 10,
    query_frequency: np.ndarray | None = None,
    seed: int = 0,
    chunk_size: int = 200_000,
    first_session: int = 0,
    out: str | os.PathLike | None = None,
    overwrite: bool = False,
    progress: bool | Callable[[int], None] = False,
    check_space: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Simulate a click log.

    For session :math:`s` (index ``first_session + i``): draw a query
    :math:`q_s` (uniform over queries with documents, or proportional to
    ``query_frequency``); let ``policy`` display its top ``top_k``
    documents; with probability ``fraction`` apply one of the
    ``interventions`` (the fractions partition the sessions); draw clicks
    from ``click_model`` given the true labels of the displayed documents.

    Parameters
    ----------
    data : RankingData
        Labelled data; the labels drive the clicks and are logged in ``label``.
    policy : LoggingPolicy, ranker or scores
        See :mod:`clickrank.policies`. A ranker with ``predict(X)`` or an array
        of per-row scores is shown deterministically (``DeterministicPolicy``).
    click_model : click model or str
        An object following the :class:`clickrank.clickmodels.ClickModel`
        protocol, or a name for ``clickrank.clickmodels.make_click_model``.
    n_sessions : int
        Number of impressions, >= 1.
    interventions : Swap, RandPair, Randomize, FairPairs or a sequence of them
        Fractions must sum to at most 1.
    top_k : int
        Displayed results per session; must not exceed the longest query.
        Shorter queries show all their documents (positions ``1..n``).
    query_frequency : array ``[n_queries]``, optional
        Non-negative query weights (e.g. a Zipf law); uniform by default.
    seed : int
        Same seed, same log, for any ``chunk_size``.
    chunk_size : int
        Sessions simulated at once; memory grows with ``chunk_size * top_k``
        (roughly 100-200 bytes per displayed result). The log does not depend on it.
    first_session : int
        Index of the first session (to extend a log with fresh sessions).
    out : path, optional
        Stream the log to parquet instead of returning it in memory: a path
        ending in ``.parquet`` gets one file, any other path a folder of part
        files (one per :data:`PART_SESSIONS` sessions). Written atomically;
        row groups of :data:`ROW_GROUP_ROWS` rows make the bytes independent of
        ``chunk_size``.
    overwrite : bool
        Replace an existing ``out``; only a log clickrank wrote is ever replaced.
    progress : bool or callable
        True draws a progress bar on stderr; a callable receives the number
        of sessions finished after every chunk.
    check_space : bool
        Before simulating, compare the estimated size of the log
        (:func:`estimate_log_bytes`) with the free disk space (``out``) or the
        available memory, and refuse if it does not fit. False skips the check.
    metadata : dict, optional
        With ``out``: JSON entries added to the description that every parquet
        file of the log carries (:func:`clickrank.clicklog.read_log_metadata`);
        they override the entries simulate records itself: the data, the
        number of sessions, ``top_k``, the seed, the click model, the
        interventions, the policy's ranker names and, when the policy shows a
        fitted :class:`~clickrank.production.ProductionRanker`, its quality
        (``logger_quality``, :meth:`~clickrank.production.ProductionRanker.quality`
        on ``data``).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        The log (DESIGN §2; see :mod:`clickrank.clicklog`), sorted by
        ``session`` then ``position``; with ``out``, a LazyFrame scanning it.

    Raises
    ------
    InputError
        For bad arguments, naming the argument; an ``out`` that exists (without
        ``overwrite``), that clickrank did not write, or that does not fit.

    Examples
    --------
    >>> from clickrank.datasets import synthetic
    >>> from clickrank.policies import DeterministicPolicy
    >>> from clickrank.clickmodels import make_click_model
    >>> data = synthetic(20, 10, seed=0)
    >>> log = simulate(data, policy=DeterministicPolicy(data.X[:, 0]),
    ...                click_model=make_click_model("pbm"), n_sessions=100, top_k=5)
    >>> log.shape
    (500, 10)
    """
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("data has no labels (data.y is None); clicks are simulated from labels")
    if not isinstance(policy, LoggingPolicy):
        if not (hasattr(policy, "predict") or isinstance(policy, (np.ndarray, list, tuple))):
            raise InputError(
                "policy must be a LoggingPolicy (see clickrank.policies), a ranker with "
                f"predict(X), or an array of scores; got {type(policy).__name__}"
            )
        policy = DeterministicPolicy(policy)  # a plain ranker or scores: show its top k
    seed = _check_seed(seed)
    n_sessions = check_positive(n_sessions, name="n_sessions", integer=True)
    chunk_size = check_positive(chunk_size, name="chunk_size", integer=True)
    first_session = int(first_session)
    if first_session < 0:
        raise InputError(f"first_session must be >= 0, got {first_session}")
    top_k = check_positive(top_k, name="top_k", integer=True)
    longest = int(data.lengths.max()) if data.n_queries else 0
    if top_k > longest:
        raise InputError(
            f"top_k={top_k} is larger than the longest query in the data "
            f"({longest} documents); use top_k <= {longest}"
        )
    if top_k > 65535:
        raise InputError(f"top_k must fit a UInt16 position, got {top_k}")
    items = _as_interventions(interventions, top_k)
    if out is None and metadata is not None:
        raise InputError("metadata is stored with the log on disk: give out=... too")
    writer = None
    if out is not None:
        need = estimate_log_bytes(n_sessions, top_k) if check_space else 0
        writer = _Writer(out, overwrite, need)
    elif check_space:
        _check_memory(n_sessions, top_k)
    model = _resolve_click_model(click_model)
    if writer is not None:
        writer.metadata = _parquet_metadata(
            {
                "format": "clickrank.log",
                "clickrank": __version__,
                "data": data.name,
                "n_queries": data.n_queries,
                "sessions": n_sessions,
                "first_session": first_session,
                "top_k": top_k,
                "seed": seed,
                "policy": list(policy.names),
                "click_model": repr(model),
                "interventions": [repr(i) for i in items],
                **({} if "logger_quality" in (metadata or {}) else _logger_quality(policy, data)),
                **dict(metadata or {}),
            }
        )
    sampler = _query_sampler(data, query_frequency)
    prepared = policy.prepare(data, top_k)
    names = tuple(prepared.names)
    qids, docs = _id_source(data.qid), _id_source(data.doc)
    y_ext = np.append(data.y, np.nan)  # row -1 (empty slot) reads NaN
    clicks_of = _click_sampler(model, data.y, top_k)

    bar = None
    if progress is True:
        from ._progress import progress as progress_bar

        bar = progress_bar(n_sessions, label="simulating", enabled=True)
        bar.__enter__()
        report = bar.update
    elif callable(progress):
        report = progress
    else:
        report = None

    positions = _positions(min(chunk_size, n_sessions), top_k)

    def chunks() -> Iterator[pl.DataFrame]:
        for start in range(first_session, first_session + n_sessions, chunk_size):
            stop = min(start + chunk_size, first_session + n_sessions)
            sessions = np.arange(start, stop, dtype=np.uint64)
            queries = _sample_queries(seed, sessions, sampler)
            rows, rcode = prepared.rank(queries, sessions, seed, STREAM_POLICY)
            rows, icode, pivot, swap_k = _apply_interventions(items, rows, seed, sessions)
            labels = np.take(y_ext, rows)  # row -1 reads the NaN appended
            clicks = clicks_of(seed, sessions, labels)
            yield _to_table(
                sessions=sessions,
                queries=queries,
                rows=rows,
                clicks=clicks,
                labels=labels,
                icode=icode,
                rcode=rcode,
                pivot=pivot,
                swap_k=swap_k,
                qids=qids,
                docs=docs,
                ranker_names=names,
                positions=positions,
            )
            if report is not None:
                report(stop - start)

    try:
        if writer is None:
            frames = list(chunks())
            return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)
        path = writer.run(chunks(), first_session)
        return pl.scan_parquet(path if path.is_file() else path / "*.parquet")
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _logger_quality(policy: LoggingPolicy, data: RankingData) -> dict[str, Any]:
    """``{"logger_quality": {name: quality}}`` for the fitted production rankers a policy shows.

    The quality (:meth:`~clickrank.production.ProductionRanker.quality`) is the
    ranker's NDCG@10 on ``data``, on the queries it was not trained on and on all.
    """
    parts = policy.policies if isinstance(policy, MixturePolicy) else [policy]
    found = {}
    for part in parts:
        ranker = getattr(part, "ranker", None)
        if callable(getattr(ranker, "quality", None)) and hasattr(ranker, "model_"):
            found[str(part.name)] = ranker.quality(data)
    return {"logger_quality": found} if found else {}


#: Sessions per part file when ``simulate(out=FOLDER)`` writes a folder of parquet parts.
PART_SESSIONS = 200_000
#: Rows per parquet row group: fixed, so the bytes of a log do not depend on ``chunk_size``.
ROW_GROUP_ROWS = 1 << 20
#: Rough size of a displayed result: in a parquet log (zstd) and in a polars DataFrame.
DISK_BYTES_PER_ROW = 3
MEMORY_BYTES_PER_ROW = 48


def estimate_log_bytes(n_sessions: int, top_k: int, *, on_disk: bool = True) -> int:
    """Rough size of a simulated log of ``n_sessions`` x ``top_k`` rows, on disk or in memory.

    Measured on clickrank's own logs (synthetic and LETOR data): about 1.6-2
    bytes per row as zstd parquet and 42-46 bytes per row as a polars
    DataFrame; the constants round these up (:data:`DISK_BYTES_PER_ROW`,
    :data:`MEMORY_BYTES_PER_ROW`).
    """
    per_row = DISK_BYTES_PER_ROW if on_disk else MEMORY_BYTES_PER_ROW
    return int(n_sessions) * int(top_k) * per_row


def _available_memory() -> int | None:
    """Bytes of memory available to new allocations (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def _check_memory(n_sessions: int, top_k: int) -> None:
    need = estimate_log_bytes(n_sessions, top_k, on_disk=False)
    avail = _available_memory()
    if avail is not None and need > avail:
        raise InputError(
            f"n_sessions={n_sessions:,} x top_k={top_k} would need about {need / 2**30:,.1f} GiB "
            f"of memory but {avail / 2**30:,.1f} GiB are available; stream the log to disk "
            "with out=..., simulate fewer sessions, or pass check_space=False"
        )


def _parts(chunks: Iterator[pl.DataFrame], first: int, size: int) -> Iterator[pl.DataFrame]:
    """Regroup session-ordered chunks into parts of ``size`` sessions each.

    Part ``j`` holds sessions ``first + j*size .. first + (j+1)*size - 1``,
    whatever the chunks were, so a folder of parts has the same files for any
    ``chunk_size``.
    """
    pending: list[pl.DataFrame] = []
    boundary = first + size
    for table in chunks:
        while table.height:
            cut = int(np.searchsorted(table["session"].to_numpy(), boundary))
            if cut == table.height:
                pending.append(table)
                break
            if cut:
                pending.append(table.slice(0, cut))
            if pending:
                yield pl.concat(pending, rechunk=False)
            pending = []
            table = table.slice(cut)
            boundary += size
    if pending:
        yield pl.concat(pending, rechunk=False)


class _Writer:
    """Writes chunks atomically: one parquet file (streamed) or a folder of part files.

    A single file is written by polars' streaming engine from a Python source
    that yields the chunks (``polars.io.plugins.register_io_source``), so only
    a chunk or two is in memory; a folder gets one part file per
    :data:`PART_SESSIONS` sessions. Row groups have :data:`ROW_GROUP_ROWS`
    rows, so the bytes do not depend on ``chunk_size``. Both go to a temporary
    name in the destination folder and are renamed into place at the end; on
    any error nothing is left behind. An existing ``out`` is replaced only with
    ``overwrite`` and only if clickrank wrote it (:func:`clickrank._io.check_output`).
    """

    def __init__(self, out: str | os.PathLike, overwrite: bool, need_bytes: int = 0) -> None:
        self.out = Path(out)
        self.metadata: dict[str, str] | None = None  # parquet key-value metadata of every file
        if not self.out.parent.is_dir():
            raise InputError(f"the folder of out ({self.out.parent}) does not exist")
        check_output(self.out, force=overwrite, what="out", need_bytes=need_bytes)

    def run(self, chunks: Iterator[pl.DataFrame], first_session: int) -> Path:
        clean_stale(self.out.parent)
        with output_errors(self.out):
            if self.out.suffix == ".parquet":
                return self._single(chunks)
            return self._folder(_parts(chunks, first_session, PART_SESSIONS))

    def _single(self, chunks: Iterator[pl.DataFrame]) -> Path:
        from polars.io.plugins import register_io_source

        tmp = temp_path(self.out)
        failure: list[BaseException] = []

        try:
            first = next(chunks)

            def source(with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
                try:
                    yield first
                    yield from chunks
                except BaseException as err:  # re-raised below with its own type
                    failure.append(err)
                    raise

            lazy = register_io_source(source, schema=first.schema)
            try:
                lazy.sink_parquet(
                    tmp, statistics=True, row_group_size=ROW_GROUP_ROWS, metadata=self.metadata
                )
            except BaseException:
                if failure:
                    raise failure[0] from None
                raise
            if self.out.is_dir():
                remove_owned(self.out)
            publish(tmp, self.out)
        except BaseException:
            discard(tmp)
            raise
        return self.out

    def _folder(self, parts: Iterator[pl.DataFrame]) -> Path:
        tmp = temp_path(self.out, folder=True)
        trash = None
        try:
            for i, table in enumerate(parts):
                part = tmp / f"part-{i:05d}.parquet"
                table.write_parquet(
                    part, statistics=True, row_group_size=ROW_GROUP_ROWS, metadata=self.metadata
                )
                record(part)
            if self.out.is_dir():
                bad = first_foreign(self.out)
                if bad is not None:  # changed since the check: keep it, drop the new log
                    raise InputError(
                        f"out {self.out}: {bad} was not written by clickrank; "
                        "the folder is left as it is"
                    )
                trash = temp_path(self.out, folder=True)
                os.replace(self.out, trash)  # onto the empty temporary folder
            elif self.out.exists():
                remove_owned(self.out)
            publish(tmp, self.out)
        except BaseException:
            discard(tmp)
            raise
        if trash is not None:
            discard(trash)
        return self.out
