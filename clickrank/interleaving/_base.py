"""Shared pieces of the interleaving methods: ranking matrices, inputs, the result base.

Every method works on *ranking matrices*: int64 ``[n_queries, width]`` arrays
whose row ``q`` lists the within-query document indices of query ``q`` from
rank 1 downwards, padded with ``-1``. :func:`rankings_from_scores` builds them
from per-row scores (stable descending order, DESIGN §2). An *impression* is
one interleaved list shown for one query; methods build many impressions at
once from the two ranking matrices and ``query[S]``, the query of each
impression, so no Python loop runs over impressions.

Outcome convention, all methods: ``+1`` ranker A wins the impression, ``-1``
ranker B wins, ``0`` tie (including impressions without clicks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .._core._segments import rank_order, to_padded, within_index
from .._core._validation import InputError, check_positive, check_qptr

__all__ = ["rankings_from_scores", "Interleaved", "prepare", "slot_ranks"]


def rankings_from_scores(scores: np.ndarray, qptr: np.ndarray, *, width: int | None = None):
    """Ranking matrix ``[n_queries, width]`` of within-query doc indices, ``-1`` padded.

    Parameters
    ----------
    scores : array ``[n_docs]``
        Ranker scores; higher ranks higher, ties keep row order.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    width : int, optional
        Keep only the top ``width`` documents of each query (default: all).

    Examples
    --------
    >>> rankings_from_scores(np.array([0.1, 0.9, 0.5, 2.0]), np.array([0, 3, 4])).tolist()
    [[1, 2, 0], [0, -1, -1]]
    """
    s = np.asarray(scores, dtype=np.float64)
    qptr = check_qptr(qptr, len(s))
    order = rank_order(s, qptr)
    local = within_index(qptr)[order]
    padded, _ = to_padded(local, qptr, fill=-1, width=width)
    return padded.astype(np.int64)


def _as_rankings(r, name: str) -> np.ndarray:
    arr = np.asarray(r)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.dtype.kind not in "iu":
        raise InputError(
            f"{name} must be an integer ranking matrix [n_queries, width], "
            f"got shape {arr.shape} dtype {arr.dtype}"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


@nb.njit(cache=True)
def _inverse(rankings: np.ndarray, n_docs: int) -> np.ndarray:
    """``pos[q, d]`` = 1-based rank of doc ``d`` in ``rankings[q]`` (``width + 1`` if absent)."""
    Q, W = rankings.shape
    pos = np.full((Q, n_docs), W + 1, dtype=np.int64)
    for q in range(Q):
        for r in range(W):
            d = rankings[q, r]
            if d >= 0:
                pos[q, d] = r + 1
    return pos


def prepare(ranking_a, ranking_b, query, k):
    """Validate the inputs shared by the two-ranker methods.

    Returns ``(ra, rb, query, k, n_docs)`` with ``n_docs`` the number of document
    slots (``max index + 1``). Both matrices must have the same number of rows
    (queries), use document indices ``>= -1``, and list each document at most
    once per row.
    """
    ra = _as_rankings(ranking_a, "ranking_a")
    rb = _as_rankings(ranking_b, "ranking_b")
    if ra.shape[0] != rb.shape[0]:
        raise InputError(
            f"ranking_a and ranking_b must cover the same queries, got "
            f"{ra.shape[0]} and {rb.shape[0]} rows"
        )
    k = check_positive(k, name="k", integer=True)
    for r, name in ((ra, "ranking_a"), (rb, "ranking_b")):
        if r.size and r.min() < -1:
            raise InputError(f"{name} holds document indices < -1 (use -1 for padding)")
        srt = np.sort(r, axis=1)
        if np.any((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)):
            raise InputError(f"{name} lists a document twice within one query")
    q = np.arange(ra.shape[0], dtype=np.int64) if query is None else np.asarray(query)
    if q.ndim != 1 or q.dtype.kind not in "iu":
        raise InputError("query must be a 1-d integer array of query indices (one per impression)")
    q = q.astype(np.int64, copy=False)
    if q.size and (q.min() < 0 or q.max() >= ra.shape[0]):
        raise InputError(f"query indices must lie in 0..{ra.shape[0] - 1}")
    n_docs = int(max(ra.max(initial=-1), rb.max(initial=-1))) + 1
    return ra, rb, q, k, max(n_docs, 1)


def check_uniforms(u, n_impressions: int, n_needed: int, seed, rng_stream: int) -> np.ndarray:
    """Uniforms ``[S, n_needed]``: the given ``u`` (validated) or counter-based ones from ``seed``.

    Impression ``i`` draws from ``clickrank._core._random.session_uniforms(seed, [i], ...)``,
    so the same seed gives the same lists whatever the batch size.
    """
    if u is None:
        from .._core._random import session_uniforms

        return session_uniforms(
            0 if seed is None else seed, np.arange(n_impressions), n_needed, rng_stream
        )
    arr = np.asarray(u, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape[0] != n_impressions or arr.shape[1] < n_needed:
        raise InputError(f"u must have shape [{n_impressions}, >={n_needed}], got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= 1):
        raise InputError("u must hold uniforms in [0, 1)")
    return np.ascontiguousarray(arr)


@nb.njit(cache=True)
def slot_ranks(lists: np.ndarray, query: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """1-based rank under one ranker of the document in every slot (0 for empty slots)."""
    S, K = lists.shape
    out = np.zeros((S, K), dtype=np.int64)
    for s in range(S):
        for j in range(K):
            d = lists[s, j]
            if d >= 0:
                out[s, j] = pos[query[s], d]
    return out


@dataclass(frozen=True, eq=False)
class Interleaved:
    """Interleaved lists for many impressions and what their credit needs.

    Attributes
    ----------
    method : str
        Name of the interleaving method.
    lists : numpy.ndarray
        int64 ``[S, K]`` within-query document indices shown in slots 1..K
        (``-1`` = empty slot, when a query has fewer than K documents).
    query : numpy.ndarray
        int64 ``[S]`` query index of each impression.
    rank_a, rank_b : numpy.ndarray
        int64 ``[S, K]`` 1-based rank of each shown document under ranker A and B
        (``width + 1`` if the ranker does not list it, 0 for empty slots).
    """

    method: str
    lists: np.ndarray
    query: np.ndarray
    rank_a: np.ndarray
    rank_b: np.ndarray

    @property
    def n_impressions(self) -> int:
        return int(self.lists.shape[0])

    @property
    def k(self) -> int:
        return int(self.lists.shape[1])

    def _check_clicks(self, clicks) -> np.ndarray:
        c = np.asarray(clicks)
        if c.shape != self.lists.shape:
            raise InputError(
                f"clicks must have shape {self.lists.shape} (impressions x slots), got {c.shape}"
            )
        return c.astype(bool, copy=False) & (self.lists >= 0)

    def credit(self, clicks) -> np.ndarray:
        """Per-impression credit of A minus B (float ``[S]``); its sign is the outcome."""
        raise NotImplementedError

    def outcome(self, clicks) -> np.ndarray:
        """Per-impression outcome, int8 ``[S]``: +1 A wins, -1 B wins, 0 tie."""
        return np.sign(self.credit(clicks)).astype(np.int8)
