r"""Position bias from a log without interventions or position variety: regression EM.

Wang, Golbandi, Bendersky, Metzler, Najork (WSDM 2018), §4. Clicks follow the
PBM, :math:`P(C = 1 \mid q, d, k) = \theta_k\,\gamma(x_{qd})`, where the
relevance is a *function of the document's features* :math:`x_{qd}` (a
gradient-boosted model) instead of one free parameter per (query, doc) as in
:mod:`._em`. A single deterministic logger shows every (query, doc) at one
position, so per-pair EM identifies nothing; with a relevance model, documents
with similar features shown at different ranks in different queries identify
:math:`\theta` -- under the model's assumption that relevance depends on the
features alone. That is a weaker guarantee than a randomized intervention:
if the model cannot tell what the logger's ranking knows, the difference is
taken for position bias.

Fit
    The log-likelihood over the (query, doc, position) cells,

    .. math::
        \ell(\theta, f) = \sum_{qdk} c_{qdk}\log\bigl(\theta_k\sigma(f(x_{qd}))\bigr)
            + (n_{qdk} - c_{qdk})\log\bigl(1 - \theta_k\sigma(f(x_{qd}))\bigr),

    is maximized by blocks (each step of the paper's EM, taken to its maximum):
    given :math:`\theta`, LightGBM adds a tree to :math:`f` on :math:`\ell` itself (a
    custom objective: its gradient and its Fisher information as the Hessian);
    given :math:`\gamma`, each :math:`\theta_k` then solves its one-dimensional
    score equation (Newton), so every tree is a step up the likelihood with
    :math:`\theta` profiled out. The number of trees is the one with the best
    likelihood of held-out queries. :math:`\theta_1 = 1` (the scale is not
    identified). The relevance of a document is *cross-fitted*: predicted by a
    model trained on the other folds of queries (``folds``), so it cannot learn
    a document's own clicks at its own position, which would hide the position
    effect in :math:`f`.

Correction
    Regression EM's relevance model is regularized (shrinkage, early stopping), and a
    regularized model is shrunk towards a constant *along the logger's ranking*, the one
    direction θ competes for: it leaves part of the relevance decline with position to θ,
    which comes out too steep (on ``synthetic(300, 20)``, log θ̂ at position 10 was 0.44
    below the truth, three of its standard deviations). With ``correction="orthogonal"``
    (the default) θ is then taken from Neyman-orthogonal moments of the PBM's mean
    (:func:`_orthogonal`), which use a cross-fitted *placement* model, where the logger
    puts a document with features :math:`x` (:func:`_placement`), so that an error in the
    relevance model moves θ only at second order (double/debiased machine learning,
    Chernozhukov et al. (2018)).

Interval
    The sandwich of those moments, clustered by query (queries, not sessions, are the
    unit: the relevance model shares strength across them), with a Student t on the
    number of queries less one. With ``n_boot`` > 0, a query bootstrap instead: each
    replicate gives every query a Poisson(1) weight and refits everything, warm-started
    at the full estimate; the interval is the log-scale normal interval with the
    replicates' standard deviation of :math:`\log\hat\theta` (as :func:`.em`).
    Either counts the sampling, not the bias the relevance model leaves at its best round
    (it shrinks towards a constant, and the moments remove that only to first order):
    alone, the sandwich covered 0.71 at position 2 with 4,800 queries. So the reported
    interval is the hull of that one and of the same interval around θ from the relevance
    model at ``_SENSITIVITY`` (3) times its best round, a less smoothed model biased the
    other way where clicks are few; θ̂ is still the best round's (docs/logs.md, "The
    interval spans two smoothings").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import EstimationError, InputError, check_non_negative
from ..datasets import RankingData
from ..engine.join import per_doc, prepare_log
from ._result import Propensities
from ._stats import as_lazy, finish, resolve_K

__all__ = ["regression_em", "RELEVANCE_PARAMS"]

#: LightGBM settings of the relevance model :math:`f` (small trees, many rows a leaf:
#: the model must generalize across queries, not memorize documents).
RELEVANCE_PARAMS: dict[str, Any] = {
    "learning_rate": 0.1,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "lambda_l2": 1.0,
    "max_bin": 63,
}
_ROUNDS = 300
_PATIENCE = 20
_P_MAX = 1 - 1e-9
_PLACEMENT_ROUNDS = 1000
#: The placement's index is refitted for this many times the round its held-out squared
#: error picks: undersmoothed, as double machine learning wants a nuisance whose error
#: multiplies another's (the best predictor of the position leaves θ biased by more than
#: its interval; docs/logs.md, "It is the placement").
_UNDERSMOOTH = 3
#: The intervals also span θ from the relevance model's held-out scores at this many times
#: its best round (its bias at the best round, shrunk along the logger's ranking, is what
#: the sandwich does not count; docs/logs.md, "The interval spans two smoothings").
_SENSITIVITY = 3


@dataclass(frozen=True)
class _Cells:
    """The log as counts per (shown document, position), with the documents' features."""

    row: np.ndarray  # [cells] index into the shown documents
    pos: np.ndarray  # [cells] 0-based position
    c: np.ndarray  # [cells] clicks
    n: np.ndarray  # [cells] impressions
    X: np.ndarray  # [docs, features] of the shown documents
    query: np.ndarray  # [docs] query number (0..Q-1)
    fold: np.ndarray  # [docs] cross-fitting fold
    K: int
    n_sessions: int

    def weighted(self, w: np.ndarray) -> _Cells:
        """The cells of the queries with weight > 0, counts times their query's weight."""
        keep_doc = w[self.query] > 0
        new = np.cumsum(keep_doc) - 1
        keep = keep_doc[self.row]
        cw = w[self.query[self.row[keep]]]
        return _Cells(new[self.row[keep]], self.pos[keep], self.c[keep] * cw, self.n[keep] * cw,
                      self.X[keep_doc], self.query[keep_doc], self.fold[keep_doc], self.K,
                      self.n_sessions)  # fmt: skip


