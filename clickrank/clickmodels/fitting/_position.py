r"""Click models whose clicks are independent given what is observed: PBM, UBM, trust bias.

PBM (Craswell et al. (2008); Richardson et al. (2007)) and UBM (Dupret &
Piwowarski (2008)) share one form: every click is a Bernoulli draw

.. math::
    P(C = 1) = \theta_e \, \alpha_{qd}

with :math:`e` the examination cell of the slot (the rank :math:`r` for the
PBM; the rank and the distance :math:`d = r - r'` to the previous click at
:math:`r'` for the UBM, :math:`r' = 0` before any click, so :math:`e` is
observed) and :math:`\alpha_{qd}` the attractiveness of the (query, doc) pair.
The likelihood is a product over (pair, cell) counts :math:`(n, c)`, so EM
runs on those sufficient statistics (one aggregation of the distinct
sessions), not on sessions. With hidden examination :math:`E` and
attractiveness :math:`A` (:math:`C = EA`), the E-step splits the
:math:`n - c` non-clicks of a cell into
:math:`P(E=1, A=0 \mid C=0) = \theta(1-\alpha)/(1-\theta\alpha)` and
:math:`P(E=0, A=1 \mid C=0) = (1-\theta)\alpha/(1-\theta\alpha)`, and the
M-steps are closed-form:

.. math::
    \theta_e \leftarrow \frac{\sum_{qd} c + (n - c)P(E=1, A=0 \mid C=0)}{\sum_{qd} n},
    \qquad
    \alpha_{qd} \leftarrow \frac{\sum_e c + (n - c)P(E=0, A=1 \mid C=0) + m\mu}
    {\sum_e n + m}

(:math:`m` = ``shrinkage`` pseudo-observations at the pooled estimate
:math:`\mu`; :math:`m = 0` is maximum likelihood), accelerated with SQUAREM.
The scale is not identified (:math:`c\theta`, :math:`\alpha/c`), so
:math:`\theta` is reported relative to rank 1 (PBM) or to
:math:`\gamma_{1,1}` (UBM), the first rank without a click above. Standard
errors come from the Fisher information of the cells, inverted by blocks
(:mod:`._stats`; exact here because pairs interact only through
:math:`\theta`).

Trust bias (Agarwal et al. (2019b); Vardasbi et al. (2020b)) is fitted as a
two-class latent model: every (query, doc) pair is relevant
(:math:`R_{qd} = 1`) or not, with prior :math:`\pi`, and

.. math::
    P(C = 1 \mid R = 1, r) = \theta_r\epsilon^+_r =: a_r, \qquad
    P(C = 1 \mid R = 0, r) = \theta_r\epsilon^-_r =: b_r.

EM alternates the posterior :math:`w_{qd} = P(R_{qd} = 1 \mid \text{its clicks})`
(a two-term mixture per pair, from its cell counts) and the closed-form
:math:`a_r = \sum w c / \sum w n`, :math:`b_r = \sum (1-w) c / \sum (1-w) n`,
:math:`\pi = \bar w`. The affine correction needs
:math:`\alpha_r = a_r - b_r` and :math:`\beta_r = b_r`
(:meth:`TrustFit.affine_parameters`). Relevance is modelled as a property of
the pair, so the model is identified when documents are either relevant or
not; with graded relevance it is an approximation. Standard errors of
:math:`(a, b, \pi)` are the outer product of the per-pair scores
(pairs are the independent units).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import expit, logsumexp

from ..._core._validation import EstimationError
from .._position import PBM, TrustBias
from .._ubm import UBM, _ubm_marginals
from ._base import FittedClickModel, PairLookup
from ._sessions import Sessions
from ._stats import squarem

__all__ = [
    "fit_pbm",
    "fit_ubm",
    "fit_trust",
    "PBMFit",
    "UBMFit",
    "TrustFit",
    "cells",
    "rank_distance",
]

_LO, _HI = 1e-12, 1 - 1e-12


def cells(sessions: Sessions, cell: np.ndarray) -> dict[str, np.ndarray]:
    """Weighted impressions ``n`` and clicks ``c`` per (pair ``g``, examination cell ``e``).

    ``cell`` is an int ``[U, K]`` array of examination-cell indices of the slots.
    """
    shown = sessions.shown
    g = sessions.pair[shown]
    e = cell[shown].astype(np.int64)
    w = np.broadcast_to(sessions.weight[:, None], sessions.pair.shape)[shown]
    n_e = int(e.max()) + 1 if e.size else 1
    key = g * n_e + e
    uniq, inv = np.unique(key, return_inverse=True)
    return {
        "g": uniq // n_e,
        "e": uniq % n_e,
        "n": np.bincount(inv, weights=w, minlength=uniq.size),
        "c": np.bincount(inv, weights=w * sessions.click[shown], minlength=uniq.size),
    }


def _product_em(
    st: dict, G: int, E: int, shrinkage: float, max_iter: int, tol: float, accelerate: bool = True
):
    """EM of P(C = 1) = theta_e alpha_g on cell counts (module docstring)."""
    g, e, n, c = st["g"], st["e"], st["n"], st["c"]
    nc = n - c
    n_e = np.bincount(e, n, minlength=E)
    n_g = np.bincount(g, n, minlength=G)
    has_e, has_g = n_e > 0, n_g > 0
    ctr_e = np.bincount(e, c, minlength=E) / np.maximum(n_e, 1)
    theta0 = np.clip(ctr_e / max(ctr_e[0], 1e-12), 1e-3, 1.0)
    alpha0 = np.clip(
        np.bincount(g, c, minlength=G)
        / np.maximum(np.bincount(g, n * theta0[e], minlength=G), 1e-12),
        1e-6,
        0.999,
    )
    m = float(shrinkage)

    def step(x: np.ndarray) -> tuple[np.ndarray, float]:
        t, a = x[:E][e], x[E:][g]
        p = t * a
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = float(
                np.where(c > 0, c * np.log(p), 0.0).sum()
                + np.where(nc > 0, nc * np.log1p(-p), 0.0).sum()
            )
        q = np.maximum(1.0 - p, 1e-300)
        new_t = np.bincount(e, c + nc * t * (1 - a) / q, minlength=E) / np.maximum(n_e, 1e-300)
        num_a = np.bincount(g, c + nc * (1 - t) * a / q, minlength=G)
        mu = num_a[has_g].sum() / n_g[has_g].sum()
        new_a = (num_a + m * mu) / (n_g + m) if m > 0 else num_a / np.maximum(n_g, 1e-300)
        if m > 0:
            aa = x[E:][has_g]
            ll += m * float(
                (
                    mu * np.log(np.maximum(aa, _LO)) + (1 - mu) * np.log(np.maximum(1 - aa, _LO))
                ).sum()
            )
        new_t = np.where(has_e, new_t, x[:E])
        new_a = np.where(has_g, new_a, mu)
        return np.clip(np.r_[new_t, new_a], _LO, _HI), ll

    x, it, conv, ll = squarem(
        step,
        np.r_[theta0, alpha0],
        lower=_LO,
        upper=_HI,
        max_iter=max_iter,
        tol=tol,
        accelerate=accelerate,
    )
    _, ll = step(x)
    theta, alpha = x[:E].copy(), x[E:].copy()
    ref = theta[0]
    theta /= ref
    alpha *= ref
    return theta, alpha, it, conv, ll, has_e


def _product_se(st: dict, theta: np.ndarray, alpha: np.ndarray, G: int, E: int):
    """Standard errors of theta (theta_0 = 1 fixed) and alpha from the cells' Fisher information."""
    g, e, n = st["g"], st["e"], st["n"]
    t, a = theta[e], alpha[g]
    p = t * a
    boundary = (alpha < 1e-8) | (alpha > 1 - 1e-8)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = n / (p * (1 - p))
    v = np.where(np.isfinite(v) & ~boundary[g], v, 0.0)
    A = np.bincount(e, v * a * a, minlength=E)
    D = np.bincount(g, v * t * t, minlength=G)
    Bsp = sparse.csr_matrix((v * a * t, (g, e)), shape=(G, E))
    free = np.flatnonzero(A > 0)
    free = free[free != 0]
    ok = D > 0
    Dinv = np.where(ok, 1.0 / np.where(ok, D, 1.0), 0.0)
    Bf = Bsp[:, free]
    schur = np.diag(A[free]) - (Bf.T @ sparse.diags(Dinv) @ Bf).toarray()
    try:
        V = np.linalg.inv(schur)
    except np.linalg.LinAlgError:
        V = np.linalg.pinv(schur)
    se_theta = np.full(E, np.nan)
    se_theta[0] = 0.0
    se_theta[free] = np.sqrt(np.maximum(np.diag(V), 0.0))
    BV = np.asarray(Bf @ V)
    quad = np.asarray(Bf.multiply(BV).sum(axis=1)).ravel()
    var_a = Dinv + Dinv**2 * quad
    se_alpha = np.where(ok & ~boundary, np.sqrt(np.maximum(var_a, 0.0)), np.nan)
    return se_theta, se_alpha


