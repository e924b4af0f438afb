r"""Safe deployment near a logging ranker: PRPO's clipping and exposure-based risk minimisation.

Both keep a learned ranking close to the rankings of a *safe* ranker (the logging
ranker) when the clicks cannot vouch for more, and both measure closeness by
*exposure*: :math:`\omega(d) = D(\mathrm{rank}(d)) = 1/\log_2(1 + \mathrm{rank})`,
the weight the DCG target gives a rank (:func:`exposure`).

* **PRPO** (Gupta, Oosterhuis & de Rijke (2024)) drops a document's force once its
  exposure ratio :math:`\omega(d)/\omega_0(d)` has left :math:`[1/(1+\epsilon), 1+\epsilon]`
  in the direction the force points (:func:`proximal_mask`): a hard trust region,
  whatever the amount of data.
* **Exposure-based counterfactual risk minimisation** (CRM; Gupta, Oosterhuis &
  de Rijke (2023)) maximises a high-confidence lower bound instead of the estimate:

  .. math::
      \hat R(\pi) - \alpha \sqrt{\hat d_2(\pi \| \pi_0)}, \qquad
      \alpha = \sqrt{\frac{c}{(1 - c) N}}, \qquad
      \hat d_2(\pi \| \pi_0) = \frac{1}{|Q|} \sum_q \sum_d
      \frac{\bar\omega_\pi(d \mid q)^2}{\bar\omega_0(d \mid q)}

  with :math:`\bar\omega = \omega / \sum_{d'} \omega(d')` the exposure normalised
  per query, :math:`\hat d_2 \ge 1` the (exponentiated) Rényi divergence of order 2
  between the two exposure distributions (1 when they are equal), :math:`N` the
  number of logged sessions and :math:`c` the confidence of the bound (Cantelli's
  inequality on an importance-weighted mean, Metelli et al. (2018), Theorem 4.1).
  The penalty shrinks as :math:`1/\sqrt N`: with few sessions the ranking stays
  near the safe one, with many it is IPS's. :func:`risk_weight` gives
  :math:`\alpha`, :class:`RiskPenalty` its LambdaRank forces.

The paper's exposure is the examination probability under a position-based model;
with a deterministic top-k logger that is zero below the cut-off and would make the
divergence infinite for any ranking that shows a document the logger never showed.
clickrank uses the DCG discount of every rank instead (as PRPO here): finite, and
the same weights as the metric the lambdas optimise.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from .._core._segments import rank_order, ranks, segment_ids
from .._core._threads import numba_threads
from .._core._validation import InputError, check_positive, check_qptr
from ..lambdas import query_blocks, truncation_depth

__all__ = ["exposure", "proximal_mask", "exposure_divergence", "risk_weight", "RiskPenalty"]


def exposure(scores: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    r"""Each document's DCG exposure :math:`1/\log_2(1 + \mathrm{rank})` in its query's
    ranking by ``scores`` (descending; ties keep row order).

    >>> exposure(np.array([0.1, 0.9, 0.5]), np.array([0, 3])).round(3).tolist()
    [0.5, 1.0, 0.631]
    """
    return 1.0 / np.log2(1.0 + ranks(scores, qptr))


def proximal_mask(
    forces: np.ndarray, exposure: np.ndarray, reference: np.ndarray, eps: float
) -> np.ndarray:
    r"""Which forces PRPO keeps (Gupta, Oosterhuis & de Rijke (2024)).

    With :math:`r_d = \omega(d) / \omega_0(d)` the ratio of a document's
    exposure in the current ranking to that in the safe ranking, the clipped
    objective :math:`\min(r_d A_d, \mathrm{clip}(r_d, (1+\epsilon)^{-1}, 1+\epsilon) A_d)`
    has no gradient once the ratio has left the trust region in the direction
    the force points: a force up (:math:`\lambda_d > 0`) is dropped when
    :math:`r_d \ge 1 + \epsilon`, a force down when :math:`r_d \le 1/(1 + \epsilon)`.

    >>> proximal_mask(np.array([1.0, 1.0, -1.0, -1.0]), np.array([2.0, 1.0, 0.5, 1.0]),
    ...               np.ones(4), 0.5).tolist()
    [False, True, False, True]
    """
    r = exposure / reference
    up = (forces > 0) & (r >= 1.0 + eps)
    down = (forces < 0) & (r <= 1.0 / (1.0 + eps))
    return ~(up | down)


def risk_weight(n_sessions: float, confidence: float = 0.95) -> float:
    r""":math:`\alpha = \sqrt{c / ((1 - c) N)}`, the weight of :math:`\sqrt{\hat d_2}` in
    the CRM objective for ``N`` logged sessions and confidence ``c``.

    >>> round(risk_weight(2000), 4), round(risk_weight(200000), 5)
    (0.0975, 0.00975)
    """
    n = float(check_positive(n_sessions, name="n_sessions"))
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    return math.sqrt(c / ((1.0 - c) * n))


def _total_exposure(qptr: np.ndarray) -> np.ndarray:
    r"""``cum[n]``: the total exposure :math:`\sum_{r=1}^{n} D(r)` of a list of ``n``."""
    longest = int(np.diff(qptr).max()) if len(qptr) > 1 else 0
    return np.concatenate([[0.0], np.cumsum(1.0 / np.log2(2.0 + np.arange(longest)))])


def exposure_divergence(scores, reference, qptr) -> np.ndarray:
    r"""Per query, :math:`\sum_d \bar\omega(d)^2 / \bar\omega_0(d)`: the exponentiated Rényi
    divergence of order 2 between the normalised exposures of the ranking by ``scores``
    and of the ranking by ``reference`` (1 when the rankings are equal).

    >>> qptr = np.array([0, 3])
    >>> round(float(exposure_divergence([3.0, 2.0, 1.0], [3.0, 2.0, 1.0], qptr)[0]), 12)
    1.0
    >>> round(float(exposure_divergence([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], qptr)[0]), 4)
    1.352
    """
    qptr = check_qptr(qptr, len(scores))
    s = np.asarray(scores, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if ref.shape != s.shape:
        raise InputError(f"reference must hold one score per row ({s.size}), got {ref.size}")
    n = np.diff(qptr)
    terms = exposure(s, qptr) ** 2 / (exposure(ref, qptr) * np.repeat(_total_exposure(qptr)[n], n))
    return np.bincount(segment_ids(qptr), weights=terms, minlength=len(qptr) - 1)


@njit(cache=True)
def _discounts(n):
    """``1 / log2(2 + r)`` for ranks ``r + 1 = 1..n`` (in numba: the bits the kernels used)."""
    disc = np.empty(n)
    for r in range(n):
        disc[r] = 1.0 / np.log2(2.0 + r)
    return disc


@njit(cache=True, error_model="numpy")
def _risk_divergence(order, qptr, inv_ref, cum, disc):
    r""":math:`\hat d_2`, the mean over queries of the divergence at the ranking ``order``
    (``order`` ranks every query; ``inv_ref`` is :math:`1/\omega_0` per row, ``cum[n]``
    the total exposure of a list of ``n`` and ``disc[r]`` the discount of rank ``r + 1``)."""
    total, used = 0.0, 0
    for q in range(qptr.shape[0] - 1):
        a, cnt = qptr[q], qptr[q + 1] - qptr[q]
        if cnt == 0:
            continue
        acc = 0.0
        for r in range(cnt):
            d = disc[r]
            acc += d * d * inv_ref[order[a + r]]
        total += acc / cum[cnt]
        used += 1
    return total / max(used, 1)


@njit(cache=True, error_model="numpy")
def _risk_pairs(q0, q1, s, order, qptr, inv_ref, cum, disc, kappa, sigma, trunc, forces,
                weights):  # fmt: skip
    r"""The penalty's forces and Newton weights of queries ``q0..q1-1``, added in place.

    Swapping the documents at ranks ``i < j`` changes the query's divergence by
    :math:`(D_j^2 - D_i^2)(1/\omega_0(d_i) - 1/\omega_0(d_j)) / \sum D`; the one the
    safe ranker exposes more is the one the penalty wants above, with weight
    :math:`\kappa |\Delta d_2|`.
    """
    for q in range(q0, q1):
        a, cnt = qptr[q], qptr[q + 1] - qptr[q]
        if cnt < 2:
            continue
        scale = kappa / cum[cnt]
        for i in range(min(cnt - 1, trunc)):
            ri = order[a + i]
            di = disc[i]
            for j in range(i + 1, cnt):
                rj = order[a + j]
                dv = inv_ref[ri] - inv_ref[rj]
                if dv == 0.0:
                    continue
                dj = disc[j]
                dz = scale * abs(dv) * (di * di - dj * dj)
                hi, lo = (ri, rj) if dv < 0.0 else (rj, ri)
                rho = 1.0 / (1.0 + np.exp(sigma * (s[hi] - s[lo])))
                f = sigma * rho * dz
                h = sigma * f * (1.0 - rho)
                forces[hi] += f
                forces[lo] -= f
                weights[hi] += h
                weights[lo] += h


@njit(cache=True, parallel=True, error_model="numpy")
def _risk_blocks(bounds, s, order, qptr, inv_ref, cum, disc, kappa, sigma, trunc, forces,
                 weights):  # fmt: skip
    """:func:`_risk_pairs` over blocks of queries on numba's threads (blocks write disjoint
    rows, so the result is the serial one, bit for bit)."""
    for b in prange(bounds.shape[0] - 1):
        _risk_pairs(bounds[b], bounds[b + 1], s, order, qptr, inv_ref, cum, disc, kappa, sigma,
                    trunc, forces, weights)  # fmt: skip


class RiskPenalty:
    r"""The CRM penalty :math:`-|Q|\,\alpha \sqrt{\hat d_2}` of a fixed safe ranking, as
    LambdaRank forces (Burges (2010)) to add to a target's.

    Each pair of a query, with at least one document in the current top ``truncation``,
    pulls the document the safe ranker exposes more above the other with weight
    :math:`\kappa\,|\Delta d_{2,q}|`, :math:`\kappa = \alpha / (2\sqrt{\hat d_2})` the
    derivative of the penalty at the current rankings (recomputed every call). Summed
    over queries like the target's forces (which are :math:`\Delta\mathrm{NDCG}`, one
    term per query), so :math:`\alpha` is on the scale of a mean NDCG.

    Parameters
    ----------
    reference : array ``[n_docs]``
        Scores of the safe ranker.
    qptr : array ``[n_queries + 1]``
    alpha : float
        :func:`risk_weight`.
    sigma : float
        Steepness of the logistic, as the target's.
    truncation : int or None
        As :func:`clickrank.lambdas.lambdas`.
    n_threads : int
        Threads of the pair loop (blocks of queries balanced by pair work); the forces
        are the same bits for any value.

    Examples
    --------
    >>> pen = RiskPenalty(np.array([3.0, 2.0, 1.0]), np.array([0, 3]), alpha=0.5)
    >>> f, w = np.zeros(3), np.zeros(3)
    >>> round(pen.add(np.array([1.0, 2.0, 3.0]), f, w), 4)  # reversed: pulled back
    1.352
    >>> bool(f[0] > 0 > f[2])
    True
    """

    def __init__(self, reference, qptr, *, alpha: float, sigma: float = 1.0,
                 truncation: int | None = None, n_threads: int = 1) -> None:  # fmt: skip
        ref = np.asarray(reference, dtype=np.float64)
        self.qptr = check_qptr(qptr, ref.shape[0])
        if not np.all(np.isfinite(ref)):
            raise InputError("reference scores must be finite")
        self.inv_ref = 1.0 / exposure(ref, self.qptr)
        self.cum = _total_exposure(self.qptr)
        self.alpha = float(alpha)
        if not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise InputError(f"alpha must be finite and >= 0, got {alpha}")
        self.sigma = float(check_positive(sigma, name="sigma"))
        self.trunc = truncation_depth(truncation)
        self.disc = _discounts(self.cum.shape[0])
        threads = int(check_positive(n_threads, name="n_threads", integer=True))
        nq = len(self.qptr) - 1
        self.threads = min(threads, numba.config.NUMBA_NUM_THREADS, max(nq, 1))
        # a few blocks per thread; one thread runs the serial loop, no thread pool
        self.bounds = (
            query_blocks(self.qptr, self.trunc, 4 * self.threads) if self.threads > 1 else None
        )

    def add(self, scores: np.ndarray, forces: np.ndarray, weights: np.ndarray) -> float:
        r"""Add the penalty's forces and Newton weights at ``scores`` into ``forces`` and
        ``weights``; return the mean divergence :math:`\hat d_2` there."""
        s = np.asarray(scores, dtype=np.float64)
        order = rank_order(s, self.qptr)
        d2 = _risk_divergence(order, self.qptr, self.inv_ref, self.cum, self.disc)
        with np.errstate(divide="ignore"):  # d(alpha sqrt(mean d2_q)) / d d2_q, times |Q|
            kappa = float(np.float64(self.alpha) / (2.0 * np.sqrt(np.float64(d2))))
        args = (s, order, self.qptr, self.inv_ref, self.cum, self.disc, kappa, self.sigma,
                self.trunc, forces, weights)  # fmt: skip
        if self.bounds is None:
            _risk_pairs(0, len(self.qptr) - 1, *args)
        else:
            with numba_threads(self.threads):
                _risk_blocks(self.bounds, *args)
        return float(d2)
