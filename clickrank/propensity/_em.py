r"""Position bias from logs without interventions: EM for the position-based model.

Wang et al. (2018), §4. Clicks follow
the PBM, :math:`P(C=1 \mid q, d, k) = \theta_k\,\gamma_{qd}`, with hidden
examination :math:`E` and relevance :math:`R` (:math:`C = E R`). EM on the
counts :math:`(c, n)` of every (query, doc, position) cell:

E-step, for the :math:`n - c` non-clicks of a cell

.. math::
    P(E=1, R=0 \mid C=0) = \frac{\theta_k(1-\gamma_{qd})}{1-\theta_k\gamma_{qd}},\qquad
    P(E=0, R=1 \mid C=0) = \frac{(1-\theta_k)\gamma_{qd}}{1-\theta_k\gamma_{qd}};

M-step (Eq. 3–4 of the paper, here aggregated over sessions)

.. math::
    \theta_k \leftarrow \frac{\sum_{qd} c_{qdk} + (n_{qdk}-c_{qdk})P(E=1,R=0\mid C=0)}
    {\sum_{qd} n_{qdk}}, \qquad
    \gamma_{qd} \leftarrow \frac{\sum_k c_{qdk} + (n_{qdk}-c_{qdk})P(E=0,R=1\mid C=0)}
    {\sum_k n_{qdk}}.

This is the maximum-likelihood fit of the PBM with one relevance per
(query, doc). The *regression* EM of the paper replaces the
:math:`\gamma` M-step by a regression on features, which shares strength
between sparse pairs; a click log carries no features, so this module fits
:math:`\gamma_{qd}` per pair (the paper's "standard EM").

Identification
    :math:`\theta` is identified only through (query, doc) pairs seen at
    several positions: in the bipartite graph of pairs and positions,
    position :math:`k` is identified relative to position 1 iff they are
    connected. If every pair is always shown at the same position (a
    deterministic logging ranker with fixed rankings), nothing is identified
    and :func:`em` raises :class:`EstimationError`; positions outside the
    component of position 1 are NaN and flagged. The overall scale is never
    identified (:math:`\theta c`, :math:`\gamma/c`), so θ is reported relative to θ₁.

Constraint (``constraint``)
    EM keeps every :math:`\theta_k` and :math:`\gamma_{qd}` in [0, 1]. As the
    scale is free, that bounds the click probability :math:`\theta_k\gamma_{qd}`
    by 1 for *every* pair at *every* position, also where the pair was never
    shown; with :math:`\theta_1 = 1` it reads :math:`\gamma_{qd} \le 1` for a pair
    seen only at lower positions. When the truth lies on that boundary (a
    document clicked with probability 1 at position 1), the estimate of such a
    pair's :math:`\gamma` is often truncated at 1 and its excess
    clicks raise :math:`\hat\theta_k` at its positions: in the coverage benchmark
    (1,000 logs of 20,000 sessions) the bias of :math:`\log\hat\theta_k` is 0.2 to
    0.67 of its standard deviation at positions 2-10 and coverage of the 95%
    interval .89-.94; no bootstrap correction of the interval removes it (the
    bootstrap is not consistent at a boundary, Andrews (2000), Econometrica
    68(2), 399-405; there its bias estimate is 0.3-0.4 of the bias, and the
    bias-corrected normal interval covers .92-.95). ``constraint="observed"``
    (default) therefore maximizes the same likelihood subject to
    :math:`\theta_k\gamma_{qd} \le 1` on the *observed* cells only, where the
    truth is interior unless a cell's click probability is exactly 1 (then all
    its impressions are clicks and the bound holds with no sampling error); on
    the same logs its bias is within 0.03 standard deviations, its root mean
    squared error lower at every position, and the interval covers .94-.96.
    The log-likelihood is concave in
    :math:`(\log\theta, \log\gamma)` (each cell's term is concave in
    :math:`\log\theta_k + \log\gamma_{qd}`), so the maximum is found by Newton's
    method on :math:`\log\theta` with each :math:`\log\gamma_{qd}` profiled out
    and a backtracking line search (:func:`_observed_mle`). Where EM's bound
    does not bind, both give the same maximum. ``constraint="all"`` is the EM of
    Wang et al. (2018).

Interval
    Session-level bootstrap (:func:`clickrank.propensity.bootstrap`): the
    log-scale normal interval with the bootstrap standard deviation of
    :math:`\log\hat\theta` (the default ``ci_method``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from .._core._validation import EstimationError, InputError, check_choice, check_non_negative
from ._harvest import cell_statistics
from ._result import Propensities
from ._stats import as_lazy, finish, resolve_K

__all__ = ["em", "em_from_cells", "identified_positions"]


def identified_positions(cells: dict[str, np.ndarray], K: int) -> np.ndarray:
    """Bool ``[K]``: positions connected to position 1 through shared (query, doc) pairs."""
    g, pos = cells["g"], cells["position"]
    keep = (pos <= K) & (cells["n"] > 0)
    g, pos = g[keep], pos[keep]
    if g.size == 0:
        return np.zeros(K, dtype=bool)
    G = int(g.max()) + 1
    adj = sparse.coo_matrix((np.ones(g.size), (pos - 1, K + g)), shape=(K + G, K + G))
    _, comp = connected_components(adj, directed=False)
    shown = np.zeros(K, dtype=bool)
    shown[np.unique(pos) - 1] = True
    return (comp[:K] == comp[0]) & shown & shown[0]


def naive_theta(c_pos: np.ndarray, n_pos: np.ndarray) -> np.ndarray:
    """Click rates by position relative to position 1, in [1e-3, 1]: Newton's start."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(n_pos > 0, c_pos / n_pos, 0) / (c_pos[0] / n_pos[0]), 1e-3, 1)


