r"""Examination as a function of context features: one model for a context with many values.

A curve per context (:mod:`._context`) needs each context's own clicks; a context with
thousands of values (a query class, a locale, a page template) has too few per value.
Fang, Agarwal & Joachims (2019, "Intervention Harvesting for Context-Dependent
Examination-Bias Estimation", SIGIR) let the examination probability depend on
features :math:`x` of the context instead, :math:`\theta_k(x)`, and estimate it by
maximum likelihood from documents seen at several positions, with one relevance per
(query, doc). Here the model is log-linear in the features,

.. math::
    \log\theta_k(x) = a_k + (x - \bar x)^\top D^{-1} w_k, \qquad a_1 = 0,\ w_1 = 0,

(:math:`\bar x` and the diagonal :math:`D` the features' impression-weighted mean and
standard deviation, so :math:`a_k` is the curve at the average context and
:math:`w_k` the change of :math:`\log\theta_k` per standard deviation), which holds
the power-law curves :math:`\theta_k = k^{-\eta(x)}` with :math:`\eta` linear in
:math:`x` exactly. Clicks follow the PBM per impression,
:math:`P(C = 1) = \theta_k(x)\,\gamma_{qd}`, on the (query, doc, position, x) cells of
the log, and :math:`(a, w)` maximize its likelihood with each
:math:`\log\gamma_{qd}` profiled out: EM's Newton on the profile likelihood
(:mod:`._em`, ``constraint="observed"``), with the position design replaced by the
cells' design rows (an indicator of the position and the features at that position).
The likelihood is concave in :math:`(a, w, \log\gamma)`, so the maximum is unique
where the design has full rank.

Intervals come from the observed information (the inverse of minus the profile
likelihood's Hessian at the maximum): the standard error of
:math:`\log\theta_k(x)` at a context is that of its design row. The test of whether
one curve is enough is the Wald test of :math:`w = 0`, with as many degrees of
freedom as coefficients :math:`w`. Like EM's, the intervals assume the PBM's
independent cells, and the model's form: a curve whose dependence on :math:`x` is not
log-linear is approximated by the closest one in likelihood.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from scipy import sparse
from scipy.stats import chi2, norm

from .._core._validation import EstimationError, InputError
from ..engine import log_schema
from ._context_result import ContextModel
from ._em import cell_terms, identified_positions, loglik, naive_theta, profile_cells
from ._harvest import cell_statistics
from ._stats import resolve_K

__all__ = ["ContextModel", "by_features", "context_model", "check_features", "MAX_FEATURE_CONTEXTS"]

#: Most distinct feature vectors (contexts) the model's table of curves holds.
MAX_FEATURE_CONTEXTS = 100_000


def check_features(lf: Any, features: Any) -> tuple[str, ...]:
    """The feature columns, checked against the log's schema (no data read): present,
    numeric or Boolean, not one of the log's own columns."""
    from ..clicklog import LOG_SCHEMA

    cols = (features,) if isinstance(features, str) else tuple(features or ())
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise InputError(
            f"context_features must be a column name or a list of them, got {features!r}"
        )
    schema = log_schema(lf)
    for c in cols:
        if c in LOG_SCHEMA:
            raise InputError(f"context feature {c!r} is a column of the log's own contract")
        if c not in schema:
            others = [n for n in schema.names() if n not in LOG_SCHEMA]
            hint = f"; its other columns: {', '.join(others)}" if others else ""
            raise InputError(f"context feature {c!r} is not in the log{hint}")
        dt = schema[c]
        if not (dt.is_numeric() or dt == pl.Boolean):
            raise InputError(
                f"context feature {c!r} has dtype {dt}; expected numbers (a categorical "
                "context with few values is context=, one curve per value)"
            )
    if len(set(cols)) < len(cols):
        raise InputError(f"context_features names a column twice: {list(cols)}")
    return cols


