"""Team-draft multileaving for more than two rankers (Schuth et al. (2014))."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .._core._validation import InputError, check_positive
from ._base import _as_rankings, check_uniforms

__all__ = ["team_draft_multileave", "Multileaved"]

STREAM_MULTILEAVE = 214


@nb.njit(cache=True)
def _tdm_kernel(rankings, query, u, k, n_docs):
    m, Q, W = rankings.shape
    S = query.shape[0]
    lists = np.full((S, k), -1, dtype=np.int64)
    team = np.full((S, k), -1, dtype=np.int64)
    used = np.zeros(n_docs, dtype=np.bool_)
    ptr = np.zeros(m, dtype=np.int64)
    for s in range(S):
        q = query[s]
        ptr[:] = 0
        j = 0
        rnd = 0
        while j < k:
            order = np.argsort(u[s, rnd * m : (rnd + 1) * m])
            added = 0
            for t in range(m):
                if j >= k:
                    break
                r = order[t]
                p = ptr[r]
                while p < W and (rankings[r, q, p] < 0 or used[rankings[r, q, p]]):
                    p += 1
                ptr[r] = p
                if p < W:
                    d = rankings[r, q, p]
                    lists[s, j] = d
                    team[s, j] = r
                    used[d] = True
                    j += 1
                    added += 1
            rnd += 1
            if added == 0:
                break
        for t in range(j):
            used[lists[s, t]] = False
    return lists, team


@dataclass(frozen=True, eq=False)
class Multileaved:
    """Team-draft multileaved lists: ``team[s, j]`` is the ranker that contributed slot ``j``."""

    lists: np.ndarray
    team: np.ndarray
    query: np.ndarray
    n_rankers: int

    def scores(self, clicks) -> np.ndarray:
        """Clicks credited to each ranker, int ``[S, m]``."""
        c = np.asarray(clicks, dtype=bool)
        if c.shape != self.lists.shape:
            raise InputError(f"clicks must have shape {self.lists.shape}, got {c.shape}")
        c = c & (self.lists >= 0)
        out = np.zeros((c.shape[0], self.n_rankers), dtype=np.int64)
        rows, cols = np.nonzero(c)
        np.add.at(out, (rows, self.team[rows, cols]), 1)
        return out

    def wins(self, clicks) -> np.ndarray:
        """``W[i, j]`` = number of impressions in which ranker i got more clicks than ranker j.

        Ties (``n - W[i, j] - W[j, i]``) include impressions without clicks
        (Schuth et al. (2014), §3: the pairwise preference matrix).
        """
        sc = self.scores(clicks)
        return (sc[:, :, None] > sc[:, None, :]).sum(axis=0)

    def preference(self, clicks) -> np.ndarray:
        """Pairwise preference ``(W[i, j] + ties/2) / n - 1/2`` (antisymmetric, 0 diagonal)."""
        w = self.wins(clicks).astype(np.float64)
        n = self.lists.shape[0]
        return (w - w.T) / (2.0 * n)


def team_draft_multileave(rankings, *, k: int = 10, query=None, u=None, seed: int = 0):
    """Team-draft multileaving of ``m >= 2`` rankers for many impressions.

    In each round the rankers pick in a uniformly random order, each adding its
    highest-ranked document not yet shown to its team, until ``k`` slots are
    filled (Schuth et al. (2014), Alg. 1). A
    click credits the ranker whose team holds the clicked slot. With two
    rankers this is team-draft interleaving with one coin per round.

    Parameters
    ----------
    rankings : sequence of ``m`` ranking matrices ``[n_queries, width]``.
    u : float array ``[S, m * ceil(k)]``, optional
        ``m`` uniforms per round (their argsort is the picking order).
    """
    mats = [_as_rankings(r, f"rankings[{i}]") for i, r in enumerate(rankings)]
    if len(mats) < 2:
        raise InputError("multileaving needs at least two rankers")
    if len({r.shape for r in mats}) != 1:
        raise InputError("all ranking matrices must have the same shape")
    R = np.ascontiguousarray(np.stack(mats))
    k = check_positive(k, name="k", integer=True)
    Q = R.shape[1]
    q = np.arange(Q, dtype=np.int64) if query is None else np.asarray(query, dtype=np.int64)
    if q.size and (q.min() < 0 or q.max() >= Q):
        raise InputError(f"query indices must lie in 0..{Q - 1}")
    m = len(mats)
    u = check_uniforms(u, len(q), m * k, seed, STREAM_MULTILEAVE)
    n_docs = int(R.max(initial=0)) + 1
    lists, team = _tdm_kernel(R, q, u, k, n_docs)
    return Multileaved(lists, team, q, m)
