r"""The cascade family fitted by EM: cascade, DCM, SDBN and DBN.

All four models scan the list top-down (:mod:`clickrank.clickmodels._cascade`):
an examining user clicks rank :math:`j` with probability :math:`\alpha_j`
(the attractiveness of the (query, doc) pair there); after a click she is
satisfied with probability :math:`\sigma_j` and otherwise goes on with
probability :math:`\lambda_j`; after a skip she goes on with probability
:math:`\kappa_j`.

=========  ==================  =====================  ==============
model      :math:`\lambda_j`   :math:`\sigma_j`       :math:`\kappa_j`
=========  ==================  =====================  ==============
cascade    0                   --                     1
DCM        per rank            0                      1
SDBN       1                   per pair               1
DBN        :math:`\gamma`      per pair               :math:`\gamma`
=========  ==================  =====================  ==============

E-step (Chapelle & Zhang (2009), appendix; Guo et al. (2009)), one compiled
pass over the distinct sessions. With :math:`l` the last clicked rank, every
rank up to :math:`l` was examined, the user went on after every earlier click
(not satisfied) and every earlier skip. After :math:`l` she either stopped or
went on and clicked nothing more; with the tail probability
:math:`T_j = P(\text{no click at } j..n \mid E_j = 1) = (1-\alpha_j)[1-\kappa_j
+ \kappa_j T_{j+1}]`, :math:`T_{n+1} = 1`,

.. math::
    P(\text{session}) = \prod_{j<l} \alpha_j^{c_j}(1-\alpha_j)^{1-c_j}
        [\lambda_j(1-\sigma_j)]^{c_j}\kappa_j^{1-c_j}
        \;\alpha_l \bigl[1 - \lambda_l(1-\sigma_l) + \lambda_l(1-\sigma_l) T_{l+1}\bigr],

(:math:`T_1` for a session without clicks), and the posteriors of
examination below :math:`l`, of satisfaction at :math:`l` and of every
"go on" coin follow from the same terms. M-steps (closed form, weighted by
the multiplicity of each distinct session):

.. math::
    \alpha_{qd} = \frac{\sum c + m\mu}{\sum P(E = 1 \mid \mathbf c) + m},\quad
    \sigma_{qd} = \frac{\sum_{\text{clicks}} P(S = 1 \mid \mathbf c) + m\mu_\sigma}
                        {\#\text{clicks} + m},\quad
    \gamma = \frac{E[\#\text{coins that went on}]}{E[\#\text{coins}]}

(:math:`\lambda_r` of the DCM per rank from the coins after clicks at
:math:`r`). A click on the last displayed rank says nothing about
satisfaction or the coin after it, so it does not enter :math:`\sigma` or
:math:`\gamma`; :math:`\lambda_K` of the DCM is not identified (NaN). The
cascade itself is fitted in closed form on the part of every session up to
its first click (the model allows no later click; such sessions are counted
in a warning): :math:`\alpha = \#\text{clicks}/\#\text{examined}`.

Standard errors: the outer product of the per-session scores (Fisher's
identity: the observed score is the posterior expectation of the
complete-data score), inverted by blocks (:mod:`._stats`) with the
pair-by-pair blocks of different pairs neglected. The cascade's binomial
errors are exact.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import numpy as np
from numba import njit

from .._cascade import DBN, DCM, SDBN, Cascade, _marginals
from ._base import FittedClickModel, PairLookup
from ._sessions import Sessions
from ._stats import block_covariance, squarem

__all__ = ["fit_cascade", "fit_dcm", "fit_sdbn", "fit_dbn", "CascadeFamilyFit"]

_CLIP = 1e-9
_MODELS = {"cascade": (0, False), "dcm": (2, False), "sdbn": (0, True), "dbn": (1, True)}


@njit(cache=True, inline="always")
def _posteriors(pr, cl, a, s, lam, kap, T, pe, ps, ctt, cts, stt, sts):  # pragma: no cover
    """Posteriors of one session (module docstring); returns (length, last click, loglik)."""
    K = pr.size
    n = 0
    while n < K and pr[n] >= 0:
        n += 1
    last = -1
    for j in range(n):
        pe[j] = 0.0
        ps[j] = 0.0
        ctt[j] = 0.0
        cts[j] = 0.0
        stt[j] = 0.0
        sts[j] = 0.0
        if cl[j]:
            last = j
    T[n] = 1.0
    for j in range(n - 1, last, -1):
        T[j] = (1.0 - a[j]) * ((1.0 - kap[j]) + kap[j] * T[j + 1])
    ll = 0.0
    prod = 1.0
    for j in range(max(last, 0)):
        pe[j] = 1.0
        if cl[j]:
            prod *= a[j] * max(lam[j] * (1.0 - s[j]), 1e-300)
            ctt[j] = 1.0
            cts[j] = 1.0
        else:
            prod *= (1.0 - a[j]) * max(kap[j], 1e-300)
            stt[j] = 1.0
            sts[j] = 1.0
        if prod < 1e-200:  # keep the running product in range
            ll += math.log(prod)
            prod = 1.0
    if last >= 0:
        pe[last] = 1.0
        cont = lam[last] * (1.0 - s[last])
        if last < n - 1:
            D = (1.0 - cont) + cont * T[last + 1]
            ps[last] = s[last] / D
            ctt[last] = (1.0 - s[last]) * ((1.0 - lam[last]) + lam[last] * T[last + 1]) / D
            cts[last] = cont * T[last + 1] / D
            f = cont / D
        else:
            D = 1.0
            ps[last] = -1.0  # a click on the last rank: satisfaction unobservable
            f = 0.0
        ll += math.log(prod * a[last] * D)
        start = last + 1
    else:
        ll += math.log(prod * T[0])
        f = 1.0 / T[0]
        start = 0
    for j in range(start, n):
        pe[j] = f * T[j]
        if j < n - 1:
            stt[j] = pe[j]
            sts[j] = f * (1.0 - a[j]) * kap[j] * T[j + 1]
        f *= (1.0 - a[j]) * kap[j]
    return n, last, ll


@njit(cache=True, inline="always")
def _fill_params(pr, alpha, sigma, use_sigma, a, s, clip):  # pragma: no cover - numba
    for j in range(pr.size):
        g = pr[j]
        if g < 0:
            break
        a[j] = min(max(alpha[g], clip), 1.0 - clip)
        s[j] = min(max(sigma[g], clip), 1.0 - clip) if use_sigma else 0.0


@njit(cache=True, nogil=True)
def _em_block(
    pair,
    click,
    weight,
    alpha,
    sigma,
    use_sigma,
    lam,
    kap,
    lo,
    hi,
    a_num,
    a_den,
    s_num,
    s_den,
    ct_t,
    ct_s,
    st_t,
    st_s,
):  # pragma: no cover
    """E-step sums of sessions ``lo:hi``: the posteriors of :func:`_posteriors`, fused.

    Returns the log-likelihood of the block. (The same posteriors as
    :func:`_posteriors`, written as one pass for speed; a test checks that the
    two agree.)
    """
    K = pair.shape[1]
    a = np.empty(K)
    s = np.zeros(K)
    T = np.empty(K + 1)
    total = 0.0
    for u in range(lo, hi):
        w = weight[u]
        n = 0
        last = -1
        for j in range(K):
            g = pair[u, j]
            if g < 0:
                break
            a[j] = min(max(alpha[g], _CLIP), 1.0 - _CLIP)
            if use_sigma:
                s[j] = min(max(sigma[g], _CLIP), 1.0 - _CLIP)
            if click[u, j]:
                last = j
            n += 1
        T[n] = 1.0
        for j in range(n - 1, last, -1):
            T[j] = (1.0 - a[j]) * ((1.0 - kap[j]) + kap[j] * T[j + 1])
        prod = 1.0
        for j in range(max(last, 0)):
            g = pair[u, j]
            a_den[g] += w
            if click[u, j]:
                prod *= a[j] * max(lam[j] * (1.0 - s[j]), 1e-300)
                a_num[g] += w
                s_den[g] += w
                ct_t[j] += w
                ct_s[j] += w
            else:
                prod *= (1.0 - a[j]) * max(kap[j], 1e-300)
                st_t[j] += w
                st_s[j] += w
            if prod < 1e-200:
                total += w * math.log(prod)
                prod = 1.0
        if last >= 0:
            g = pair[u, last]
            a_den[g] += w
            a_num[g] += w
            cont = lam[last] * (1.0 - s[last])
            if last < n - 1:
                D = (1.0 - cont) + cont * T[last + 1]
                s_num[g] += w * s[last] / D
                s_den[g] += w
                stop_or_go = (1.0 - lam[last]) + lam[last] * T[last + 1]
                ct_t[last] += w * (1.0 - s[last]) * stop_or_go / D
                ct_s[last] += w * cont * T[last + 1] / D
                f = cont / D
            else:
                D = 1.0
                f = 0.0
            total += w * math.log(prod * a[last] * D)
            start = last + 1
        else:
            total += w * math.log(prod * T[0])
            f = 1.0 / T[0]
            start = 0
        for j in range(start, n):
            g = pair[u, j]
            pe = f * T[j]
            a_den[g] += w * pe
            if j < n - 1:
                st_t[j] += w * pe
                st_s[j] += w * f * (1.0 - a[j]) * kap[j] * T[j + 1]
            f *= (1.0 - a[j]) * kap[j]
    return total


def _em_pass(
    pair, click, weight, alpha, sigma, use_sigma, lam, kap, n_blocks, per_pair, per_rank
) -> float:
    """E-step over all sessions in ``n_blocks`` fixed blocks, run on up to two threads.

    ``per_pair`` is ``[n_blocks, 4, G]`` (alpha num/den, sigma num/den) and
    ``per_rank`` ``[n_blocks, 4, K]`` (coin trials/successes after clicks and
    after skips). The block boundaries do not depend on the number of
    threads, so neither do the sums (the compiled block releases the GIL).
    """
    U = pair.shape[0]

    def block(b: int) -> float:
        lo, hi = U * b // n_blocks, U * (b + 1) // n_blocks
        return _em_block(
            pair,
            click,
            weight,
            alpha,
            sigma,
            use_sigma,
            lam,
            kap,
            lo,
            hi,
            *per_pair[b],
            *per_rank[b],
        )

    if n_blocks == 1:
        return block(0)
    return float(sum(_pool().map(block, range(n_blocks))))


_POOL: list = []


def _pool():
    """A small shared thread pool (the E-step blocks run without the GIL)."""
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(
            ThreadPoolExecutor(
                max_workers=min(2, os.cpu_count() or 1), thread_name_prefix="clickrank-em"
            )
        )
    return _POOL[0]


@njit(cache=True)
def _score_pass(
    pair, click, weight, alpha, sigma, use_sigma, lam, kap, kind, A, B, D
):  # pragma: no cover - numba
    """Outer products of per-session scores: global (A), global x pair (B), pair (D)."""
    U, K = pair.shape
    P = A.shape[0]
    a = np.zeros(K)
    s = np.zeros(K)
    T = np.ones(K + 1)
    pe = np.zeros(K)
    ps = np.zeros(K)
    ctt = np.zeros(K)
    cts = np.zeros(K)
    stt = np.zeros(K)
    sts = np.zeros(K)
    sg = np.zeros(max(P, 1))
    sa = np.zeros(K)
    ss = np.zeros(K)
    for u in range(U):
        pr = pair[u]
        cl = click[u]
        w = weight[u]
        _fill_params(pr, alpha, sigma, use_sigma, a, s, 1e-9)
        n, last, ll = _posteriors(pr, cl, a, s, lam, kap, T, pe, ps, ctt, cts, stt, sts)
        for p in range(P):
            sg[p] = 0.0
        for j in range(n):
            sa[j] = cl[j] / a[j] - (pe[j] - cl[j]) / (1.0 - a[j])
            ss[j] = 0.0
            if use_sigma and cl[j] and ps[j] >= 0.0:
                ss[j] = ps[j] / s[j] - (1.0 - ps[j]) / (1.0 - s[j])
            if kind == 1:  # DBN gamma: every coin
                g_ = lam[0]
                sg[0] += (cts[j] + sts[j]) / g_ - (ctt[j] - cts[j] + stt[j] - sts[j]) / (1.0 - g_)
            elif kind == 2 and j < P:  # DCM lambda_j: coins after clicks
                lj = lam[j]
                sg[j] += cts[j] / lj - (ctt[j] - cts[j]) / (1.0 - lj)
        for p in range(P):
            for q in range(P):
                A[p, q] += w * sg[p] * sg[q]
        for j in range(n):
            g = pr[j]
            for p in range(P):
                B[g, p, 0] += w * sg[p] * sa[j]
                if use_sigma:
                    B[g, p, 1] += w * sg[p] * ss[j]
            D[g, 0, 0] += w * sa[j] * sa[j]
            if use_sigma:
                D[g, 0, 1] += w * sa[j] * ss[j]
                D[g, 1, 0] += w * sa[j] * ss[j]
                D[g, 1, 1] += w * ss[j] * ss[j]


@njit(cache=True)
def _filter(pair, click, alpha, sigma, use_sigma, lam, kap, out):  # pragma: no cover
    r""":math:`P(E_j = 1 \mid C_{<j})` by forward filtering (Bayes after every skip)."""
    U, K = pair.shape
    for u in range(U):
        e = 1.0
        for j in range(K):
            g = pair[u, j]
            if g < 0:
                for jj in range(j, K):
                    out[u, jj] = 0.0
                break
            out[u, j] = e
            a = alpha[g]
            if click[u, j]:
                e = lam[j] * (1.0 - (sigma[g] if use_sigma else 0.0))
            else:
                q = 1.0 - e * a
                e = kap[j] * e * (1.0 - a) / q if q > 0.0 else 0.0


class CascadeFamilyFit(FittedClickModel):
    """A fitted cascade, DCM, SDBN or DBN model (see the module docstring)."""

    def _rates(self, K: int) -> tuple[np.ndarray, np.ndarray]:
        g = self.globals
        if self.name == "cascade":
            return np.zeros(K), np.ones(K)
        if self.name == "dcm":
            return np.nan_to_num(g["continuation"][:K], nan=0.5), np.ones(K)
        if self.name == "sdbn":
            return np.ones(K), np.ones(K)
        gamma = float(g["gamma"][0])
        return np.full(K, gamma), np.full(K, gamma)

    def _sigma(self) -> np.ndarray:
        return self.satisfaction if self.satisfaction is not None else np.zeros(1)

    def conditional_probabilities(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        return self._conditional_examination(s) * self._lookup(self.attractiveness, s)

    def _conditional_examination(self, s: Sessions) -> np.ndarray:
        lam, kap = self._rates(s.K)
        out = np.empty(s.pair.shape)
        _filter(
            s.pair,
            s.click,
            self.attractiveness,
            self._sigma(),
            self.satisfaction is not None,
            lam,
            kap,
            out,
        )
        return out

    def marginal_probabilities(self, sessions: Sessions) -> np.ndarray:
        s = self._aligned(sessions)
        lam, kap = self._rates(s.K)
        sigma = None if self.satisfaction is None else self._lookup(self.satisfaction, s)
        return _marginals(self._lookup(self.attractiveness, s), sigma, lam, kap)

    def examination(self, sessions: Sessions) -> np.ndarray:
        r"""Examination given the clicks above (Vardasbi et al. (2020a)).

        .. math::
            P(E_r = 1 \mid A_{<r} = c_{<r})
            = \prod_{i<r} \bigl[c_i \lambda_i (1 - \sigma_i) + (1 - c_i) \kappa_i\bigr]

        the examination probability of rank :math:`r` if the documents above
        were attractive exactly where they were clicked; 0 below a click after
        which the model never goes on (the cascade). Dividing a click by it is
        unbiased for the attractiveness when the model holds.
        """
        s = self._aligned(sessions)
        lam, kap = self._rates(s.K)
        sig = 0.0 if self.satisfaction is None else self._lookup(self.satisfaction, s)
        step = np.where(s.click, lam * (1.0 - sig), kap)
        out = np.ones(s.pair.shape)
        np.cumprod(step[:, :-1], axis=1, out=out[:, 1:])
        return np.where(s.shown, out, 0.0)

    def click_model(self):
        a = PairLookup(self.attractiveness.copy())
        if self.name == "cascade":
            return Cascade(attractiveness=a)
        if self.name == "dcm":
            lam = self.globals["continuation"].copy()
            lam[~np.isfinite(lam)] = 0.5  # not identified: no effect on a K-result list
            return DCM(attractiveness=a, continuation=lam)
        sat = PairLookup(self.satisfaction.copy())
        if self.name == "sdbn":
            return SDBN(attractiveness=a, satisfaction=sat)
        return DBN(attractiveness=a, satisfaction=sat, gamma=float(self.globals["gamma"][0]))


def _init(sessions: Sessions) -> tuple[np.ndarray, np.ndarray]:
    """Attractiveness and satisfaction as if every rank up to the last click was examined."""
    G, K = sessions.n_pairs, sessions.K
    shown, c, w = sessions.shown, sessions.click, sessions.weight
    pos = np.arange(K)
    last = np.where(c.any(axis=1), K - 1 - np.argmax(c[:, ::-1], axis=1), K - 1)
    exam = shown & (pos <= last[:, None])
    g = sessions.pair[shown]
    ww = np.broadcast_to(w[:, None], c.shape)
    num = np.bincount(g, (ww * c)[shown], minlength=G)
    den = np.bincount(g, (ww * exam)[shown], minlength=G)
    a = np.clip(num / np.maximum(den, 1e-300), 0.05, 0.95)
    is_last = c & (pos == last[:, None]) & (last[:, None] < (shown.sum(axis=1) - 1)[:, None])
    sn = np.bincount(g, (ww * is_last)[shown], minlength=G)
    s = np.clip(sn / np.maximum(num, 1e-300), 0.05, 0.95)
    return a, s


def _family_step(
    sessions: Sessions, kind: int, use_sigma: bool, m: float, n_blocks: int
) -> tuple[Callable, Callable]:
    """Unpacking and EM step of the stacked parameters: what :func:`_fit_family` iterates."""
    G, K = sessions.n_pairs, sessions.K
    pair, click, weight = sessions.pair, sessions.click, sessions.weight
    nG = G * (2 if use_sigma else 1)

    def unpack(x: np.ndarray):
        alpha = x[:G]
        sigma = x[G : 2 * G] if use_sigma else np.zeros(1)
        if kind == 1:
            lam = kap = np.full(K, x[nG])
        elif kind == 2:
            lam, kap = x[nG : nG + K], np.ones(K)
        else:
            lam, kap = np.ones(K), np.ones(K)
        return alpha, sigma, lam, kap

    def step(x: np.ndarray) -> tuple[np.ndarray, float]:
        alpha, sigma, lam, kap = unpack(x)
        per_pair = np.zeros((n_blocks, 4, G))
        per_rank = np.zeros((n_blocks, 4, K))
        ll = _em_pass(
            pair, click, weight, alpha, sigma, use_sigma, lam, kap, n_blocks, per_pair, per_rank
        )
        a_num, a_den, s_num, s_den = per_pair.sum(axis=0)
        ct_t, ct_s, st_t, st_s = per_rank.sum(axis=0)
        new = [_shrunk(a_num, a_den, m, x[:G])]
        if use_sigma:
            new.append(_shrunk(s_num, s_den, m, x[G : 2 * G]))
        if kind == 1:
            tot = ct_t.sum() + st_t.sum()
            new.append([(ct_s.sum() + st_s.sum()) / tot if tot > 0 else x[nG]])
        elif kind == 2:
            new.append(np.where(ct_t > 0, ct_s / np.maximum(ct_t, 1e-300), x[nG : nG + K]))
        if m > 0:
            ll += _penalty(x[:G], a_den, m) + (_penalty(x[G : 2 * G], s_den, m) if use_sigma else 0)
        return np.clip(np.concatenate([np.asarray(v, float) for v in new]), _CLIP, 1 - _CLIP), ll

    return unpack, step


def _family_se(
    sessions: Sessions,
    alpha: np.ndarray,
    sigma: np.ndarray,
    use_sigma: bool,
    lam: np.ndarray,
    kap: np.ndarray,
    kind: int,
    P: int,
) -> tuple[np.ndarray, np.ndarray]:
    """SEs of the globals, per-pair covariance blocks: the after-EM step of :func:`_fit_family`."""
    G = sessions.n_pairs
    pair, click, weight = sessions.pair, sessions.click, sessions.weight
    # standard errors
    A = np.zeros((P, P))
    mdim = 2 if use_sigma else 1
    Bm = np.zeros((G, P, mdim))
    Dm = np.zeros((G, mdim, mdim))
    _score_pass(pair, click, weight, alpha, sigma, use_sigma, lam, kap, kind, A, Bm, Dm)
    if kind == 2:  # lambda_r with coins only; the last rank is not identified
        ident = np.diag(A) > 0
        sub = np.flatnonzero(ident)
        Vg_sub, Vp = block_covariance(A[np.ix_(sub, sub)], Bm[:, sub, :], Dm)
        se_g = np.full(P, np.nan)
        se_g[sub] = np.sqrt(np.maximum(np.diag(Vg_sub), 0.0))
    else:
        Vg, Vp = block_covariance(A, Bm, Dm)
        se_g = np.sqrt(np.maximum(np.diag(Vg), 0.0))
    return se_g, Vp


def _family_globals(
    kind: int, lam: np.ndarray, se_g: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The global parameters and SEs by name: the result-assembling step of :func:`_fit_family`."""
    globals_, globals_se = {}, {}
    if kind == 1:
        globals_["gamma"], globals_se["gamma"] = np.array([lam[0]]), se_g
    elif kind == 2:
        lam = lam.copy()
        lam[se_g != se_g] = np.nan
        globals_["continuation"], globals_se["continuation"] = lam, se_g
    return globals_, globals_se