def _cells(data: RankingData, log: Any, K: int | None, folds: int, seed: int) -> _Cells:
    lf, keys = prepare_log(data, log, ("session", "query", "doc", "position", "click"))
    agg = per_doc(lf, keys, [pl.col("click").cast(pl.Int64).sum().alias("c"),
                             pl.len().alias("n")], "click log",
                  by=("position",)).sort("row", "position")  # fmt: skip
    rows = agg["row"].to_numpy()
    pos = agg["position"].to_numpy().astype(np.int64)
    K = resolve_K(K, int(pos.max()), "regression-em")
    keep = pos <= K
    rows, pos = rows[keep], pos[keep]
    c = agg["c"].to_numpy().astype(np.float64)[keep]
    n = agg["n"].to_numpy().astype(np.float64)[keep]
    shown, row = np.unique(rows, return_inverse=True)
    q = data.query_index[shown]
    queries, query = np.unique(q, return_inverse=True)
    order = np.random.default_rng(seed).permutation(queries.size)
    fold_of_query = np.empty(queries.size, dtype=np.int64)
    fold_of_query[order] = np.arange(queries.size) % folds
    n_sessions = int(n[pos == 1].sum())
    return _Cells(row, pos - 1, c, n, np.asarray(data.X[shown], dtype=np.float32), query,
                  fold_of_query[query], K, n_sessions)  # fmt: skip


def _sigmoid(f: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-f))