def _contexts(lf: Any, features: tuple[str, ...], K: int | None) -> tuple[Any, ...]:
    """The log's (query, doc, position, features) cells up to position K, checked: the
    reading step of both fits. Returns the cells, K, their (pair, 0-based position,
    impressions, clicks), standardized features, the distinct contexts, each
    cell's context, and the features' impression-weighted mean and standard deviation."""
    cells = cell_statistics(lf, by=features)
    pos_all = cells["position"]
    if pos_all.size == 0:
        raise EstimationError("context model: the log is empty")
    K = resolve_K(K, int(pos_all.max()), "context model")
    keep = (pos_all <= K) & (cells["n"] > 0)
    X = np.column_stack([np.asarray(cells[f], dtype=float) for f in features])[keep]
    for j, f in enumerate(features):
        if not np.isfinite(X[:, j]).all():
            raise InputError(f"context feature {f!r} has null or non-finite values; "
                             "give every impression a number")  # fmt: skip
    g, pos, n, c = cells["g"][keep], pos_all[keep] - 1, cells["n"][keep], cells["c"][keep]
    uniq, ctx = np.unique(X, axis=0, return_inverse=True)
    ctx = ctx.ravel()
    if uniq.shape[0] > MAX_FEATURE_CONTEXTS:
        raise InputError(
            f"context features {list(features)} take {uniq.shape[0]:,} distinct values; "
            f"at most {MAX_FEATURE_CONTEXTS:,} (round or bin them)"
        )
    center = np.average(X, axis=0, weights=n)
    scale = np.sqrt(np.average((X - center) ** 2, axis=0, weights=n))
    if (flat := np.flatnonzero(scale == 0)).size:
        raise InputError(f"context feature {features[flat[0]]!r} is constant in the log: "
                         "there is no change of examination to model")  # fmt: skip
    Z = (X - center) / scale
    return cells, K, (g, pos, n, c), Z, uniq, ctx, center, scale


def context_model(
    lf: Any, features: tuple[str, ...], *, K: int | None = None, max_iter: int = 200,
    tol: float = 1e-9,
) -> tuple[ContextModel, list[str]]:  # fmt: skip
    """Fit the module docstring's model on ``lf``'s (query, doc, position, features) cells.

    Returns the model and its warnings. Raises :class:`InputError` for features with
    null or non-finite values, a constant feature or more than
    :data:`MAX_FEATURE_CONTEXTS` contexts, and :class:`EstimationError` where θ is not
    identified (every (query, doc) pair at one position, no click at position 1).
    """
    cells, K, (g, pos, n, c), Z, uniq, ctx, center, scale = _contexts(lf, features, K)
    G = int(g.max()) + 1
    c_pos = np.bincount(pos, c, minlength=K)
    n_pos = np.bincount(pos, n, minlength=K)
    if c_pos[0] == 0:
        raise EstimationError("context model: no clicks at position 1")
    free = identified_positions(cells, K) & (c_pos > 0)
    free[0] = False
    if not free.any():
        raise EstimationError(
            "context model: not identified: no (query, doc) pair links a position to "
            "position 1 (use randomization or swaps)"
        )
    naive = np.log(naive_theta(c_pos, n_pos))
    fixed = np.where(c_pos > 0, naive, -np.inf)  # the positions the model does not fit
    fixed[0] = 0.0
    F = len(features)
    slot = np.cumsum(free) - 1  # a free position's block of the design
    D = _design(pos, Z, free, slot, F)
    offset = np.where(free[pos], 0.0, fixed[pos])
    beta0 = np.zeros(D.shape[1])
    beta0[slot[free] * (1 + F)] = naive[free]
    beta, iterations, converged = _fit(D, offset, beta0, g, n, c, G, max_iter=max_iter, tol=tol)
    cov = _covariance(D, offset, beta, g, n, c, G)
    warns = [] if converged else [f"context model: Newton not converged after {iterations} steps"]
    if not np.isfinite(cov).all():
        warns.append(
            "context model: the information is singular (features constant or collinear "
            "among the documents shown at several positions); no intervals or test"
        )
    # the curve and its standard error at every context
    B = beta.reshape(-1, 1 + F)  # [free positions, 1 + F]
    Zu = np.column_stack([np.ones(uniq.shape[0]), (uniq - center) / scale])
    theta = np.full((uniq.shape[0], K), np.nan)
    se = np.full((uniq.shape[0], K), np.nan)
    theta[:, 0], se[:, 0] = 1.0, 0.0
    for k in np.flatnonzero(free):  # a loop over positions, each vectorized over contexts
        block = slice(slot[k] * (1 + F), (slot[k] + 1) * (1 + F))
        theta[:, k] = np.exp(Zu @ B[slot[k]])
        with np.errstate(invalid="ignore"):
            se[:, k] = np.sqrt(np.einsum("ij,jk,ik->i", Zu, cov[block, block], Zu))
    # coefficients on the features' own scale: w / scale, and a at the mean context
    coef = np.full((K, 1 + F), np.nan)
    coef_se = np.full((K, 1 + F), np.nan)
    coef[0] = 0.0
    coef_se[0] = 0.0
    unit = np.r_[1.0, 1.0 / scale]
    var = np.diag(cov).reshape(-1, 1 + F)
    coef[free] = B * unit
    with np.errstate(invalid="ignore"):
        coef_se[free] = np.sqrt(var) * unit
    w_idx = np.flatnonzero(np.arange(beta.size) % (1 + F) != 0)
    test = _wald(beta[w_idx], cov[np.ix_(w_idx, w_idx)])
    fit = dict(theta=theta, se=se, coef=coef, coef_se=coef_se, center=center, scale=scale,
               homogeneity=test)  # fmt: skip
    return _model(lf, features, uniq, ctx, pos, n, K, **fit), warns


