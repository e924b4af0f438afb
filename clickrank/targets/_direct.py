r"""The direct method and doubly robust gains (Oosterhuis (2023)).

A *direct-method* (DM) relevance model predicts the click probability after
examination, :math:`\hat r(d) \approx \gamma(d)`, from the document's features;
the *doubly robust* (DR) gain corrects it with the clicks:

.. math::
    \hat\gamma_{\mathrm{DR}}(d) = \hat r(d)
    + \frac{\frac{1}{N_q}\sum_s \big(c_s(d) - \theta_{p_s(d)}\, \hat r(d)\big)}{\max(\rho_d, \tau)},
    \qquad \rho_d = \frac{1}{N_q} \sum_s \theta_{p_s(d)},

the DR estimator of Oosterhuis (2023), Eq. 17, for the position-based model,
with :math:`\rho_d` the document's expected exposure under the logging policy
(here its empirical value, the policy-aware propensity of Oosterhuis & de
Rijke (2020)) and :math:`\tau` the clipping level. It is unbiased when either
the propensities or the relevance model are right; for a shown document with
:math:`\rho_d \ge \tau` it equals the per-exposure click rate
:math:`C(d)/E(d)`, for a never-shown document (:math:`\rho_d = 0`) it is the
model's prediction :math:`\hat r(d)`, and in between it blends the two. So DR
gains cover *every* document of a query, including those the logger never
showed, without treating them as irrelevant.

The relevance model is a LightGBM Poisson regression of the clicks on the
features with the exposure as offset,
:math:`C(d) \sim \mathrm{Poisson}(E(d)\, e^{f(x_d)})`, i.e. the position-based
model's likelihood in its Poisson approximation (a feature-based PBM, as in the
regression EM of Wang et al. (2018)), *cross-fitted* by query: the
prediction for a query comes from a model fitted on the other folds, so the
correction term is not fitted to its own noise (the usual double machine
learning device).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, check_choice, check_positive
from ..datasets import RankingData
from ._stats import ClickStats, auto_clip, click_stats
from ._target import Target

__all__ = ["relevance_model", "dr", "RELEVANCE_PARAMS"]

#: LightGBM parameters of the direct-method relevance model (small trees, slow
#: learning: it must generalise to other queries, not memorise documents).
RELEVANCE_PARAMS: dict[str, Any] = {
    "objective": "poisson",
    "num_leaves": 8,
    "learning_rate": 0.05,
    "min_data_in_leaf": 20,
    "num_boost_round": 200,
}


def relevance_model(
    data: RankingData,
    stats: ClickStats,
    *,
    folds: int = 5,
    seed: int = 0,
    params: dict[str, Any] | None = None,
) -> np.ndarray:
    r"""Cross-fitted direct-method relevance :math:`\hat r(d) \in [0, 1]` of every row.

    Fits :math:`C(d) \sim \mathrm{Poisson}(E(d) e^{f(x_d)})` on the shown rows
    (LightGBM ``objective="poisson"`` on the rate :math:`C/E` with weight
    :math:`E`) of all queries but one fold and predicts that fold's rows,
    for ``folds`` folds of the queries (random, seeded). ``folds=1`` fits one
    model on all queries and predicts them in-sample.

    Parameters
    ----------
    data : RankingData
    stats : ClickStats
        From :func:`clickrank.targets.click_stats` (with propensities).
    folds : int
    seed : int
    params : dict, optional
        Overrides of :data:`RELEVANCE_PARAMS` (LightGBM parameters plus
        ``num_boost_round``).
    """
    import lightgbm as lgb

    folds = int(check_positive(folds, name="folds", integer=True))
    p = {**RELEVANCE_PARAMS, **(params or {})}
    rounds = int(p.pop("num_boost_round"))
    # column-wise histograms: the same model on any number of threads (lambdamart.py)
    p.update(verbosity=-1, seed=int(seed), deterministic=True, force_col_wise=True,
             num_threads=int(p.get("num_threads", 1)))  # fmt: skip
    shown = stats.shown
    if not shown.any():
        raise InputError("the log shows none of the data's documents; no relevance model")
    rate = stats.ratio()
    q = data.query_index
    fold = np.random.default_rng(seed).permutation(data.n_queries) % folds
    out = np.zeros(data.n_docs)
    for f in range(folds):  # a handful of model fits, not a loop over documents
        held = fold[q] == f
        fit = shown & (~held if folds > 1 else True)
        if not fit.any():
            continue
        booster = lgb.train(
            p, lgb.Dataset(data.X[fit], rate[fit], weight=stats.exposure[fit]), rounds
        )
        out[held] = booster.predict(data.X[held], num_threads=p["num_threads"])
    return np.clip(out, 0.0, 1.0)


def dr(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame | None,
    propensities: Any,
    *,
    relevance: np.ndarray | None = None,
    clip: float | str | None = "auto",
    candidates: str = "all",
    folds: int = 5,
    seed: int = 0,
    stats: ClickStats | None = None,
) -> Target:
    r"""Doubly robust click gains :math:`N_q \hat\gamma_{\mathrm{DR}}(d)` (module docs).

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log (``session``, ``query``, ``doc``, ``position``, ``click``);
        may be None when ``stats`` is given.
    propensities : array-like or object with ``.theta``
    relevance : array ``[n_docs]``, optional
        Direct-method predictions :math:`\hat r`; default: :func:`relevance_model`
        (cross-fitted, ``folds``, ``seed``).
    clip : float, "auto" or None
        Clipping :math:`\tau` of the expected exposure :math:`\rho_d`;
        ``"auto"`` is :math:`\min(10/\sqrt{N}, 1)` (Oosterhuis (2023), §7).
        None: no clipping (a document with :math:`\rho_d > 0` gets exactly
        :math:`C/E`).
    candidates : {"all", "shown", "auto"}
        ``"all"`` (default; ``"auto"`` means the same): never-shown documents
        take part with the model's relevance; ``"shown"``: only shown ones.
    stats : ClickStats, optional
        Precomputed statistics (with propensities, unclipped).

    Notes
    -----
    Gains are clipped at 0 (LambdaRank needs non-negative gains); the count of
    clipped documents is in ``metadata``.
    """
    if stats is None:
        stats = click_stats(data, log, propensities)
    if stats.theta is None:
        raise InputError("DR gains need propensities")
    if relevance is None:
        relevance = relevance_model(data, stats, folds=folds, seed=seed)
    r = np.asarray(relevance, dtype=np.float64)
    if r.shape != (data.n_docs,) or not np.all(np.isfinite(r)):
        raise InputError(f"relevance must be finite with one value per row ({data.n_docs})")
    tau = auto_clip(stats.n_sessions) if clip == "auto" else (0.0 if clip is None else float(clip))
    n_q = stats.sessions
    rho = np.divide(stats.exposure, n_q, out=np.zeros_like(n_q), where=n_q > 0)
    den = np.maximum(rho, tau)
    resid = np.divide(stats.clicks - stats.exposure * r, n_q, out=np.zeros_like(r), where=n_q > 0)
    gamma = r + np.divide(resid, den, out=np.zeros_like(r), where=den > 0)
    negative = int((gamma < 0).sum())
    gains = np.maximum(gamma, 0.0) * np.maximum(n_q, 1.0)
    check_choice(candidates, ("all", "shown", "auto"), name="candidates")
    meta = {
        "clip": tau, "clicks": int(stats.clicks.sum()),
        "relevance_mean": float(r.mean()) if r.size else float("nan"),
        "clipped_at_zero": negative, "shown_fraction": round(stats.shown_fraction, 4),
        "candidates": "shown" if candidates == "shown" else "all",
    }  # fmt: skip
    return Target(
        "dr", gains=gains, candidates=stats.shown if candidates == "shown" else None, metadata=meta
    )
