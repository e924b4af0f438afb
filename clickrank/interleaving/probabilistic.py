"""Probabilistic interleaving (Hofmann et al. (2011))."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .._core._validation import InputError, check_positive
from ._base import Interleaved, _inverse, check_uniforms, prepare, slot_ranks

__all__ = ["probabilistic", "ProbabilisticInterleaved", "probabilistic_list_probability"]

STREAM_PROBABILISTIC = 212


@nb.njit(cache=True)
def _rank_weights(r, q, tau, n_docs):
    """Softmax-over-ranks weights ``1 / rank^tau`` of one ranker for query ``q`` (0 if unranked)."""
    w = np.zeros(n_docs)
    for p in range(r.shape[1]):
        d = r[q, p]
        if d >= 0:
            w[d] = 1.0 / (p + 1.0) ** tau
    return w


@nb.njit(cache=True)
def _probabilistic_kernel(ra, rb, query, u, k, n_docs, tau):
    S = query.shape[0]
    lists = np.full((S, k), -1, dtype=np.int64)
    pa = np.zeros((S, k))
    pb = np.zeros((S, k))
    for s in range(S):
        q = query[s]
        wa = _rank_weights(ra, q, tau, n_docs)
        wb = _rank_weights(rb, q, tau, n_docs)
        sa = wa.sum()
        sb = wb.sum()
        for j in range(k):
            if sa <= 1e-300 and sb <= 1e-300:
                break
            use_a = u[s, 2 * j] < 0.5
            if use_a and sa <= 1e-300:
                use_a = False
            elif not use_a and sb <= 1e-300:
                use_a = True
            w = wa if use_a else wb
            tot = sa if use_a else sb
            target = u[s, 2 * j + 1] * tot
            acc = 0.0
            d = -1
            for c in range(n_docs):
                if w[c] > 0.0:
                    d = c
                    acc += w[c]
                    if acc > target:
                        break
            lists[s, j] = d
            pa[s, j] = wa[d] / sa if sa > 0 else 0.0
            pb[s, j] = wb[d] / sb if sb > 0 else 0.0
            sa -= wa[d]
            sb -= wb[d]
            wa[d] = 0.0
            wb[d] = 0.0
    return lists, pa, pb


@dataclass(frozen=True, eq=False)
class ProbabilisticInterleaved(Interleaved):
    """Probabilistic-interleaving lists.

    ``prob_a[s, j]`` and ``prob_b[s, j]`` are the probabilities that ranker A
    (B) would have put the shown document in slot ``j`` given slots ``< j``;
    each ranker's distribution over the remaining documents sums to 1.
    """

    prob_a: np.ndarray = None  # type: ignore[assignment]
    prob_b: np.ndarray = None  # type: ignore[assignment]
    tau: float = 3.0

    def assignment_posterior(self) -> np.ndarray:
        r"""P(slot ``j`` was contributed by A | list), ``[S, K]``.

        Every shown document is removed from *both* rankers' distributions, so
        the probability of slot ``j`` given earlier slots depends only on the
        assignment of slot ``j``: assignments are independent a posteriori and
        :math:`P(a_j = A \mid L) = p_A(l_j) / (p_A(l_j) + p_B(l_j))` with the
        fair-coin prior (Hofmann et al. (2011), §4, Eq. 4–6).
        """
        den = self.prob_a + self.prob_b
        return np.divide(self.prob_a, den, out=np.full_like(den, 0.5), where=den > 0)

    def credit(self, clicks) -> np.ndarray:
        r"""Expected outcome marginalized over assignments, in [-1, 1] (Hofmann et al. (2011)).

        Hofmann et al. (2011), Eq. 6:

        .. math::
            E[o] = \sum_{a} P(a \mid L)\, \mathrm{sign}\Big(\sum_{j \in C}
            [a_j = A] - [a_j = B]\Big),

        computed exactly by a convolution over the clicked slots :math:`C`
        (the posterior factorizes, see :meth:`assignment_posterior`). The
        impression's outcome is the sign of this expectation.
        """
        c = self._check_clicks(clicks)
        S, K = c.shape
        post = self.assignment_posterior()
        dist = np.zeros((S, 2 * K + 1))
        dist[:, K] = 1.0
        for j in range(K):  # K steps, vectorized over impressions
            cj = c[:, j]
            if not cj.any():
                continue
            q = post[cj, j][:, None]
            d = dist[cj]
            new = np.zeros_like(d)
            new[:, 1:] += q * d[:, :-1]
            new[:, :-1] += (1 - q) * d[:, 1:]
            dist[cj] = new
        return dist[:, K + 1 :].sum(axis=1) - dist[:, :K].sum(axis=1)

    def outcome(self, clicks) -> np.ndarray:
        e = self.credit(clicks)
        return np.where(np.abs(e) < 1e-12, 0, np.sign(e)).astype(np.int8)


def probabilistic(
    ranking_a, ranking_b, *, k: int = 10, tau: float = 3.0, query=None, u=None, seed: int = 0
):
    r"""Probabilistic interleaving for many impressions (Hofmann et al. (2011)).

    Each ranker is turned into a softmax over ranks,
    :math:`P_X(d) \propto 1 / r_X(d)^{\tau}` (:math:`\tau = 3`). For every slot a
    fair coin picks a ranker, which samples a document from its distribution
    over the documents not shown yet; the document is then removed from both
    distributions. Every document keeps a non-zero chance with either ranker,
    which makes the comparison fair and lets the credit be marginalized over
    the unobserved assignments (:meth:`ProbabilisticInterleaved.credit`).

    ``u`` needs two uniforms per slot (``[S, 2k]``: the coin, then the draw).
    Other parameters as in :func:`clickrank.interleaving.team_draft`.
    """
    tau = check_positive(tau, name="tau")
    ra, rb, q, k, n_docs = prepare(ranking_a, ranking_b, query, k)
    u = check_uniforms(u, len(q), 2 * k, seed, STREAM_PROBABILISTIC)
    lists, pa, pb = _probabilistic_kernel(ra, rb, q, u, k, n_docs, tau)
    return ProbabilisticInterleaved(
        "probabilistic",
        lists,
        q,
        slot_ranks(lists, q, _inverse(ra, n_docs)),
        slot_ranks(lists, q, _inverse(rb, n_docs)),
        pa,
        pb,
        tau,
    )


@nb.njit(cache=True)
def _list_probability_kernel(ra, rb, query, lists, n_docs, tau):
    S, K = lists.shape
    out = np.ones(S)
    for s in range(S):
        q = query[s]
        wa = _rank_weights(ra, q, tau, n_docs)
        wb = _rank_weights(rb, q, tau, n_docs)
        sa = wa.sum()
        sb = wb.sum()
        for j in range(K):
            d = lists[s, j]
            if d < 0:
                break
            pa = wa[d] / sa if sa > 0 else 0.0
            pb = wb[d] / sb if sb > 0 else 0.0
            if sa <= 0:
                out[s] *= pb
            elif sb <= 0:
                out[s] *= pa
            else:
                out[s] *= 0.5 * (pa + pb)
            sa -= wa[d]
            sb -= wb[d]
            wa[d] = 0.0
            wb[d] = 0.0
    return out


def probabilistic_list_probability(ranking_a, ranking_b, lists, *, query=None, tau: float = 3.0):
    r"""Probability that probabilistic interleaving shows each of ``lists``.

    :math:`P(L) = \prod_j \tfrac12\,(p_A(l_j \mid l_{<j}) + p_B(l_j \mid l_{<j}))`.
    Summed over all ordered lists of a given length it equals 1 (a test).
    """
    tau = check_positive(tau, name="tau")
    lists = np.asarray(lists, dtype=np.int64)
    if lists.ndim != 2:
        raise InputError(f"lists must be [S, K], got shape {lists.shape}")
    ra, rb, q, _, n_docs = prepare(
        ranking_a, ranking_b, np.zeros(len(lists), np.int64) if query is None else query, 1
    )
    if len(q) != len(lists):
        raise InputError("query must give one query index per list")
    n_docs = max(n_docs, int(lists.max(initial=-1)) + 1)
    return _list_probability_kernel(ra, rb, q, lists, n_docs, tau)