def _model(lf: Any, features: tuple[str, ...], uniq: np.ndarray, ctx: np.ndarray,
           pos: np.ndarray, n: np.ndarray, K: int, **fit: Any) -> ContextModel:  # fmt: skip
    """The :class:`ContextModel` of a fit: its contexts as text and their impressions."""
    values = _as_text(uniq, lf, features)
    counts = np.bincount(ctx * K + pos, n, minlength=uniq.shape[0] * K).reshape(-1, K)
    return ContextModel(columns=tuple(features), values=values, n=counts, **fit)


def slope_model(
    lf: Any, features: tuple[str, ...], pooled: Any, *, max_iter: int = 200, tol: float = 1e-9
) -> tuple[ContextModel, list[str]]:
    r"""The module docstring's model with its level from ``pooled`` and its slopes from
    within each (query, doc, position): for a pooled curve other than EM's, among them
    regression EM's on a log whose documents each stay at one position (a deterministic
    logger without interventions), where EM's likelihood does not identify :math:`a_k`.

    A document shown at position :math:`k` to sessions of several contexts is clicked in
    proportion to :math:`\theta_k(x)` alone, its relevance being the same for all, so
    :math:`w_k` maximizes the PBM likelihood with one relevance per (query, doc,
    position) profiled out (the same Newton, on a design of the standardized features
    alone, whatever the logger; intervals from the observed information). The level
    comes from ``pooled``, a pooled curve of the same log (swap's, regression EM's): it
    estimates :math:`\bar\theta_k`, the mean of :math:`\theta_k(x)` over position
    :math:`k`'s impressions, so :math:`a_k = \log\bar\theta_k - \log M_k(w_k)` with
    :math:`M_k(w_k)` the mean of :math:`e^{w_k^\top z}` there. The standard error of
    :math:`\log\theta_k(x)` adds the two parts' variances (the slopes come from within
    documents, the level from between them): the pooled interval's half-width on the
    log scale over 1.96 (so regression EM's hull of two smoothings carries over), and
    that of :math:`w_k^\top (z - \tilde z_k)`, :math:`\tilde z_k` the
    :math:`e^{w_k^\top z}`-weighted mean of position :math:`k`'s features (the
    derivative of :math:`\log M_k`).
    """
    _, K, (g, pos, n, c), Z, uniq, ctx, center, scale = _contexts(lf, features, K=pooled.K)
    level = np.log(np.asarray(pooled.theta, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        ci = np.log(pooled.conf_int(0.05).select("lower", "upper").to_numpy())
        half = np.fmax(level - ci[:, 0], ci[:, 1] - level) / norm.isf(0.025)
    c_pos = np.bincount(pos, c, minlength=K)
    free = np.isfinite(level) & (c_pos > 0)
    free[0] = False
    if not free.any():
        raise EstimationError("context model: no position beyond 1 has clicks and a pooled θ")
    # one relevance per (query, doc, position): only the contexts' contrasts inform w
    unit, grp = np.unique(g * K + pos, return_inverse=True)
    grp = grp.ravel()
    F = len(features)
    slot = np.cumsum(free) - 1
    D = _design(pos, Z, free, slot, F, level=False)
    offset = np.where(np.isfinite(level), level, -np.inf)[pos]
    beta, iterations, converged = _fit(D, offset, np.zeros(D.shape[1]), grp, n, c, unit.size,
                                       max_iter=max_iter, tol=tol)  # fmt: skip
    cov = _covariance(D, offset, beta, grp, n, c, unit.size)
    warns = [] if converged else [f"context model: Newton not converged after {iterations} steps"]
    if not np.isfinite(cov).all():
        warns.append(
            "context model: the information is singular (features collinear, or constant "
            "within each document's impressions at some position); no intervals or test"
        )
    W = beta.reshape(-1, F)  # [free positions, F]
    Zu = (uniq - center) / scale
    theta = np.full((uniq.shape[0], K), np.nan)
    se = np.full((uniq.shape[0], K), np.nan)
    theta[:, 0], se[:, 0] = 1.0, 0.0
    coef = np.full((K, 1 + F), np.nan)
    coef_se = np.full((K, 1 + F), np.nan)
    coef[0], coef_se[0] = 0.0, 0.0
    for k in np.flatnonzero(free):  # a loop over positions, each vectorized over contexts
        at = pos == k
        e = n[at] * np.exp(Z[at] @ W[slot[k]])
        a = level[k] - np.log(e.sum() / n[at].sum())
        tilt = (e[:, None] * Z[at]).sum(axis=0) / e.sum()
        block = slice(slot[k] * F, (slot[k] + 1) * F)
        theta[:, k] = np.exp(a + Zu @ W[slot[k]])
        d = Zu - tilt
        with np.errstate(invalid="ignore"):
            se[:, k] = np.sqrt(half[k] ** 2 + np.einsum("ij,jk,ik->i", d, cov[block, block], d))
            coef_se[k] = np.r_[np.sqrt(half[k] ** 2 + tilt @ cov[block, block] @ tilt),
                               np.sqrt(np.diag(cov[block, block])) / scale]  # fmt: skip
        coef[k] = np.r_[a, W[slot[k]] / scale]
    test = _wald(beta, cov)
    interval = f"{pooled.method}'s pooled interval and the slopes' observed information"
    fit = dict(theta=theta, se=se, coef=coef, coef_se=coef_se, center=center, scale=scale,
               homogeneity=test, interval=interval)  # fmt: skip
    return _model(lf, features, uniq, ctx, pos, n, K, **fit), warns


def _design(pos: np.ndarray, Z: np.ndarray, free: np.ndarray, slot: np.ndarray, F: int,
            level: bool = True):  # fmt: skip
    """Sparse ``[cells, free positions x (1 + F)]`` design: a cell at a free position has
    a 1 and its standardized features in that position's block (zero rows elsewhere);
    without ``level``, ``[cells, free positions x F]``, the features alone."""
    width = F + int(level)
    rows = np.flatnonzero(free[pos])
    cols = (slot[pos[rows]] * width)[:, None] + np.arange(width)
    vals = np.column_stack([np.ones(rows.size), Z[rows]]) if level else Z[rows]
    return sparse.csr_matrix(
        (vals.ravel(), (np.repeat(rows, width), cols.ravel())),
        shape=(pos.size, int(free.sum()) * width),
    )


def _terms(lt: np.ndarray, D: Any, g, n, c, G) -> tuple[np.ndarray, np.ndarray, float]:
    """Gradient, Hessian and value of the profile log-likelihood in the coefficients at
    cell log propensities ``lt``: the design form of EM's Newton terms (a pair inside
    its bound through the Schur complement of its log γ, a pair at the bound along the
    difference of each cell's row and its top cell's)."""
    b, active = profile_cells(lt, g, n, c, G)
    eta = lt + b[g]
    grad_c, w = cell_terms(eta, n, c)
    on = active[g]
    top = np.full(G, -np.inf)
    np.maximum.at(top, g, lt)
    istar = np.zeros(G, dtype=np.int64)
    at_top = np.flatnonzero(lt == top[g])
    istar[g[at_top]] = at_top
    ins = np.flatnonzero(~on & np.isfinite(eta))
    Di = D[ins]
    grad = Di.T @ grad_c[ins]
    hess = -(Di.T @ sparse.diags(w[ins]) @ Di).toarray()
    w_g = np.bincount(g[ins], w[ins], minlength=G)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(w_g[g[ins]] > 0, w[ins] / np.sqrt(w_g[g[ins]]), 0.0)
    M = sparse.csr_matrix((scaled, (g[ins], np.arange(ins.size))), shape=(G, ins.size)) @ Di
    hess += (M.T @ M).toarray()
    if on.any():
        idx = np.flatnonzero(on)
        Don = D[idx] - D[istar[g[idx]]]
        grad += Don.T @ grad_c[idx]
        hess -= (Don.T @ sparse.diags(w[idx]) @ Don).toarray()
    return grad, hess, loglik(eta, n, c)


def _fit(D, offset, beta, g, n, c, G, *, max_iter: int, tol: float):
    """Newton's method with backtracking on the profile likelihood (as
    :func:`._em._observed_mle`). Returns ``(beta, iterations, converged)``."""
    grad, hess, ll = _terms(offset + D @ beta, D, g, n, c, G)
    converged, it = False, 0
    for it in range(1, int(max_iter) + 1):  # noqa: B007  # Newton steps, each vectorized over cells
        step = np.linalg.lstsq(-hess, grad, rcond=None)[0]
        t = 1.0
        while True:  # backtracking: halve until the likelihood does not decrease
            new = beta + t * step
            g_new, h_new, ll_new = _terms(offset + D @ new, D, g, n, c, G)
            if ll_new >= ll or t < 1e-10:
                break
            t *= 0.5
        if ll_new < ll:  # no ascent along the Newton direction: at the maximum up to rounding
            converged = float(np.max(np.abs(step))) < 1e-6
            break
        change = float(np.max(np.abs(t * step)))
        beta, grad, hess, ll = new, g_new, h_new, ll_new
        if change < tol:
            converged = True
            break
    return beta, it, converged


def _covariance(D, offset, beta, g, n, c, G) -> np.ndarray:
    """Inverse of minus the profile likelihood's Hessian at ``beta`` (NaN if singular)."""
    hess = _terms(offset + D @ beta, D, g, n, c, G)[1]
    info = -hess
    if np.linalg.matrix_rank(info) < info.shape[0]:
        return np.full(info.shape, np.nan)
    return np.linalg.inv(info)


def _wald(w: np.ndarray, cov: np.ndarray) -> dict[str, Any]:
    """The Wald test of ``w = 0`` with covariance ``cov``."""
    out: dict[str, Any] = {
        "test": "Wald chi-square of no feature effect (w = 0)",
        "df": int(w.size),
    }
    if not np.isfinite(cov).all():
        return {**out, "statistic": np.nan, "p_value": np.nan}
    stat = float(w @ np.linalg.solve(cov, w))
    return {**out, "statistic": stat, "p_value": float(chi2.sf(stat, w.size))}


def _as_text(uniq: np.ndarray, lf: Any, features: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The contexts' feature values as the log's columns cast to text (how
    :class:`~clickrank.targets.ContextTheta` matches an impression to its context)."""
    schema = log_schema(lf)
    frame = pl.DataFrame(
        [pl.Series(f, uniq[:, j]).cast(schema[f]).cast(pl.String) for j, f in enumerate(features)]
    )
    return tuple(frame.iter_rows())


def by_features(
    lf: Any, features: Any, method: str, estimate: Callable[..., Any], **kw: Any
) -> Any:
    """The pooled estimate of ``lf`` by ``method`` (``estimate(lf, method, **kw)``, the same
    numbers as without features, ``auto``'s choice included) holding the model of its
    curve as a function of ``features`` (``contexts``, a :class:`ContextModel`): EM's joint
    fit of the levels and the slopes where the pooled curve is EM's (documents seen at
    several positions), else that curve as the level and the slopes within each (query,
    doc, position) (:func:`slope_model`)."""
    from dataclasses import replace

    from ..engine import is_spark

    if is_spark(lf):
        raise InputError("context_features: the model is fitted on a polars log, not a "
                         "Spark DataFrame (aggregate to the log's columns first)")  # fmt: skip
    cols = check_features(lf, features)
    if method == "em" and kw.get("constraint", "observed") != "observed":
        raise InputError("context_features: the model's likelihood is EM's with "
                         "constraint='observed'")  # fmt: skip
    try:
        pooled = estimate(lf, method, **kw)
    except EstimationError as err:
        if method != "em" or "not identified" not in str(err):
            raise
        raise EstimationError(f"{err}; for context_features, method='regression-em' (or "
                              "'auto') with data= takes the level from regression EM and "
                              "the slopes from within documents") from None  # fmt: skip
    if pooled.method.removesuffix("+bootstrap") == "em":
        model, warns = context_model(lf, cols, K=pooled.K, max_iter=kw.get("max_iter", 200),
                                     tol=kw.get("tol", 1e-9))  # fmt: skip
        fit = "EM's likelihood (levels and slopes jointly)"
    else:
        model, warns = slope_model(lf, cols, pooled, max_iter=kw.get("max_iter", 200),
                                   tol=kw.get("tol", 1e-9))  # fmt: skip
        fit = f"{pooled.method}'s pooled curve; slopes within each (query, doc, position)"
    return replace(
        pooled,
        contexts=model,
        warnings=(*pooled.warnings, *warns),
        info={**pooled.info, "context_features": list(cols), "context_fit": fit,
              "context_reference": "Fang, Agarwal & Joachims, SIGIR 2019"},
    )  # fmt: skip