def _theta_given(cells: _Cells, gamma: np.ndarray, theta: np.ndarray,
                 steps: int = 8) -> np.ndarray:  # fmt: skip
    r"""Per position, the :math:`\theta_k` that maximizes :math:`\ell` given :math:`\gamma`.

    The root of :math:`h(u) = C_k - \sum (n - c)\,\theta\gamma/(1 - \theta\gamma)` in
    :math:`u = \log\theta_k`, decreasing in :math:`u`: Newton's method from ``theta``, kept
    below the bound :math:`\theta_k\gamma < 1` of the observed cells; :math:`\theta_1 = 1`."""
    K = cells.K
    g = gamma[cells.row]
    C = np.bincount(cells.pos, weights=cells.c, minlength=K)
    top = np.zeros(K)
    np.maximum.at(top, cells.pos, g)
    hi = np.log(_P_MAX / np.maximum(top, 1e-12))
    u = np.minimum(np.log(np.where(np.isfinite(theta) & (theta > 0), theta, 0.5)), hi - 1e-3)
    miss = cells.n - cells.c
    for _ in range(steps):
        tg = np.exp(u)[cells.pos] * g
        odds = tg / (1 - tg)
        h = C - np.bincount(cells.pos, weights=miss * odds, minlength=K)
        dh = -np.bincount(cells.pos, weights=miss * odds / (1 - tg), minlength=K)
        step = np.divide(h, dh, out=np.zeros(K), where=dh < 0)
        u = np.minimum(u - np.clip(step, -2.0, 2.0), 0.5 * (u + hi))  # stay below the bound
    theta = np.exp(u)
    theta[C == 0] = 0.0
    theta[np.bincount(cells.pos, weights=cells.n, minlength=K) == 0] = np.nan
    return theta / theta[0]


def _nll(cells: _Cells, theta: np.ndarray, gamma: np.ndarray) -> float:
    p = np.minimum(np.nan_to_num(theta)[cells.pos] * gamma[cells.row], _P_MAX)
    ll = cells.c * np.log(np.maximum(p, 1e-300)) + (cells.n - cells.c) * np.log1p(-p)
    return float(-ll.sum() / max(cells.n.sum(), 1e-12))


def _fit(cells: _Cells, theta0: np.ndarray, *, seed: int, rounds: int = _ROUNDS,
         longer: int = 0) -> tuple[np.ndarray, dict[str, Any], np.ndarray, Any]:  # fmt: skip
    """Boost the cross-fitted relevance models one tree at a time, each fold's on its
    training queries given the current θ; after every round θ is re-solved given the
    held-out relevance (so each tree is a step up the likelihood with θ profiled out).
    Stops at the round with the best held-out likelihood (``_PATIENCE`` rounds without).
    Returns θ, the fit's record and every document's held-out score :math:`f` at that
    round; with ``longer`` > 0, boosting then goes on to ``longer`` times that round, whose
    held-out scores are returned too (else None; the rest is the same)."""
    import lightgbm as lgb

    theta = theta0.copy()
    rate = cells.c.sum() / max((cells.n * theta[cells.pos]).sum(), 1e-12)
    base = float(np.log(rate / (1 - rate))) if 0 < rate < 1 else 0.0
    F = np.full(cells.X.shape[0], base)  # held-out scores of every document
    params = {**RELEVANCE_PARAMS, "objective": "none", "verbose": -1, "num_threads": 1,
              "deterministic": True, "force_row_wise": True, "seed": seed}  # fmt: skip
    folds = []
    # every feature kept in the bins (the Dataset's feature_pre_filter): a fold with too few
    # cells to split on would otherwise lose them all and stop LightGBM on a fatal check
    for j in range(int(cells.fold.max()) + 1):
        held = cells.fold == j
        train = ~held
        at = train[cells.row]
        r = (np.cumsum(train) - 1)[cells.row[at]]
        m = int(train.sum())
        ds = lgb.Dataset(cells.X[train], np.zeros(m), init_score=np.full(m, base),
                         params={"feature_pre_filter": False,
                                 "num_threads": params["num_threads"]},
                         free_raw_data=False)  # fmt: skip
        folds.append((lgb.Booster(params, ds), held, at, r))

    def objective(at, r):
        def fobj(preds, _ds):
            t, c, n = theta[cells.pos[at]], cells.c[at], cells.n[at]
            s = _sigmoid(preds)
            p = np.minimum(t * s[r], _P_MAX)
            m = s.size
            grad = (1 - s) * np.bincount(r, weights=c - (n - c) * p / (1 - p), minlength=m)
            hess = s * (1 - s) ** 2 * np.bincount(r, weights=n * t / (1 - p), minlength=m)
            return -grad, np.maximum(hess, 1e-12)

        return fobj

    best, best_theta, best_round, best_F = np.inf, theta.copy(), 0, F.copy()
    chosen, long_F = False, None
    for k in range(rounds * max(longer, 1)):
        for booster, held, at, r in folds:
            booster.update(fobj=objective(at, r))
            if held.any():
                F[held] += booster.predict(cells.X[held], start_iteration=k, num_iteration=1,
                                           raw_score=True,
                                           num_threads=params["num_threads"])  # fmt: skip
        gamma = _sigmoid(F)
        theta = _theta_given(cells, gamma, theta)
        if not chosen:
            loss = _nll(cells, theta, gamma)
            if loss < best - 1e-12:
                best, best_theta, best_round, best_F = loss, theta.copy(), k + 1, F.copy()
            chosen = k + 1 - best_round >= _PATIENCE or k + 1 >= rounds
        if k + 1 == longer * best_round:  # the round that counts if best_round stays the best
            long_F = F.copy()
        if chosen and k + 1 >= longer * best_round:
            break
    return best_theta, {"trees": best_round, "heldout_nll": best}, best_F, long_F