class PBMFit(FittedClickModel):
    r"""Fitted position-based model: :math:`P(C_r = 1) = \theta_r \alpha_{qd}`."""

    def _theta(self, K: int) -> np.ndarray:
        return np.nan_to_num(self.globals["theta"][:K], nan=0.0)

    def conditional_probabilities(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        return self._lookup(self.attractiveness, s) * self._theta(s.K)

    marginal_probabilities = conditional_probabilities

    def examination(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        return np.where(s.shown, self._theta(s.K), 0.0)

    def click_model(self) -> PBM:
        theta = self._theta(self.K)
        top = max(float(theta.max()), 1e-300)
        return PBM(
            examination=theta / top,
            attractiveness=PairLookup(np.minimum(self.attractiveness * top, 1.0)),
        )


class UBMFit(FittedClickModel):
    r"""Fitted user browsing model: :math:`P(C_r = 1 \mid C_{<r}) = \gamma_{r,d}\alpha_{qd}`."""

    def _gamma(self, K: int) -> np.ndarray:
        return np.nan_to_num(self.globals["gamma"][:K, :K], nan=0.0)

    def examination(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        r, d = rank_distance(s)
        return np.where(s.shown, self._gamma(s.K)[r, d - 1], 0.0)

    def conditional_probabilities(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        return self.examination(s) * self._lookup(self.attractiveness, s)

    def marginal_probabilities(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        out = np.empty(s.pair.shape)
        _ubm_marginals(self._lookup(self.attractiveness, s), self._gamma(s.K), out)
        return out

    def click_model(self) -> UBM:
        gamma = self._gamma(self.K)
        top = max(float(gamma.max()), 1e-300)
        return UBM(
            gamma=gamma / top, attractiveness=PairLookup(np.minimum(self.attractiveness * top, 1.0))
        )


class TrustFit(FittedClickModel):
    r"""Fitted two-class trust-bias model: :math:`P(C_r = 1) = b_r + (a_r - b_r) w_{qd}`.

    ``attractiveness`` holds the posterior probability of relevance
    :math:`w_{qd}`; ``globals`` hold ``click_relevant`` :math:`a_r`,
    ``click_irrelevant`` :math:`b_r` and ``prior_relevant`` :math:`\pi`.
    """

    def affine_parameters(self, K: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        r"""Affine parameters ``(alpha, beta)``: :math:`\alpha_r = a_r - b_r`, :math:`\beta_r = b_r`

        :math:`P(C = 1 \mid qd, r) = \alpha_r R_{qd} + \beta_r` (Vardasbi et al. (2020b), Eq. 9).
        """
        K = self.K if K is None else int(K)
        a = self.globals["click_relevant"][:K]
        b = self.globals["click_irrelevant"][:K]
        return a - b, b.copy()

    def conditional_probabilities(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        a = np.nan_to_num(self.globals["click_relevant"][: s.K])
        b = np.nan_to_num(self.globals["click_irrelevant"][: s.K])
        w = self._lookup(self.attractiveness, s)
        return np.where(s.shown, b + (a - b) * w, 0.0)

    marginal_probabilities = conditional_probabilities

    def examination(self, sessions: Sessions) -> np.ndarray:
        raise EstimationError(
            "the trust-bias model has no examination propensity; use the "
            "affine correction (clickrank.targets.affine)"
        )

    def click_model(self) -> TrustBias:
        return TrustBias(
            examination=1.0,
            relevance=PairLookup(self.attractiveness.copy()),
            eps_plus=np.nan_to_num(self.globals["click_relevant"]),
            eps_minus=np.nan_to_num(self.globals["click_irrelevant"]),
        )


def _common(sessions: Sessions, name: str) -> dict:
    n, c = sessions.pair_counts()
    return {
        "name": name,
        "pairs": sessions.pairs,
        "K": sessions.K,
        "impressions": n,
        "clicks": c,
        "n_sessions": sessions.n_sessions,
        "n_unique": sessions.n_unique,
    }


def fit_pbm(
    sessions: Sessions, *, shrinkage: float = 0.0, max_iter: int = 1000, tol: float = 1e-7
) -> PBMFit:
    """Fit the PBM by EM on (pair, rank) counts (module docstring)."""
    G, K = sessions.n_pairs, sessions.K
    rank = np.broadcast_to(np.arange(K), sessions.pair.shape)
    st = cells(sessions, rank)
    theta, alpha, it, conv, ll, has = _product_em(st, G, K, shrinkage, max_iter, tol)
    se_t, se_a = _product_se(st, theta, alpha, G, K)
    theta[~has] = np.nan
    return PBMFit(
        attractiveness=np.r_[alpha, _prior(alpha, st, G)],
        attractiveness_se=se_a,
        globals={"theta": theta},
        globals_se={"theta": se_t},
        iterations=it,
        converged=conv,
        log_likelihood=ll,
        shrinkage=float(shrinkage),
        info={
            "method": "EM on (pair, rank) counts",
            "reference": "Craswell et al. 2008; Chuklin et al. 2015 §4",
            "normalization": "theta[1] = 1",
        },
        **_common(sessions, "pbm"),
    )


def _prior(alpha: np.ndarray, st: dict, G: int) -> float:
    """The pooled estimate: the attractiveness of a pair never seen in training."""
    n_g = np.bincount(st["g"], st["n"], minlength=G)
    seen = n_g > 0
    return float(np.average(alpha[seen], weights=n_g[seen])) if seen.any() else 0.5


def rank_distance(sessions: Sessions) -> tuple[np.ndarray, np.ndarray]:
    """0-based rank and distance d = r - r' to the previous click (r' = 0: none), ``[U, K]``."""
    K = sessions.K
    pos = np.arange(1, K + 1)
    last = np.maximum.accumulate(np.where(sessions.click, pos, 0), axis=1)
    prev = np.zeros_like(last)
    prev[:, 1:] = last[:, :-1]
    return np.broadcast_to(pos - 1, last.shape), pos - prev


def fit_ubm(
    sessions: Sessions, *, shrinkage: float = 0.0, max_iter: int = 1000, tol: float = 1e-7
) -> UBMFit:
    """Fit the UBM by EM on (pair, rank, distance) counts (module docstring)."""
    G, K = sessions.n_pairs, sessions.K
    r, d = rank_distance(sessions)
    cell = r * K + (d - 1)  # [K, K] flattened; 0 = (rank 1, distance 1)
    st = cells(sessions, cell)
    theta, alpha, it, conv, ll, has = _product_em(st, G, K * K, shrinkage, max_iter, tol)
    se_t, se_a = _product_se(st, theta, alpha, G, K * K)
    theta[~has] = np.nan
    se_t[~has] = np.nan
    return UBMFit(
        attractiveness=np.r_[alpha, _prior(alpha, st, G)],
        attractiveness_se=se_a,
        globals={"gamma": theta.reshape(K, K)},
        globals_se={"gamma": se_t.reshape(K, K)},
        iterations=it,
        converged=conv,
        log_likelihood=ll,
        shrinkage=float(shrinkage),
        info={
            "method": "EM on (pair, rank, distance) counts",
            "reference": "Dupret & Piwowarski 2008",
            "normalization": "gamma[1, 1] = 1",
        },
        **_common(sessions, "ubm"),
    )


def _trust_se(
    st: dict[str, np.ndarray],
    w: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    pi: float,
    seen: np.ndarray,
    G: int,
    K: int,
) -> np.ndarray:
    """SEs of (a, b, pi) from the per-pair scores: the after-EM step of :func:`fit_trust`."""
    g, e, n, c = st["g"], st["e"], st["n"], st["c"]
    nc = n - c
    # outer product of per-pair scores (pairs are independent)
    we = w[g]
    sa = np.zeros((G, K))
    sb = np.zeros((G, K))
    np.add.at(sa, (g, e), we * (c / a[e] - nc / (1 - a[e])))
    np.add.at(sb, (g, e), (1 - we) * (c / b[e] - nc / (1 - b[e])))
    sp = w / pi - (1 - w) / (1 - pi)
    S = np.c_[sa, sb, sp][seen]
    info = S.T @ S
    keep = np.diag(info) > 0
    V = np.full(info.shape, np.nan)
    V[np.ix_(keep, keep)] = np.linalg.pinv(info[np.ix_(keep, keep)])
    se = np.sqrt(np.maximum(np.diag(V), 0.0))
    return se


def fit_trust(
    sessions: Sessions, *, shrinkage: float = 0.0, max_iter: int = 1000, tol: float = 1e-7
) -> TrustFit:
    r"""Fit the two-class trust-bias model by EM on (pair, rank) counts (module docstring).

    ``shrinkage`` is accepted for a uniform interface; the per-pair quantity
    here is a posterior probability, which needs no prior beyond :math:`\pi`.
    """
    G, K = sessions.n_pairs, sessions.K
    rank = np.broadcast_to(np.arange(K), sessions.pair.shape)
    st = cells(sessions, rank)
    g, e, n, c = st["g"], st["e"], st["n"], st["c"]
    nc = n - c
    seen = np.bincount(g, n, minlength=G) > 0
    n_e = np.bincount(e, n, minlength=K)
    ctr_e = np.bincount(e, c, minlength=K) / np.maximum(n_e, 1)
    rel = np.bincount(g, c, minlength=G) / np.maximum(
        np.bincount(g, n * ctr_e[e], minlength=G), 1e-12
    )
    w0 = (rel > np.median(rel[seen])).astype(float) if seen.any() else np.zeros(G)

    def m_step(w: np.ndarray) -> np.ndarray:
        we = w[g]
        a = np.bincount(e, we * c, minlength=K) / np.maximum(
            np.bincount(e, we * n, minlength=K), 1e-300
        )
        b = np.bincount(e, (1 - we) * c, minlength=K) / np.maximum(
            np.bincount(e, (1 - we) * n, minlength=K), 1e-300
        )
        pi = w[seen].mean() if seen.any() else 0.5
        return np.clip(np.r_[a, b, pi], 1e-9, 1 - 1e-9)

    def loglik_parts(x: np.ndarray):
        a, b, pi = x[:K], x[K : 2 * K], x[2 * K]
        la = np.bincount(g, c * np.log(a[e]) + nc * np.log1p(-a[e]), minlength=G) + np.log(pi)
        lb = np.bincount(g, c * np.log(b[e]) + nc * np.log1p(-b[e]), minlength=G) + np.log1p(-pi)
        return la, lb

    def step(x: np.ndarray) -> tuple[np.ndarray, float]:
        la, lb = loglik_parts(x)
        w = np.where(seen, expit(la - lb), 0.0)
        ll = float(logsumexp(np.c_[la, lb][seen], axis=1).sum())
        return m_step(w), ll

    x, it, conv, ll = squarem(
        step, m_step(w0), lower=1e-9, upper=1 - 1e-9, max_iter=max_iter, tol=tol
    )
    _, ll = step(x)
    a, b, pi = x[:K].copy(), x[K : 2 * K].copy(), float(x[2 * K])
    if a[0] < b[0]:  # label switching: the relevant class clicks more at rank 1
        a, b, pi = b, a, 1 - pi
        x = np.r_[a, b, pi]
    la, lb = loglik_parts(x)
    w = np.where(seen, expit(la - lb), pi)
    se = _trust_se(st, w, a, b, pi, seen, G, K)
    has = n_e > 0
    a[~has] = np.nan
    b[~has] = np.nan
    return TrustFit(
        attractiveness=np.r_[w, pi],
        attractiveness_se=np.full(G, np.nan),
        globals={"click_relevant": a, "click_irrelevant": b, "prior_relevant": np.array([pi])},
        globals_se={
            "click_relevant": se[:K],
            "click_irrelevant": se[K : 2 * K],
            "prior_relevant": se[2 * K :],
        },
        iterations=it,
        converged=conv,
        log_likelihood=ll,
        shrinkage=float(shrinkage),
        info={
            "method": "EM, two-class latent relevance per (query, doc)",
            "reference": "Agarwal et al. 2019; Vardasbi et al. 2020",
        },
        **_common(sessions, "trust"),
    )