def em_from_cells(
    cells: dict[str, np.ndarray],
    *,
    K: int | None = None,
    max_iter: int = 2000,
    tol: float = 1e-9,
    constraint: str = "observed",
    information: bool = False,
) -> Propensities:
    r"""Fit the PBM of the module docstring on :func:`~.harvest.cell_statistics` output.

    Parameters
    ----------
    cells : dict
        Output of :func:`~.harvest.cell_statistics`.
    K : int, optional
        Positions to estimate (default: all positions in the cells).
    max_iter, tol : int, float
        Iteration cap, and the largest change of log θ at which iteration stops.
    constraint : {"observed", "all"}
        ``"observed"`` (default): click probabilities at most 1 on the observed
        cells (Newton on the profile likelihood); ``"all"``: at every position for
        every pair (the EM of Wang et al. (2018)); see the module docstring.
    information : bool
        Standard errors of log θ from the observed information of the profile
        likelihood (``constraint="observed"`` only): the inverse of minus its Hessian
        at the maximum, with every :math:`\log\gamma_{qd}` profiled out, which
        ``info["covariance"]`` holds whole (``[K, K]``, None where not identified).
        One fit instead of a bootstrap's hundred; it assumes the PBM's independent
        cells, where the session bootstrap does not.

    Returns
    -------
    Propensities
        θ relative to θ₁; ``se`` is NaN unless ``information`` (use :func:`em` with
        ``n_boot`` or :func:`~clickrank.propensity.bootstrap` for the bootstrap's).
    """
    constraint = check_choice(constraint, ("observed", "all"), name="constraint")
    if information and constraint != "observed":
        raise InputError("em: information=True needs constraint='observed'")
    pos_all = cells["position"]
    if pos_all.size == 0:
        raise EstimationError("em: the log is empty")
    K = resolve_K(K, int(pos_all.max()), "em")
    keep = (pos_all <= K) & (cells["n"] > 0)
    g, pos, n, c = cells["g"][keep], pos_all[keep] - 1, cells["n"][keep], cells["c"][keep]
    ident = identified_positions(cells, K)
    n_multi = _n_multi_position(g)
    if n_multi == 0:
        raise EstimationError(
            "em: not identified: every (query, doc) pair is always shown at the same position, "
            "so position and relevance cannot be told apart (use randomization or swaps)"
        )
    G = int(g.max()) + 1
    n_pos = np.bincount(pos, n, minlength=K)
    n_g = np.bincount(g, n, minlength=G)
    c_pos = np.bincount(pos, c, minlength=K)
    if c_pos[0] == 0:
        raise EstimationError(
            "em: no clicks at position 1; theta relative to position 1 is not identified"
        )
    theta = naive_theta(c_pos, n_pos)
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.clip(np.bincount(g, c, minlength=G) / n_g, 1e-6, 1 - 1e-6)
    reasons = {
        p + 1: "no chain of (query, doc) pairs shown at several positions links it to position 1"
        for p in np.flatnonzero(~ident)
        if p > 0
    }
    common = dict(
        method="em", n_sessions=round(cells["n_sessions"]), reasons=reasons, whole_log=True
    )  # EM reads every impression of the log
    info = {
        "n_query_doc_pairs": G,
        "n_multi_position_pairs": n_multi,
        "constraint": constraint,
        "reference": "Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, sec. 4",
    }
    if constraint == "observed":
        free = ident & (c_pos > 0)
        free[0] = False
        log_t, iterations, converged = _observed_mle(
            g, pos, n, c, G, np.log(theta), free, max_iter=max_iter, tol=tol
        )
        warns = [] if converged else [f"em: Newton not converged after {iterations} iterations"]
        info.update(iterations=iterations, converged=converged)
        se = np.full(K, np.nan)
        if information:
            cov = _information_covariance(log_t, free, g, pos, n, c, G)
            with np.errstate(invalid="ignore"):
                se = np.sqrt(np.diag(cov))
            se[0] = 0.0  # the reference
            info.update(interval="observed information of the profile likelihood",
                        covariance=[[float(x) if np.isfinite(x) else None for x in row]
                                    for row in cov])  # fmt: skip
        return finish(np.exp(log_t), se, n_pos, warnings=warns, info=info, **common)

    out, warns = _em_all(g, pos, n, c, K, G, theta, gamma, n_pos, n_g, info,
                         max_iter=max_iter, tol=tol)  # fmt: skip
    return finish(out, np.full(K, np.nan), n_pos, warnings=warns, info=info, **common)


