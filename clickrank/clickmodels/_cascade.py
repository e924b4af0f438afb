r"""The cascade family: Cascade, DCM, DBN and SDBN.

All four models scan the list top-down and may stop. They share one
parametrization: at position :math:`j` a user who is still examining clicks
with probability :math:`\alpha_j` (the attractiveness of the document there);
after a click she continues with probability :math:`\lambda_j (1 - \sigma_j)`,
after a skip with probability :math:`\kappa_j`; once stopped she never clicks.

=========  ======================  ==========  ================
model      :math:`\lambda_j`        sigma_j     :math:`\kappa_j`
=========  ======================  ==========  ================
Cascade    0                       --          1
DCM        continuation            0           1
DBN        gamma                   sigma(d)    gamma
SDBN       1                       sigma(d)    1
=========  ======================  ==========  ================

The exact marginals follow from the probability of still examining,
:math:`\epsilon_1 = 1`,
:math:`\epsilon_{j+1} = \epsilon_j\,[\alpha_j \lambda_j (1 - \sigma_j) + (1 - \alpha_j)\kappa_j]`,
:math:`P(C_j = 1) = \epsilon_j \alpha_j` (a cumulative product over positions).
Sampling uses uniform 0 for the click and uniform 1 for the continuation,
in one compiled pass over the sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit, prange

from .._core._validation import check_probability
from ._curves import Constant, as_curve, evaluate_curve
from ._relevance import ERRSatisfaction, Graded, as_relevance_map, evaluate_map
from .base import _NO_SESSIONS, cell, check_labels, check_uniforms, draw, state_of

__all__ = ["CascadeFamily", "Cascade", "DCM", "DBN", "SDBN"]


@njit(cache=True, parallel=True)
def _cascade_clicks(
    alpha, sigma, use_sigma, lam, kappa, labels, u, key, sessions, n_u, out
):  # pragma: no cover - numba
    """Clicks into ``out`` ``[S, K]``, from either source (:mod:`._base`).

    ``sample``: ``alpha``, ``sigma`` per cell, ``u`` ``[S, K, n_u]``, ``labels`` None.
    Fused: ``alpha``, ``sigma`` tables over whole grades, ``labels`` ``[S, K]``, ``u``
    None; a session's draws (``n_u`` per position: click, continuation) are hashed
    only up to where the user stops.
    """
    for s in prange(out.shape[0]):
        st = state_of(u, key, sessions, s)
        for j in range(out.shape[1]):
            if draw(u, st, n_u, s, j, 0) < cell(alpha, labels, s, j):
                out[s, j] = True
                c = lam[j]
                if use_sigma:
                    c *= 1.0 - cell(sigma, labels, s, j)
            else:
                c = kappa[j]
            if c >= 1.0:
                continue
            if c <= 0.0 or draw(u, st, n_u, s, j, 1) >= c:
                break


def _marginals(alpha, sigma, lam, kappa) -> np.ndarray:
    after_click = lam if sigma is None else lam * (1.0 - sigma)
    go_on = alpha * after_click + (1.0 - alpha) * kappa
    examined = np.ones_like(alpha)
    np.cumprod(go_on[:, :-1], axis=1, out=examined[:, 1:])
    examined *= alpha
    return examined


class CascadeFamily:
    """The base of the cascade models (Cascade, DCM, DBN, SDBN): click probabilities and
    sampling from the per-cell parts that subclasses define in
    ``_parts(labels) -> (alpha, sigma, lam, kappa)``."""

    n_uniforms: int

    def click_probabilities(self, labels: np.ndarray) -> np.ndarray:
        return _marginals(*self._parts(check_labels(labels)))

    def sample(self, labels: np.ndarray, u: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        u = check_uniforms(u, labels, self.n_uniforms)
        alpha, sigma, lam, kappa = self._parts(labels)
        out = np.zeros(labels.shape, dtype=np.bool_)
        use_sigma = sigma is not None
        sigma = sigma if use_sigma else alpha  # not read
        _cascade_clicks(alpha, sigma, use_sigma, lam, kappa, None, u, *_NO_SESSIONS, 0, out)
        return out

    def _grade_clicks(self, grid: np.ndarray):
        """``clicks(key, sessions, labels)`` for labels among the grades of ``grid`` (fused)."""
        alpha, sigma, lam, kappa = self._parts(grid)
        use_sigma = sigma is not None
        sigma = sigma if use_sigma else alpha  # not read
        n_u = self.n_uniforms

        def clicks(key, sessions, labels):
            out = np.zeros(labels.shape, dtype=np.bool_)
            _cascade_clicks(
                alpha, sigma, use_sigma, lam, kappa, labels, None, key, sessions, n_u, out
            )
            return out

        return clicks

    def _parts(self, labels: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Cascade(CascadeFamily):
    r"""Cascade model (Craswell et al. (2008)).

    The user scans top-down, examines position 1, clicks the document at an
    examined position with probability :math:`\alpha(d)` and stops after the
    first click; without a click she moves on:

    .. math::
        P(C_j = 1) = \alpha(d_j) \prod_{i < j} \bigl(1 - \alpha(d_i)\bigr)

    At most one click per session. One uniform per position.

    Parameters
    ----------
    attractiveness : relevance map, default ``Graded(eps=0.1, max_label=4)``
    """

    attractiveness: Any = field(default_factory=Graded)
    n_uniforms: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "attractiveness", as_relevance_map(self.attractiveness, name="attractiveness")
        )

    def _parts(self, labels):
        alpha = evaluate_map(self.attractiveness, labels, name="attractiveness")
        K = labels.shape[1]
        return alpha, None, np.zeros(K), np.ones(K)


@dataclass(frozen=True)
class DCM(CascadeFamily):
    r"""Dependent click model (Guo et al. (2009)).

    A cascade in which the user may go on after a click: after clicking at
    position :math:`j` she continues with probability :math:`\lambda_j`
    (``continuation``) and stops otherwise; after a skip she always continues.

    .. math::
        \epsilon_1 = 1, \quad
        \epsilon_{j+1} = \epsilon_j \bigl[\alpha(d_j) \lambda_j + 1 - \alpha(d_j)\bigr], \quad
        P(C_j = 1) = \epsilon_j \alpha(d_j)

    Two uniforms per position: click iff ``u[..., 0] < alpha``; after a click,
    continue iff ``u[..., 1] < lambda_j``.

    Parameters
    ----------
    attractiveness : relevance map, default ``Graded(eps=0.1, max_label=4)``
    continuation : float, curve or array-like, default 0.5
        :math:`\lambda_j`. Guo et al. estimate it per position from logs; there
        is no canonical value, 0.5 at every position is our default.
    """

    attractiveness: Any = field(default_factory=Graded)
    continuation: Any = 0.5
    n_uniforms: int = field(default=2, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "attractiveness", as_relevance_map(self.attractiveness, name="attractiveness")
        )
        object.__setattr__(self, "continuation", as_curve(self.continuation, name="continuation"))

    def _parts(self, labels):
        alpha = evaluate_map(self.attractiveness, labels, name="attractiveness")
        K = labels.shape[1]
        lam = evaluate_curve(self.continuation, K, name="continuation")
        return alpha, None, lam, np.ones(K)


@dataclass(frozen=True)
class DBN(CascadeFamily):
    r"""Dynamic Bayesian network model (Chapelle & Zhang (2009)).

    With examination :math:`E_j`, attractiveness :math:`A_j`, click
    :math:`C_j` and satisfaction :math:`S_j`:

    .. math::
        E_1 = 1, \quad C_j = E_j A_j, \quad P(A_j = 1) = \alpha(d_j), \quad
        P(S_j = 1 \mid C_j = 1) = \sigma(d_j), \quad S_j = 0 \text{ if } C_j = 0,

        P(E_{j+1} = 1 \mid E_j = 1, S_j = 0) = \gamma, \quad
        P(E_{j+1} = 1 \mid S_j = 1) = 0.

    Two uniforms per position: click iff ``u[..., 0] < alpha``; continue iff
    ``u[..., 1] < gamma * (1 - sigma)`` after a click, ``< gamma`` after a skip
    (satisfaction and perseverance share the second uniform, which gives the
    same distribution of clicks).

    Parameters
    ----------
    attractiveness : relevance map, default ``Graded(eps=0.1, max_label=4)``
        :math:`\alpha(y)`.
    satisfaction : relevance map, default ``ERRSatisfaction(max_label=4)``
        :math:`\sigma(y) = (2^y - 1)/2^{y_{\max}}`, the ERR choice
        (Chapelle et al. (2009)).
    gamma : float, default 0.9
        Perseverance :math:`\gamma`: probability of going on when not satisfied.
    """

    attractiveness: Any = field(default_factory=Graded)
    satisfaction: Any = field(default_factory=ERRSatisfaction)
    gamma: float = 0.9
    n_uniforms: int = field(default=2, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "attractiveness", as_relevance_map(self.attractiveness, name="attractiveness")
        )
        object.__setattr__(
            self, "satisfaction", as_relevance_map(self.satisfaction, name="satisfaction")
        )
        object.__setattr__(self, "gamma", check_probability(self.gamma, name="gamma"))

    def _parts(self, labels):
        alpha = evaluate_map(self.attractiveness, labels, name="attractiveness")
        sigma = evaluate_map(self.satisfaction, labels, name="satisfaction")
        g = Constant(self.gamma)(labels.shape[1])
        return alpha, sigma, g, g


@dataclass(frozen=True)
class SDBN(DBN):
    r"""Simplified DBN (Chapelle & Zhang (2009), §5): :class:`DBN` with :math:`\gamma = 1`.

    The user goes on until satisfied, so the last click is the satisfied one
    (if any) and every skipped document was examined.
    """

    gamma: float = field(default=1.0, init=False)
