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
from numba import njit

from .._validation import check_probability
from .._random import session_draws
from ._base import check_labels, check_uniforms, grade_rows
from ._curves import Constant, as_curve, evaluate_curve
from ._relevance import ERRSatisfaction, Graded, as_relevance_map, evaluate_map

__all__ = ["Cascade", "DCM", "DBN", "SDBN"]


@njit(cache=True)
def _cascade_session(alpha, sigma, use_sigma, lam, kappa, u, out):  # pragma: no cover - numba
    """One session: ``alpha``, ``sigma``, ``out`` ``[K]``, ``u`` ``[K, n_uniforms]``."""
    for j in range(alpha.shape[0]):
        if u[j, 0] < alpha[j]:
            out[j] = True
            c = lam[j]
            if use_sigma:
                c *= 1.0 - sigma[j]
        else:
            c = kappa[j]
        if c >= 1.0:
            continue
        if c <= 0.0 or u[j, 1] >= c:
            break


@njit(cache=True)
def _cascade_sample(alpha, sigma, use_sigma, lam, kappa, u, out):  # pragma: no cover - numba
    for s in range(alpha.shape[0]):
        _cascade_session(alpha[s], sigma[s if use_sigma else 0], use_sigma, lam, kappa, u[s], out[s])


@njit(cache=True)
def _cascade_fused(key, sessions, labels, alpha_t, sigma_t, use_sigma, lam, kappa, n_u):
    """:func:`_cascade_sample` on the hashed uniforms, parameters read from grade tables.

    Same draws as ``session_uniforms(..., K * n_u).reshape(S, K, n_u)``, hashed
    per session into a ``[K, n_u]`` buffer instead of a ``[S, K, n_u]`` array.
    """
    S, K = labels.shape
    out = np.zeros((S, K), dtype=np.bool_)
    alpha, sigma, u = np.empty(K), np.zeros(K), np.empty((K, n_u))
    for i in range(S):
        grade_rows(labels[i], alpha_t, alpha)
        if use_sigma:
            grade_rows(labels[i], sigma_t, sigma)
        session_draws(key, sessions[i], u)
        _cascade_session(alpha, sigma, use_sigma, lam, kappa, u, out[i])
    return out


def _marginals(alpha, sigma, lam, kappa) -> np.ndarray:
    after_click = lam if sigma is None else lam * (1.0 - sigma)
    go_on = alpha * after_click + (1.0 - alpha) * kappa
    examined = np.ones_like(alpha)
    np.cumprod(go_on[:, :-1], axis=1, out=examined[:, 1:])
    examined *= alpha
    return examined


class _CascadeFamily:
    """Shared machinery; subclasses define ``_parts(labels) -> (alpha, sigma, lam, kappa)``."""

    n_uniforms: int

    def click_probabilities(self, labels: np.ndarray) -> np.ndarray:
        return _marginals(*self._parts(check_labels(labels)))

    def sample(self, labels: np.ndarray, u: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        u = check_uniforms(u, labels, self.n_uniforms)
        alpha, sigma, lam, kappa = self._parts(labels)
        out = np.zeros(labels.shape, dtype=np.bool_)
        use_sigma = sigma is not None
        if sigma is None:
            sigma = np.zeros((1, 1))
        _cascade_sample(alpha, sigma, use_sigma, lam, kappa, u, out)
        return out

    def _grade_clicks(self, grid: np.ndarray):
        """``clicks(key, sessions, labels)`` for labels among the grades of ``grid`` (fused)."""
        alpha, sigma, lam, kappa = self._parts(grid)
        use_sigma = sigma is not None
        sigma = sigma if use_sigma else alpha  # not read
        n_u = self.n_uniforms

        def clicks(key, sessions, labels):
            return _cascade_fused(key, sessions, labels, alpha, sigma, use_sigma, lam, kappa, n_u)

        return clicks

    def _parts(self, labels: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Cascade(_CascadeFamily):
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
class DCM(_CascadeFamily):
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
class DBN(_CascadeFamily):
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