def _fit_family(
    sessions: Sessions,
    name: str,
    shrinkage: float,
    max_iter: int,
    tol: float,
    rel_tol: float,
    accelerate: bool = True,
) -> CascadeFamilyFit:
    kind, use_sigma = _MODELS[name]
    G, K = sessions.n_pairs, sessions.K
    m = float(shrinkage)
    P = {0: 0, 1: 1, 2: K}[kind]
    a0, s0 = _init(sessions)
    g0 = np.full(P, 0.9 if kind == 1 else 0.5)
    n_blocks = _n_blocks(sessions.n_unique, G)

    unpack, step = _family_step(sessions, kind, use_sigma, m, n_blocks)

    x0 = np.r_[a0, s0, g0] if use_sigma else np.r_[a0, g0]
    x, it, conv, ll = squarem(
        step,
        x0,
        lower=_CLIP,
        upper=1 - _CLIP,
        max_iter=max_iter,
        tol=tol,
        rel_tol=rel_tol,
        accelerate=accelerate,
    )
    _, ll = step(x)
    alpha, sigma, lam, kap = unpack(x)
    # unseen pairs / pairs without clicks for sigma: the pooled estimates
    n_imp, n_clk = sessions.pair_counts()
    seen = n_imp > 0
    a_prior = float(np.average(alpha[seen], weights=n_imp[seen])) if seen.any() else 0.5
    alpha = np.where(seen, alpha, a_prior)
    se_g, Vp = _family_se(sessions, alpha, sigma, use_sigma, lam, kap, kind, P)
    boundary_a = (alpha <= 10 * _CLIP) | (alpha >= 1 - 10 * _CLIP)
    se_a = np.where(seen & ~boundary_a, np.sqrt(np.maximum(Vp[:, 0, 0], 0.0)), np.nan)
    globals_, globals_se = _family_globals(kind, lam, se_g)
    kw = {}
    if use_sigma:
        sclick = n_clk > 0
        s_prior = float(np.average(sigma[sclick], weights=n_clk[sclick])) if sclick.any() else 0.5
        boundary_s = (sigma <= 10 * _CLIP) | (sigma >= 1 - 10 * _CLIP)
        se_s = np.where(sclick & ~boundary_s, np.sqrt(np.maximum(Vp[:, 1, 1], 0.0)), np.nan)
        kw = {
            "satisfaction": np.r_[np.where(sclick, sigma, s_prior), s_prior],
            "satisfaction_se": se_s,
        }
    refs = {
        "dcm": "Guo, Liu & Wang 2009",
        "sdbn": "Chapelle & Zhang 2009 §5",
        "dbn": "Chapelle & Zhang 2009",
    }
    return CascadeFamilyFit(
        name=name,
        pairs=sessions.pairs,
        K=K,
        attractiveness=np.r_[alpha, a_prior],
        attractiveness_se=se_a,
        globals=globals_,
        globals_se=globals_se,
        impressions=n_imp,
        clicks=n_clk,
        n_sessions=sessions.n_sessions,
        n_unique=sessions.n_unique,
        iterations=it,
        converged=conv,
        log_likelihood=ll,
        shrinkage=m,
        info={"method": "EM (SQUAREM)" if accelerate else "EM", "reference": refs[name]},
        **kw,
    )


