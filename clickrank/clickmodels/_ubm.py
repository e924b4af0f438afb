r"""User browsing model (Dupret & Piwowarski (2008))."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit, prange

from .._core._random import session_state, uniform_at
from .._core._validation import InputError, check_non_negative
from ._relevance import Graded, as_relevance_map, evaluate_map
from .base import check_labels, check_uniforms

__all__ = ["UBM", "ULTRA_UBM_GAMMA"]

#: Examination probabilities gamma[r][d - 1] for rank r = 1..10 and distance d = 1..r
#: to the previous click (d = r: no click yet), the table shipped with ULTRA's
#: ``UserBrowsingModel`` (ultra/utils/click_models.py).
ULTRA_UBM_GAMMA = (
    (1.0,),
    (0.98, 1.0),
    (1.0, 0.62, 0.95),
    (1.0, 0.77, 0.42, 0.82),
    (1.0, 0.92, 0.55, 0.31, 0.69),
    (1.0, 0.96, 0.63, 0.4, 0.22, 0.54),
    (1.0, 0.99, 0.73, 0.46, 0.29, 0.17, 0.47),
    (1.0, 1.0, 0.89, 0.52, 0.35, 0.24, 0.14, 0.43),
    (1.0, 1.0, 0.95, 0.68, 0.4, 0.29, 0.19, 0.12, 0.41),
    (1.0, 1.0, 1.0, 0.96, 0.52, 0.36, 0.27, 0.18, 0.12, 0.43),
)


def _as_gamma(value: Any) -> np.ndarray:
    """Square ``[R, R]`` array from a ragged lower triangle or a square matrix."""
    rows = list(value) if not isinstance(value, np.ndarray) else list(value)
    R = len(rows)
    if R == 0:
        raise InputError("gamma must have at least one rank")
    out = np.full((R, R), np.nan)
    for r, row in enumerate(rows):
        try:
            vals = np.asarray(row, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InputError(f"gamma row {r + 1} must be numbers, got {row!r}") from None
        if vals.size not in (r + 1, R):
            raise InputError(
                f"gamma row {r + 1} (rank {r + 1}) needs {r + 1} values (distances 1..{r + 1})"
                f" or {R} (a square matrix); got {vals.size}"
            )
        vals = vals[: r + 1]
        bad = ~((vals >= 0) & (vals <= 1))
        if bad.any():
            d = int(np.flatnonzero(bad)[0]) + 1
            raise InputError(
                f"gamma[rank {r + 1}][distance {d}] must be a probability in [0, 1], "
                f"got {vals[d - 1]!r}"
            )
        out[r, : r + 1] = vals
    return out


@njit(cache=True, inline="always")
def _chain(u, a, gamma, out) -> None:  # pragma: no cover - numba
    """One session's clicks ``out [K]`` from its draws ``u`` and attractiveness ``a``.

    Rank j + 1 is examined with ``gamma[j, distance - 1]``, the distance to the last
    click above it. This chain bounds the kernels' speed: it is a load, the product, a
    comparison and a branch-free select a rank (a click is a coin flip: a branch on it
    is mispredicted); unsigned indices spare numba's negative-index check.
    """
    last = np.uint64(0)
    for j in range(out.shape[0]):
        jj = np.uint64(j)
        c = u[jj] < gamma[jj, jj - last] * a[jj]
        out[jj] = c
        keep = np.uint64(c) - np.uint64(1)  # all ones without a click
        last = (last & keep) | ((jj + np.uint64(1)) & ~keep)


@njit(cache=True, parallel=True)
def _ubm_clicks(alpha, gamma, u, out):  # pragma: no cover - numba
    """Clicks into ``out`` ``[S, K]`` from ``alpha`` per cell and ``u`` ``[S, K, 1]``
    (``sample``; the simulator's whole-grade path is :func:`_ubm_grade_clicks`)."""
    for s in prange(out.shape[0]):
        _chain(u[s, :, 0], alpha[s], gamma, out[s])


_BLOCK = 1024  # sessions per block of _ubm_grade_clicks (one scratch pair each)


@njit(cache=True, parallel=True)
def _ubm_grade_clicks(alpha, gamma, labels, key, sessions, out):  # pragma: no cover - numba
    """:func:`_ubm_clicks` for whole-grade labels: ``alpha[g, j]`` on the grade grid
    (row ``-1``: an empty slot, NaN label) and lazily hashed draws, both gathered into
    a block's scratch arrays first, off the chain (:func:`_chain`)."""
    S, K = out.shape
    nan_row = np.uint64(alpha.shape[0] - 1)
    for b in prange((S + _BLOCK - 1) // _BLOCK):
        u = np.empty(K)
        a = np.empty(K)
        for s in range(b * _BLOCK, min(S, (b + 1) * _BLOCK)):
            st = session_state(key, sessions[s])
            for j in range(K):
                jj = np.uint64(j)
                u[j] = uniform_at(st, j)
                y = labels[np.uint64(s), jj]
                a[j] = alpha[nan_row if np.isnan(y) else np.uint64(y), jj]
            _chain(u, a, gamma, out[s])


@njit(cache=True)
def _ubm_marginals(alpha, gamma, out):  # pragma: no cover - numba
    n_sessions, n_positions = alpha.shape
    mass = np.empty(n_positions + 1)  # mass[r'] = P(last click so far at rank r'), r' = 0: none
    for s in range(n_sessions):
        mass[:] = 0.0
        mass[0] = 1.0
        for j in range(n_positions):
            total = 0.0
            for last in range(j + 1):
                c = mass[last] * gamma[j, j - last] * alpha[s, j]
                mass[last] -= c
                total += c
            out[s, j] = total
            mass[j + 1] = total


@dataclass(frozen=True, eq=False)
class UBM:
    r"""User browsing model (Dupret & Piwowarski (2008)).

    The examination of rank :math:`r` depends on the rank and on the distance
    :math:`d = r - r'` to the previous click at rank :math:`r'` (:math:`r' = 0`
    when there was no click yet, so :math:`d = r`); examination and
    attractiveness are independent:

    .. math::
        P(C_r = 1 \mid C_{<r}) = \gamma_{r, d}^{\,\eta} \; \alpha(d_r)

    Exact marginals come from a forward recursion over the rank of the last
    click: with :math:`m_{r'}` the probability that the last click so far was
    at rank :math:`r'` (:math:`K + 1` states),
    :math:`P(C_r = 1) = \sum_{r' < r} m_{r'} \gamma_{r, r - r'} \alpha(d_r)`, and that
    mass moves to state :math:`r` (compiled, one pass over the sessions). One
    uniform per position.

    Parameters
    ----------
    gamma : ragged lower triangle or square matrix, default :data:`ULTRA_UBM_GAMMA`
        ``gamma[r - 1][d - 1]`` = :math:`\gamma_{r,d}` for :math:`1 \le d \le r`
        (entries above the diagonal of a square matrix are ignored). The
        default covers 10 ranks; longer lists need a larger table.
    attractiveness : relevance map, default ``Graded(eps=0.1, max_label=4)``
    eta : float, default 1.0
        Severity exponent applied to every :math:`\gamma_{r,d}`, as in ULTRA.
    """

    gamma: Any = ULTRA_UBM_GAMMA
    attractiveness: Any = field(default_factory=Graded)
    eta: float = 1.0
    n_uniforms: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", float(check_non_negative(self.eta, name="eta")))
        g = _as_gamma(self.gamma) ** self.eta
        g.flags.writeable = False
        object.__setattr__(self, "gamma", g)
        object.__setattr__(
            self, "attractiveness", as_relevance_map(self.attractiveness, name="attractiveness")
        )

    def examination_matrix(self, K: int) -> np.ndarray:
        r"""``[K, K]`` matrix of :math:`\gamma^\eta_{r, d}` (row r - 1, column d - 1; NaN above)."""
        if K > self.gamma.shape[0]:
            raise InputError(
                f"the UBM gamma table covers {self.gamma.shape[0]} ranks, the lists have {K}; "
                "pass a larger gamma"
            )
        return self.gamma[:K, :K].copy()

    def click_probabilities(self, labels: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        gamma = np.nan_to_num(self.examination_matrix(labels.shape[1]))
        alpha = evaluate_map(self.attractiveness, labels, name="attractiveness")
        out = np.empty(labels.shape)
        _ubm_marginals(alpha, gamma, out)
        return out

    def sample(self, labels: np.ndarray, u: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        u = check_uniforms(u, labels, self.n_uniforms)
        gamma = np.nan_to_num(self.examination_matrix(labels.shape[1]))
        alpha = evaluate_map(self.attractiveness, labels, name="attractiveness")
        out = np.zeros(labels.shape, dtype=np.bool_)
        _ubm_clicks(alpha, gamma, u, out)
        return out

    def _grade_clicks(self, grid: np.ndarray):
        """``clicks(key, sessions, labels)`` for labels among the grades of ``grid`` (fused)."""
        gamma = np.ascontiguousarray(np.nan_to_num(self.examination_matrix(grid.shape[1])))
        alpha = np.ascontiguousarray(evaluate_map(self.attractiveness, grid, name="attractiveness"))

        def clicks(key, sessions, labels):
            out = np.empty(labels.shape, dtype=np.bool_)
            _ubm_grade_clicks(alpha, gamma, labels, key, sessions, out)
            return out

        return clicks
