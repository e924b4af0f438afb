"""Team-draft interleaving (Radlinski et al. (2008), Alg. 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ._base import Interleaved, _inverse, check_uniforms, prepare, slot_ranks

__all__ = ["team_draft", "TeamDraftInterleaved"]

STREAM_TEAM_DRAFT = 210


@nb.njit(cache=True, inline="always")
def _next_free(r: np.ndarray, q: int, p: int, used: np.ndarray) -> int:
    W = r.shape[1]
    while p < W and (r[q, p] < 0 or used[r[q, p]]):
        p += 1
    return p


@nb.njit(cache=True)
def _team_draft_kernel(ra, rb, query, u, k, n_docs):
    """Sequential draft of every impression (compiled; one pass, O(S (K + width)))."""
    S = query.shape[0]
    W = ra.shape[1]
    lists = np.full((S, k), -1, dtype=np.int64)
    team = np.full((S, k), -1, dtype=np.int8)
    used = np.zeros(n_docs, dtype=np.bool_)
    for s in range(S):
        q = query[s]
        pa = 0
        pb = 0
        na = 0
        nb_ = 0
        j = 0
        while j < k:
            pa = _next_free(ra, q, pa, used)
            pb = _next_free(rb, q, pb, used)
            if pa >= W or pb >= W:
                break  # Algorithm 1 drafts only while both rankings have a free document
            if na < nb_ or (na == nb_ and u[s, j] < 0.5):
                d = ra[q, pa]
                na += 1
                team[s, j] = 0
            else:
                d = rb[q, pb]
                nb_ += 1
                team[s, j] = 1
            lists[s, j] = d
            used[d] = True
            j += 1
        for t in range(j):
            used[lists[s, t]] = False
    return lists, team


@dataclass(frozen=True, eq=False)
class TeamDraftInterleaved(Interleaved):
    """Team-draft lists; ``team[S, K]`` is 0 where A contributed the slot, 1 for B, -1 empty."""

    team: np.ndarray = None  # type: ignore[assignment]

    def credit(self, clicks) -> np.ndarray:
        """Clicks on A's team minus clicks on B's team (Radlinski et al. (2008), §4)."""
        c = self._check_clicks(clicks)
        return ((c & (self.team == 0)).sum(axis=1) - (c & (self.team == 1)).sum(axis=1)).astype(
            np.float64
        )


def team_draft(ranking_a, ranking_b, *, k: int = 10, query=None, u=None, seed: int = 0):
    """Team-draft interleaving of two rankings for many impressions.

    Like captains picking teams (Radlinski et al. (2008), Alg. 1): the
    ranker with fewer picks so far picks next; when both have picked equally
    often a fair coin decides; the picker adds its highest-ranked document not
    yet in the list and that slot joins its team. As in Algorithm 1 the draft
    stops as soon as either ranking has no document left that is not in the
    list, so the list can be shorter than ``k`` (padded with -1) when one
    ranking is shorter than the other. Outcome: the team with more clicked
    documents wins; equal clicks (including none) is a tie.

    Parameters
    ----------
    ranking_a, ranking_b : int array ``[n_queries, width]``
        Ranking matrices (see :func:`rankings_from_scores`).
    k : int
        Length of the interleaved list.
    query : int array ``[S]``, optional
        Query of each impression (default: one impression per query).
    u : float array ``[S, k]``, optional
        Uniforms for the coin flips (``u[s, j] < 0.5`` means A picks first in
        round ``j`` when counts are equal). Drawn from ``seed`` if absent.
    seed : int
        Seed of the counter-based uniforms (impression ``i`` uses draw stream
        ``i``; independent of batch size).

    Returns
    -------
    TeamDraftInterleaved
    """
    ra, rb, q, k, n_docs = prepare(ranking_a, ranking_b, query, k)
    u = check_uniforms(u, len(q), k, seed, STREAM_TEAM_DRAFT)
    lists, team = _team_draft_kernel(ra, rb, q, u, k, n_docs)
    return TeamDraftInterleaved(
        "team-draft",
        lists,
        q,
        slot_ranks(lists, q, _inverse(ra, n_docs)),
        slot_ranks(lists, q, _inverse(rb, n_docs)),
        team,
    )