def _em_all(
    g: np.ndarray,
    pos: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    K: int,
    G: int,
    theta: np.ndarray,
    gamma: np.ndarray,
    n_pos: np.ndarray,
    n_g: np.ndarray,
    info: dict,
    *,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, list[str]]:
    """SQUAREM-accelerated EM (constraint 'all'): the iteration step of :func:`em_from_cells`."""
    nc = n - c
    has = n_pos > 0

    def step(x: np.ndarray) -> np.ndarray:
        """One EM update of the stacked parameters (theta [K], gamma [G])."""
        t, r = x[:K][pos], x[K:][g]
        denom = np.maximum(1.0 - t * r, 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            new_t = np.bincount(pos, c + nc * t * (1 - r) / denom, minlength=K) / n_pos
            new_r = np.bincount(g, c + nc * (1 - t) * r / denom, minlength=G) / n_g
        new_t = np.where(has, new_t, x[:K])
        return np.clip(np.r_[new_t, new_r], 1e-10, 1.0)

    # SQUAREM acceleration of EM (Varadhan & Roland (2008), scheme S3): plain EM for the
    # PBM crawls when clicks are sparse; SQUAREM keeps EM's fixed point and monotonicity
    # safeguard (a final EM step) at a fraction of the iterations.
    x = np.r_[theta, gamma]
    warns: list[str] = []
    converged = False
    change = np.inf
    iterations = 0
    for iterations in range(1, int(max_iter) + 1):  # noqa: B007  # iterations; each is vectorized over cells
        x1 = step(x)
        x2 = step(x1)
        r_ = x1 - x
        v_ = x2 - x1 - r_
        nv = np.sqrt((v_ * v_).sum())
        alpha = -np.sqrt((r_ * r_).sum()) / nv if nv > 0 else -1.0
        alpha = min(alpha, -1.0)
        x_new = step(np.clip(x - 2 * alpha * r_ + alpha * alpha * v_, 1e-10, 1.0))
        lt_new, lt = np.log(x_new[:K][has]), np.log(x[:K][has])
        change = float(np.max(np.abs((lt_new - lt_new[0]) - (lt - lt[0]))))
        x = x_new
        if change < tol:
            converged = True
            break
    theta = x[:K]
    if not converged:
        warns.append(f"em: not converged after {max_iter} iterations (last change {change:.2e})")
    out = theta / theta[0]
    info.update(iterations=iterations, converged=converged, theta_1_absolute=float(theta[0]))
    return out, warns


def _profile_log_gamma(
    a: np.ndarray, g: np.ndarray, pos: np.ndarray, n: np.ndarray, c: np.ndarray, G: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""The maximizing :math:`\log\gamma_{qd}` for fixed :math:`a = \log\theta`, per pair.

    Each pair maximizes :math:`\sum_k c_k(a_k + b) + (n_k - c_k)\log(1 - e^{a_k + b})`
    over :math:`b \le -\max_k a_k` (its observed cells): a concave function whose score
    :math:`\sum_k c_k - (n_k - c_k)e^{\eta_k}/(1 - e^{\eta_k})` decreases in :math:`b`.
    Its root in :math:`u = b + \max_k a_k \in [-40, 0]` is found by Newton's method
    safeguarded by bisection (a step leaving the bracket is replaced by the midpoint),
    vectorized over pairs. Returns ``b`` (``-inf`` for a pair without clicks) and
    ``active``: the bound holds with equality (only where the pair's top cells are
    all clicks).
    """
    return profile_cells(a[pos], g, n, c, G)


def profile_cells(
    a_c: np.ndarray, g: np.ndarray, n: np.ndarray, c: np.ndarray, G: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_profile_log_gamma` with the log propensity of every cell given (``a_c``),
    for models where it is not one value per position."""
    top = np.full(G, -np.inf)
    np.maximum.at(top, g, a_c)
    nc = n - c
    C_g = np.bincount(g, c, minlength=G)
    # a pair whose cells are all at positions without clicks has no clicks: b = -inf below
    shift = np.where(np.isfinite(top), top, 0.0)

    def score(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pair's score in u and its derivative."""
        e = np.exp(a_c + (u - shift)[g])
        with np.errstate(divide="ignore", invalid="ignore"):
            odds = np.where(nc > 0, nc * e / (1.0 - e), 0.0)
            slope = np.where(nc > 0, odds / (1.0 - e), 0.0)
        return C_g - np.bincount(g, odds, minlength=G), -np.bincount(g, slope, minlength=G)

    active = score(np.zeros(G))[0] >= 0  # the score is still >= 0 at the bound
    lo, hi = np.full(G, -40.0), np.zeros(G)
    with np.errstate(divide="ignore", invalid="ignore"):
        # start: the root without the non-click curvature (small click probabilities)
        u = np.log(C_g / np.bincount(g, n * np.exp(a_c - shift[g]), minlength=G))
    u = np.where(np.isfinite(u), np.clip(u, -39.0, -1e-3), -1.0)
    solve = (C_g > 0) & ~active  # the others: b = -inf, or at the bound
    for _ in range(200):  # safeguarded Newton steps, vectorized over pairs
        sc, ds = score(u)
        lo, hi = np.where(sc > 0, u, lo), np.where(sc > 0, hi, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = u - sc / ds
        new = np.where(np.isfinite(new) & (new >= lo) & (new <= hi), new, 0.5 * (lo + hi))
        done = not solve.any() or np.max(np.abs(new - u)[solve]) < 1e-13
        u = new
        if done:
            break
    u = np.where(active, 0.0, u)
    b = np.where(C_g > 0, u - shift, -np.inf)
    return b, active & (C_g > 0)


def loglik(eta: np.ndarray, n: np.ndarray, c: np.ndarray) -> float:
    """Binomial log-likelihood of the cells at log click probabilities ``eta`` (<= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        clicks = np.where(c > 0, c * eta, 0.0)
        skips = np.where(n > c, (n - c) * np.log1p(-np.exp(np.minimum(eta, 0.0))), 0.0)
    return float(clicks.sum() + skips.sum())


def _observed_mle(
    g: np.ndarray,
    pos: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    G: int,
    a0: np.ndarray,
    free: np.ndarray,
    *,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, int, bool]:
    r"""Maximize the PBM likelihood with :math:`\theta_k\gamma_{qd} \le 1` on observed cells.

    Newton's method on the profile log-likelihood of :math:`a = \log\theta` over the
    ``free`` positions (position 1 is the reference, :math:`a_1 = 0`; positions without
    clicks get :math:`-\infty`, the others keep ``a0``). The profile of a jointly
    concave function is concave (Boyd & Vandenberghe (2004), §3.2.5), so Newton with
    a backtracking line search that never lowers the likelihood converges to the
    maximum. Gradient and Hessian follow from the envelope theorem: for a pair
    strictly inside its bound they are the Schur complement of its
    :math:`\log\gamma`; for a pair at the bound, :math:`b = -a_{k^*}` (its top
    position) is substituted. Returns ``(a, iterations, converged)``.
    """
    K = a0.size
    a = np.where(free, a0, np.where(np.bincount(pos, c, minlength=K) > 0, a0, -np.inf))
    a[0] = 0.0
    b, active = _profile_log_gamma(a, g, pos, n, c, G)
    ll = loglik(a[pos] + b[g], n, c)
    idx = np.flatnonzero(free)
    if idx.size == 0:
        return a, 0, True
    converged, it = False, 0
    for it in range(1, int(max_iter) + 1):  # noqa: B007  # Newton steps, each vectorized over cells
        grad, hess = _newton_terms(a, b, active, g, pos, n, c, G)
        step = np.zeros(K)
        step[idx] = np.linalg.lstsq(-hess[np.ix_(idx, idx)], grad[idx], rcond=None)[0]
        t = 1.0
        while True:  # backtracking: halve until the likelihood does not decrease
            a_new = a + t * step
            b_new, active_new = _profile_log_gamma(a_new, g, pos, n, c, G)
            ll_new = loglik(a_new[pos] + b_new[g], n, c)
            if ll_new >= ll or t < 1e-10:
                break
            t *= 0.5
        if ll_new < ll:  # no ascent along the Newton direction: at the maximum up to rounding
            converged = float(np.max(np.abs(step[idx]))) < 1e-6
            break
        change = float(np.max(np.abs(t * step[idx])))
        a, b, active, ll = a_new, b_new, active_new, ll_new
        if change < tol:
            converged = True
            break
    return a, it, converged


def _information_covariance(
    a: np.ndarray,
    free: np.ndarray,
    g: np.ndarray,
    pos: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    G: int,
) -> np.ndarray:
    """``[K, K]`` covariance of log θ at the maximum ``a``: the inverse of minus the
    profile likelihood's Hessian over the ``free`` positions (NaN elsewhere)."""
    K = a.size
    b, active = _profile_log_gamma(a, g, pos, n, c, G)
    hess = _newton_terms(a, b, active, g, pos, n, c, G)[1]
    cov = np.full((K, K), np.nan)
    idx = np.flatnonzero(free & np.isfinite(a))
    if idx.size:
        try:
            cov[np.ix_(idx, idx)] = np.linalg.inv(-hess[np.ix_(idx, idx)])
        except np.linalg.LinAlgError:
            pass  # a singular information leaves the standard errors NaN
    return cov


def _newton_terms(
    a: np.ndarray,
    b: np.ndarray,
    active: np.ndarray,
    g: np.ndarray,
    pos: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    G: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of the profile likelihood: a step of :func:`_observed_mle`."""
    K = a.size
    eta = a[pos] + b[g]
    grad_c, w = cell_terms(eta, n, c)
    on = active[g]
    top = np.full(G, -np.inf)
    np.maximum.at(top, g, a[pos])
    kstar = np.zeros(G, dtype=np.int64)
    at_top = a[pos] == top[g]
    kstar[g[at_top]] = pos[at_top]
    grad = np.bincount(pos, grad_c, minlength=K)
    grad -= np.bincount(kstar[g[on]], grad_c[on], minlength=K)
    # Hessian: cells of interior pairs, minus their Schur complement through log gamma;
    # cells of pairs at the bound along e_k - e_k*.
    ins = ~on & np.isfinite(eta)
    hess = -np.bincount(pos[ins] * (K + 1), w[ins], minlength=K * K)
    w_g = np.bincount(g[ins], w[ins], minlength=G)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(w_g[g[ins]] > 0, w[ins] / np.sqrt(w_g[g[ins]]), 0.0)
    m = sparse.csr_matrix((scaled, (g[ins], pos[ins])), shape=(G, K))
    hess = hess.reshape(K, K) + (m.T @ m).toarray()
    kk, ks, ww = pos[on], kstar[g[on]], w[on]
    hess -= np.bincount(kk * K + kk, ww, minlength=K * K).reshape(K, K)
    hess -= np.bincount(ks * K + ks, ww, minlength=K * K).reshape(K, K)
    hess += np.bincount(kk * K + ks, ww, minlength=K * K).reshape(K, K)
    hess += np.bincount(ks * K + kk, ww, minlength=K * K).reshape(K, K)
    return grad, hess


def cell_terms(eta: np.ndarray, n: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's score and curvature in its log click probability ``eta``: the first
    derivative of its log-likelihood and minus the second (0 where ``eta`` is -inf)."""
    e = np.exp(eta)
    live = np.isfinite(eta) & (n > c)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        grad_c = c - np.where(live, (n - c) * e / (1.0 - e), 0.0)
        w = np.where(live, (n - c) * e / (1.0 - e) ** 2, 0.0)
    return np.where(np.isfinite(eta), grad_c, 0.0), w


def _n_multi_position(g: np.ndarray) -> int:
    """Number of (query, doc) pairs with cells at two or more positions."""
    if g.size == 0:
        return 0
    counts = np.bincount(g)
    return int((counts >= 2).sum())


def em(
    log: Any,
    *,
    K: int | None = None,
    n_boot: int = 100,
    seed: int = 0,
    max_iter: int = 2000,
    tol: float = 1e-9,
    constraint: str = "observed",
    progress: Callable[[int], None] | None = None,
) -> Propensities:
    r"""EM estimate of PBM position bias from a log without interventions (Wang et al. (2018)).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log with ``session``, ``query``, ``doc``, ``position``, ``click``.
    K : int, optional
        Positions to estimate (default: all positions in the log).
    n_boot : int
        Session-bootstrap replicates for the intervals (0: point estimate only,
        NaN standard errors).
    seed : int
        Seed of the bootstrap.
    max_iter, tol : int, float
        Iteration stops when the largest change of log θ is below ``tol``.
    constraint : {"observed", "all"}
        Where click probabilities must be at most 1: ``"observed"`` (default) on the
        (query, doc, position) cells of the log; ``"all"`` at every position for every
        pair, the EM of Wang et al. (2018), which is biased when the truth is on that
        boundary (see the module docstring).
    progress : callable, optional
        Called with 1 after each bootstrap replicate.

    Returns
    -------
    Propensities
        θ relative to position 1; log-scale normal intervals with the bootstrap
        standard deviation of ``n_boot`` replicates.

    Raises
    ------
    EstimationError
        When θ is not identified (see the module docstring).

    Notes
    -----
    Clicks follow :math:`P(C = 1 \mid q, d, k) = \theta_k \gamma_{qd}` with hidden
    examination and relevance. On the counts :math:`(c_{qdk}, n_{qdk})` of every
    (query, doc, position) cell, EM alternates (Wang et al. (2018), §4, Eq. 3–4)

    .. math::
        \theta_k \leftarrow \frac{\sum_{qd} c_{qdk} + (n_{qdk} - c_{qdk})
              \frac{\theta_k (1 - \gamma_{qd})}{1 - \theta_k \gamma_{qd}}}{\sum_{qd} n_{qdk}},
        \qquad
        \gamma_{qd} \leftarrow \frac{\sum_k c_{qdk} + (n_{qdk} - c_{qdk})
              \frac{(1 - \theta_k) \gamma_{qd}}{1 - \theta_k \gamma_{qd}}}{\sum_k n_{qdk}},

    the maximum-likelihood fit of the PBM with one relevance per (query, doc).
    With ``constraint="observed"`` the same likelihood is maximized by Newton's
    method with click probabilities bounded by 1 on the observed cells only, which
    removes the boundary bias of EM (module docstring). θ is reported relative to
    θ₁; the interval is the log-scale normal interval with the standard deviation
    of a session bootstrap.
    """
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")
    n_boot = int(check_non_negative(n_boot, name="n_boot", integer=True))
    constraint = check_choice(constraint, ("observed", "all"), name="constraint")
    lf = as_lazy(log)
    fit = dict(K=K, max_iter=max_iter, tol=tol, constraint=constraint)
    if n_boot == 0:
        return em_from_cells(cell_statistics(lf), **fit)
    from ._bootstrap import bootstrap

    return bootstrap("em", lf, n=n_boot, seed=seed, progress=progress, **fit)