def _ordered_probs(z: np.ndarray, index: np.ndarray, K: int) -> np.ndarray:
    """``[rows, K]`` probabilities of the ordered logit ``z`` = (first cut point, log gaps
    between the next ones, slope) at ``index``."""
    cuts = np.cumsum(np.concatenate([[z[0]], np.exp(z[1 : K - 1])]))
    cdf = _sigmoid(cuts[None, :] - z[K - 1] * index[:, None])
    edges = np.hstack([np.zeros((index.size, 1)), cdf, np.ones((index.size, 1))])
    return np.maximum(np.diff(edges, axis=1), 1e-12)


def _ordered_logit(index: np.ndarray, pos: np.ndarray, weight: np.ndarray, K: int) -> np.ndarray:
    """Maximum-likelihood ordered logit of the 0-based positions ``pos`` on ``index``,
    started with the cut points half-way between positions (``index`` predicts them)."""
    from scipy.optimize import minimize

    rows = np.arange(pos.size)

    def nll(z):
        return -(weight * np.log(_ordered_probs(z, index, K)[rows, pos])).sum()

    start = np.concatenate([[0.5], np.zeros(K - 2), [1.0]])
    return minimize(nll, start, method="L-BFGS-B").x


def _placement(cells: _Cells, seed: int) -> tuple[np.ndarray, list[int]]:
    r"""Cross-fitted :math:`\pi_k(x) = P(\text{position } k \mid x)`, where the logger puts a
    document with features :math:`x`: an ordered logit on a gradient-boosted index,
    :math:`P(\text{position} \le k \mid x) = \sigma(c_k - b\,g(x))`.

    A logger ranks by a score, so the position is one ordered index of the features (and
    of the query's other documents, which the index averages over): :math:`g` is
    LightGBM's regression of the position on the features (weights: the cells'
    impressions), refitted for ``_UNDERSMOOTH`` times the round with the best squared
    error of a quarter of the training queries held out (the best predictor is shrunk
    towards the mean along the logger's ranking, as the relevance model is, and the
    product of the two errors biases θ); the cut points :math:`c_k` and the slope
    :math:`b` are then fitted by maximum likelihood. Each fold's documents are predicted
    by the model of the other folds' queries. The moments of :func:`_orthogonal` make θ
    insensitive, to first order, to what is left of its error. Returns π ``[docs, K]`` and
    each fold's number of trees."""
    import lightgbm as lgb

    K = cells.K
    pi = np.full((cells.X.shape[0], K), 1.0 / K)
    params = {**RELEVANCE_PARAMS, "objective": "regression", "verbose": -1, "num_threads": 1,
              "deterministic": True, "force_row_wise": True, "seed": seed,
              "feature_pre_filter": False}  # fmt: skip
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x91AC]))
    stop = rng.permutation(int(cells.query.max()) + 1) % 4 == 0  # the early-stopping queries

    binning = {"feature_pre_filter": False, "num_threads": params["num_threads"]}

    def dataset(at):
        return lgb.Dataset(cells.X[cells.row[at]], cells.pos[at].astype(np.float64),
                           weight=cells.n[at], params=binning)  # fmt: skip

    rounds = []
    for j in range(int(cells.fold.max()) + 1):
        held = cells.fold == j
        train = ~held[cells.row]
        fit = train & ~stop[cells.query[cells.row]]
        val = train & ~fit
        if not fit.any():
            rounds.append(0)
            continue
        if val.any():
            stopping = [lgb.early_stopping(_PATIENCE, verbose=False)]
            booster = lgb.train(params, dataset(fit), _PLACEMENT_ROUNDS,
                                valid_sets=[dataset(val)], callbacks=stopping,
                                keep_training_booster=True)  # fmt: skip
            best = int(booster.best_iteration or booster.current_iteration())
            rounds.append(min(_UNDERSMOOTH * best, _PLACEMENT_ROUNDS))
            while booster.current_iteration() < rounds[-1]:  # the trees of one longer fit
                if booster.update():  # no split left
                    rounds[-1] = booster.current_iteration()
                    break
        else:  # too few queries to hold some out: a third of the relevance model's cap
            booster = lgb.train(params, dataset(fit), _ROUNDS // 3)
            rounds.append(int(booster.current_iteration()))
        index = booster.predict(cells.X, num_iteration=rounds[-1],
                                num_threads=params["num_threads"])  # fmt: skip
        z = _ordered_logit(index[cells.row[train]], cells.pos[train], cells.n[train], K)
        pi[held] = _ordered_probs(z, index[held], K)
    return pi, rounds


def _orthogonal(cells: _Cells, F: np.ndarray, theta: np.ndarray,
                pi: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    r"""θ from Neyman-orthogonal moments of the PBM's mean, and its query-clustered SE.

    With :math:`\mu = n\,e^{\alpha + \beta_k}\gamma(x)` (:math:`\beta_1 = 0`) solve

    .. math::
        \sum_{\text{cells}} (c - \mu) = 0, \qquad
        \sum_{\text{cells}} (c - \mu)\,\bigl(D_k - m_k(x)\bigr) = 0,\quad k \ge 2,
        \qquad m_k(x) = \frac{\pi_k(x)\,\theta_k}{\sum_j \pi_j(x)\,\theta_j},

    :math:`D_k` the indicator of position :math:`k`. Because
    :math:`E[\mu\,(D - m(x)) \mid x] = 0`, an error in :math:`\log\gamma` (any function of
    :math:`x`) changes the moments only at second order, times the error of :math:`\pi`
    (Chernozhukov et al. (2018), double/debiased machine learning; the Poisson-mean
    version of the partialling out of Robinson (1988)). That removes most of the
    regularization bias regression EM's relevance model leaves in θ: shrunk towards a
    constant along the logger's ranking, it leaves part of the relevance decline with
    position to θ. Positions without clicks are left out (θ = 0 there, as before). The SE
    of :math:`\log\theta_k` is the sandwich :math:`J^{-1} B J^{-T}`, :math:`B` the outer
    products of the moments summed per query. Returns None when the equations have no
    root (the caller keeps regression EM's θ)."""
    from scipy.optimize import root

    K = cells.K
    clicks = np.bincount(cells.pos, weights=cells.c, minlength=K)
    used = np.flatnonzero(clicks > 0)
    if used.size < 2 or used[0] != 0:
        return None
    col = np.full(K, -1)
    col[used] = np.arange(used.size)
    at = col[cells.pos] >= 0
    c, n, k = cells.c[at], cells.n[at], col[cells.pos[at]]
    h = np.log(_sigmoid(F))[cells.row[at]]
    P = np.maximum(pi[cells.row[at]][:, used], 1e-12)
    D = np.zeros((k.size, used.size))
    D[np.arange(k.size), k] = 1.0

    def parts(z):
        beta = np.concatenate([[0.0], z[1:]])
        mu = n * np.exp(np.clip(z[0] + beta[k] + h, -700, 700))
        m = P * np.exp(beta)
        m /= m.sum(axis=1, keepdims=True)
        return mu, m, c - mu

    def moments(z):
        mu, m, r = parts(z)
        dm = D - m
        value = np.concatenate([[r.sum()], (r[:, None] * dm[:, 1:]).sum(axis=0)])
        # d/d(alpha, beta_l) of the moments; beta_1 = 0 is not a variable
        jac = np.empty((used.size, used.size))
        jac[0, 0] = -mu.sum()
        jac[0, 1:] = -(mu[:, None] * D[:, 1:]).sum(axis=0)
        jac[1:, 0] = -(mu[:, None] * dm[:, 1:]).sum(axis=0)
        rm = r[:, None] * m
        jac[1:, 1:] = -((mu[:, None] * dm)[:, 1:].T @ D[:, 1:]) + (rm[:, 1:].T @ m[:, 1:])
        jac[1:, 1:] -= np.diag(rm[:, 1:].sum(axis=0))
        return value, jac

    start = np.where(np.isfinite(theta) & (theta > 0), theta, 1.0)[used]
    start /= start[0]
    level = np.log(c.sum() / max((n * np.exp(h) * start[k]).sum(), 1e-300))  # c.sum() > 0
    sol = root(moments, np.concatenate([[level], np.log(start[1:])]), jac=True, method="hybr")
    if not sol.success or not np.all(np.isfinite(sol.x)):
        return None
    z = sol.x
    mu, m, r = parts(z)
    meat = _query_meat(cells, at, used.size, r, m, D)
    try:
        inv = np.linalg.inv(moments(z)[1])
    except np.linalg.LinAlgError:
        return None
    cov = inv @ meat @ inv.T
    return _theta_se(cells, used, z, cov)


def _query_meat(cells: _Cells, at: np.ndarray, n_used: int, r: np.ndarray, m: np.ndarray,
                D: np.ndarray) -> np.ndarray:  # fmt: skip
    """Outer products of the moments summed per query: the meat step of :func:`_orthogonal`."""
    psi = np.concatenate([r[:, None], r[:, None] * (D - m)[:, 1:]], axis=1)
    query = cells.query[cells.row[at]]
    Q = int(query.max()) + 1
    per_query = np.zeros((Q, n_used))
    np.add.at(per_query, query, psi)
    n_q = np.unique(query).size
    meat = per_query.T @ per_query * n_q / max(n_q - 1, 1)
    return meat


def _theta_se(cells: _Cells, used: np.ndarray, z: np.ndarray,
              cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Theta and SE of log theta at every position: the result step of :func:`_orthogonal`."""
    K = cells.K
    out, se = np.zeros(K), np.full(K, np.nan)
    out[used] = np.exp(np.concatenate([[0.0], z[1:]]))
    se[used] = np.sqrt(np.maximum(np.concatenate([[0.0], np.diag(cov)[1:]]), 0.0))
    shown = np.bincount(cells.pos, weights=cells.n, minlength=K) > 0
    out[~shown] = np.nan
    return out, se


def _naive(cells: _Cells) -> np.ndarray:
    """Click-through rate by position over position 1's: the start (biased towards the
    logger's ranking, which regression EM removes)."""
    K = cells.K
    ctr = np.bincount(cells.pos, weights=cells.c, minlength=K) / np.maximum(
        np.bincount(cells.pos, weights=cells.n, minlength=K), 1e-12)  # fmt: skip
    ctr = np.maximum(ctr, 1e-3 * max(ctr[0], 1e-12))
    return np.minimum(ctr / max(ctr[0], 1e-12), 1.0)


def _estimate(cells: _Cells, theta0: np.ndarray, seed: int, orthogonal: bool,
              longer: int = 0) -> tuple[np.ndarray, np.ndarray, dict[str, Any], Any]:  # fmt: skip
    """Regression EM, then (``orthogonal``) θ from the orthogonal moments on its relevance
    and the placement model; returns θ, its sandwich SE (NaN without it), the record, and
    (``longer`` > 0) θ and its SE from the same moments with the relevance model at
    ``longer`` times its best round (else None)."""
    em_theta, info, F, long_F = _fit(cells, theta0, seed=seed, longer=longer)
    theta, se, other = em_theta, np.full(cells.K, np.nan), None
    info["correction"] = "none"
    if orthogonal:
        pi, rounds = _placement(cells, seed)
        info["placement_trees"] = rounds
        fixed = _orthogonal(cells, F, em_theta, pi)
        if fixed is None:
            info["correction"] = "the orthogonal moments have no root"
        else:
            theta, se = fixed
            info["correction"] = "orthogonal"
            if long_F is not None:
                other = _orthogonal(cells, long_F, em_theta, pi)
    return theta, se, info, other


def _check_args(K: int | None, n_boot: int, folds: int, correction: str, sensitivity: int,
                data: RankingData) -> int:  # fmt: skip
    """Check the arguments and return ``n_boot``: the validation step of :func:`regression_em`."""
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")
    n_boot = int(check_non_negative(n_boot, name="n_boot", integer=True))
    if not isinstance(folds, int | np.integer) or folds < 2:
        raise InputError(f"folds must be an integer >= 2, got {folds!r}")
    if correction not in ("orthogonal", "none"):
        raise InputError(f"correction must be 'orthogonal' or 'none', got {correction!r}")
    if not isinstance(sensitivity, int | np.integer) or sensitivity == 1 or sensitivity < 0:
        raise InputError(f"sensitivity must be 0 or an integer >= 2, got {sensitivity!r}")
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    return n_boot


def _read_cells(log: Any, data: RankingData, K: int | None, folds: int, seed: int) -> _Cells:
    """The log's cells, checked: the reading step of :func:`regression_em`."""
    cells = _cells(data, as_lazy(log), K, int(folds), seed)
    if cells.K < 2:
        raise EstimationError("regression-em: the log shows one position only")
    if np.unique(cells.query).size < 2 * folds:
        raise EstimationError(
            f"regression-em: {np.unique(cells.query).size} queries in the log; the relevance "
            f"model needs at least {2 * folds} to be cross-fitted over {folds} folds"
        )
    return cells


def _bootstrap(
    cells: _Cells,
    theta: np.ndarray,
    seed: int,
    orthogonal: bool,
    n_boot: int,
    progress: Callable[[int], None] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap replicates of log theta, their SD: the interval step of :func:`regression_em`."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5E5]))
    Q = int(cells.query.max()) + 1
    reps = np.empty((n_boot, cells.K))
    start = np.where(np.isfinite(theta) & (theta > 0), theta, 1.0)
    for b in range(n_boot):
        w = rng.poisson(1.0, Q).astype(np.float64)
        rb = _estimate(cells.weighted(w), start, seed, orthogonal)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[b] = np.log(rb)
        if progress is not None:
            progress(1)
    ok = np.isfinite(reps)
    with np.errstate(invalid="ignore"):
        se = np.array([reps[ok[:, k], k].std(ddof=1) if ok[:, k].sum() > 1 else np.nan
                       for k in range(cells.K)])  # fmt: skip
    se[0] = 0.0
    return reps, se


def _sensitivity(theta: np.ndarray, se: np.ndarray, other: Any, n_boot: int, sensitivity: int,
                 info: dict[str, Any], interval: str) -> tuple[np.ndarray | None, str]:  # fmt: skip
    """Spread between the two smoothings: the sensitivity step of :func:`regression_em`."""
    spread = None
    if other is not None and np.isfinite(se[1:]).any():  # the interval spans both smoothings
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.column_stack([np.log(other[0]) - np.log(theta),
                                      se if n_boot else other[1]])  # fmt: skip
        interval += (f"; the hull of the intervals with the relevance model at its best round "
                     f"and at {sensitivity}x it")  # fmt: skip
        info["sensitivity"] = {"relevance_trees": int(sensitivity) * info["trees"],
                               "theta": [float(v) if np.isfinite(v) else None
                                         for v in other[0]]}  # fmt: skip
    return spread, interval


def _warnings(orthogonal: bool, info: dict[str, Any]) -> list[str]:
    """The estimate's warnings: the result-assembling step of :func:`regression_em`."""
    warnings = ["theta is identified through a model of relevance on the features (regression "
                "EM): a weaker guarantee than randomized interventions; its intervals count "
                "the sampling of queries and clicks and span the relevance model's bias "
                "between two smoothings, not every bias the relevance and placement models "
                "can leave (docs/logs.md)"]  # fmt: skip
    if orthogonal and info["correction"] != "orthogonal":
        warnings.append(f"regression-em: {info['correction']}; theta is regression EM's own, "
                        "biased towards the click-through rates by position")  # fmt: skip
    return warnings


def regression_em(
    log: Any,
    data: RankingData,
    *,
    K: int | None = None,
    n_boot: int = 0,
    folds: int = 2,
    correction: str = "orthogonal",
    sensitivity: int = _SENSITIVITY,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> Propensities:
    r"""Regression-EM estimate of PBM position bias (Wang et al. (2018), §4), relevance a
    gradient-boosted model of the documents' features.

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log with ``session``, ``query``, ``doc``, ``position``, ``click`` over
        ``data``'s documents. Needs no intervention and no document shown at several
        positions (see the module docstring for what identifies θ instead).
    data : RankingData
        The documents' features (labels are never read).
    K : int, optional
        Positions to estimate (default: all positions in the log).
    n_boot : int
        Query-bootstrap replicates for the intervals (0: the sandwich intervals of the
        orthogonal moments; with ``correction="none"``, NaN standard errors).
    folds : int
        Cross-fitting folds of the queries for the relevance and placement models (at
        least 2).
    correction : {"orthogonal", "none"}
        ``"orthogonal"``: θ from the orthogonal moments on the relevance and placement
        models (module docstring); ``"none"``: regression EM's own θ (Wang et al.),
        biased towards the click-through rates by position. Should the moments have no
        root, regression EM's own θ is kept and a warning says so.
    sensitivity : int
        With the orthogonal correction, the intervals are the hull of θ̂'s and of the same
        interval around θ from the relevance model at ``sensitivity`` times its best round
        (default 3; module docstring). 0: θ̂'s interval alone, and no extra trees (θ̂ is
        the same; :class:`~clickrank.ClickRanker`, which uses θ̂ only, passes 0).
    seed : int
        Seed of the folds, the trees and the bootstrap.
    progress : callable, optional
        Called with 1 after each bootstrap replicate.

    Returns
    -------
    Propensities
        θ relative to position 1, ``method="regression-em"``; ``info`` records the
        trees of the relevance and placement models, the correction, the interval, and
        that θ is identified by the relevance model.

    Raises
    ------
    EstimationError
        When no position beyond 1 is identified (no clicks, one position shown).
    """
    n_boot = _check_args(K, n_boot, folds, correction, sensitivity, data)
    cells = _read_cells(log, data, K, folds, seed)
    orthogonal = correction == "orthogonal"
    theta, se, info, other = _estimate(cells, _naive(cells), seed, orthogonal, int(sensitivity))
    reps, ci = None, {}
    if n_boot:
        reps, se = _bootstrap(cells, theta, seed, orthogonal, n_boot, progress)
        interval = "query bootstrap"
    elif info["correction"] == "orthogonal":
        interval = "sandwich SE clustered by query, Student t"
        ci = {"ci_method": "t", "df": np.full(cells.K, max(np.unique(cells.query).size - 1, 1.0))}
    else:  # se: NaN from _estimate
        interval = "none (n_boot=0)"
    spread, interval = _sensitivity(theta, se, other, n_boot, sensitivity, info, interval)
    impressions = np.bincount(cells.pos, weights=cells.n, minlength=cells.K)
    info = {**info, "folds": int(folds), "n_boot": n_boot, "interval": interval,
            "identified_by": "a gradient-boosted relevance model of the features"}  # fmt: skip
    warnings = _warnings(orthogonal, info)
    out = finish(theta, se, impressions, method="regression-em", n_sessions=cells.n_sessions,
                 info=info, warnings=warnings, whole_log=True, **ci)  # fmt: skip
    return replace(out, replicates=reps, sensitivity=spread)