def _n_blocks(U: int, G: int) -> int:
    """Blocks of the parallel E-step: a function of the data size only (not of the threads)."""
    return int(max(1, min(8, U // 20_000, 50_000_000 // max(4 * G, 1))))


def _shrunk(num: np.ndarray, den: np.ndarray, m: float, old: np.ndarray) -> np.ndarray:
    has = den > 0
    if not has.any():
        return old
    mu = num[has].sum() / den[has].sum()
    val = (num + m * mu) / (den + m) if m > 0 else num / np.where(has, den, 1.0)
    return np.where(has, val, mu)


def _penalty(x: np.ndarray, den: np.ndarray, m: float) -> float:
    has = den > 0
    mu = float(np.average(x[has], weights=den[has])) if has.any() else 0.5
    xs = np.clip(x[has], _CLIP, 1 - _CLIP)
    return m * float((mu * np.log(xs) + (1 - mu) * np.log1p(-xs)).sum())


def fit_dcm(
    sessions: Sessions,
    *,
    shrinkage: float = 0.0,
    max_iter: int = 500,
    tol: float = 1e-6,
    rel_tol: float = 1e-10,
) -> CascadeFamilyFit:
    """Fit the dependent click model (Guo et al. (2009)) by exact EM."""
    return _fit_family(sessions, "dcm", shrinkage, max_iter, tol, rel_tol)


def fit_sdbn(
    sessions: Sessions,
    *,
    shrinkage: float = 0.0,
    max_iter: int = 500,
    tol: float = 1e-6,
    rel_tol: float = 1e-10,
) -> CascadeFamilyFit:
    r"""Fit the simplified DBN (Chapelle & Zhang (2009), §5, :math:`\gamma = 1`) by exact EM."""
    return _fit_family(sessions, "sdbn", shrinkage, max_iter, tol, rel_tol)


def fit_dbn(
    sessions: Sessions,
    *,
    shrinkage: float = 0.0,
    max_iter: int = 500,
    tol: float = 1e-6,
    rel_tol: float = 1e-10,
) -> CascadeFamilyFit:
    """Fit the dynamic Bayesian network model (Chapelle & Zhang (2009)) by EM."""
    return _fit_family(sessions, "dbn", shrinkage, max_iter, tol, rel_tol)


def fit_cascade(
    sessions: Sessions, *, shrinkage: float = 0.0, max_iter: int = 1, tol: float = 0.0
) -> CascadeFamilyFit:
    """Fit the cascade model (Craswell et al. (2008)) in closed form (module docstring)."""
    G, K = sessions.n_pairs, sessions.K
    shown, c, w = sessions.shown, sessions.click, sessions.weight
    pos = np.arange(K)
    n_shown = shown.sum(axis=1)
    first = np.where(c.any(axis=1), np.argmax(c, axis=1), n_shown - 1)
    exam = shown & (pos <= first[:, None])
    clicked = c & (pos == first[:, None])
    g = sessions.pair[shown]
    ww = np.broadcast_to(w[:, None], c.shape)
    num = np.bincount(g, (ww * clicked)[shown], minlength=G)
    den = np.bincount(g, (ww * exam)[shown], minlength=G)
    m = float(shrinkage)
    seen_den = den > 0
    mu = num[seen_den].sum() / den[seen_den].sum() if seen_den.any() else 0.5
    alpha = np.where(seen_den, (num + m * mu) / np.maximum(den + m, 1e-300), mu)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(alpha * (1 - alpha) / den)
    se = np.where(seen_den & (alpha > 0) & (alpha < 1), se, np.nan)
    multi = float(w[c.sum(axis=1) > 1].sum())
    p = np.clip(alpha[np.maximum(sessions.pair, 0)], _CLIP, 1 - _CLIP)
    ll = float((ww * np.where(exam, np.where(clicked, np.log(p), np.log1p(-p)), 0.0)).sum())
    n_imp, n_clk = sessions.pair_counts()
    warns = []
    if multi:
        warns.append(
            f"{int(multi):,} sessions ({multi / w.sum():.1%}) have more than one click, "
            "which the cascade model cannot produce; they were fitted up to their "
            "first click"
        )
    return CascadeFamilyFit(
        name="cascade",
        pairs=sessions.pairs,
        K=K,
        attractiveness=np.r_[alpha, mu],
        attractiveness_se=se,
        globals={},
        globals_se={},
        impressions=n_imp,
        clicks=n_clk,
        n_sessions=sessions.n_sessions,
        n_unique=sessions.n_unique,
        iterations=1,
        converged=True,
        log_likelihood=ll,
        shrinkage=m,
        info={
            "method": "closed form (maximum likelihood up to the first click)",
            "reference": "Craswell, Zoeter, Taylor & Ramsey 2008",
            "warnings": warns,
            "sessions_with_several_clicks": multi,
        },
    )
