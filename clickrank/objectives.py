r"""The objectives LambdaMART hands LightGBM: clickrank's lambdas as gradients and Newton weights.

:func:`lambdamart_objective` builds LightGBM's callable objective for a fit of
:class:`~clickrank.lambdamart.LambdaMART`: the target's lambdas (listwise gains, pairwise
preferences, or Unbiased LambdaMART's session lists with the position biases re-estimated
every round; Burges (2010), Hu et al. (2019)), and around them PRPO's clipping and the
exposure-based CRM penalty when the fit is bounded by a safe ranker
(:mod:`clickrank.training.deployment`; Gupta, Oosterhuis & de Rijke (2024, 2023)). The model's
``position_bias_`` (session lists) and ``divergence_`` (CRM) are updated as the rounds run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core._threads import fit_threads
from ._core._validation import InputError
from .lambdas import SessionStep, lambda_objective, pair_lambdas, position_bias_update
from .targets import SessionLists
from .training.deployment import RiskPenalty, exposure, proximal_mask

__all__ = ["lambdamart_objective"]


def lambdamart_objective(model: Any, qptr: np.ndarray, gains, pairs, pair_weights,
                         doc_weights=None, reference=None):  # fmt: skip
    """LightGBM's objective for ``model`` (a :class:`~clickrank.lambdamart.LambdaMART`):
    the target's, with PRPO's clipping (``proximal``) and CRM's penalty
    (``risk``) around the ``reference`` rankings when they are set."""
    fobj = _target_objective(model, qptr, gains, pairs, pair_weights, doc_weights)
    if reference is None or (model.proximal is None and model.risk is None):
        return fobj
    ref = np.asarray(reference, dtype=np.float64)
    eps = None if model.proximal is None else float(model.proximal)
    ref_exposure = None if eps is None else exposure(ref, qptr)
    penalty = None
    if model.risk is not None:
        penalty = RiskPenalty(ref, qptr, alpha=float(model.risk), sigma=float(model.sigma),
                              truncation=model.truncation_level,
                              n_threads=fit_threads(int(model.n_jobs)))  # fmt: skip

    def safe_fobj(preds, dataset):
        grad, hess = fobj(preds, dataset)
        forces, hess = -grad.astype(np.float64), hess.astype(np.float64)
        if penalty is not None:
            model.divergence_.append(penalty.add(preds, forces, hess))
        if eps is not None:
            forces[~proximal_mask(forces, exposure(preds, qptr), ref_exposure, eps)] = 0.0
        return -forces, hess

    return safe_fobj


def _target_objective(model, qptr: np.ndarray, gains, pairs, pair_weights, doc_weights=None):
    """LightGBM's callable objective for the target kind (its rows restricted to the
    candidates).

    Gains: :func:`~clickrank.lambdas.lambdas` (with ``doc_weights``); pairs:
    :func:`~clickrank.lambdas.pair_lambdas`; session lists (in the ``pairs``
    slot): :func:`_session_objective`. Sets ``position_bias_`` (None unless
    session lists).
    """
    trunc = None if model.truncation_level is None else int(model.truncation_level)
    sigma = float(model.sigma)
    norm = bool(model.normalize)
    weighting = model.weighting
    threads = fit_threads(int(model.n_jobs))

    if gains is not None:
        fobj = lambda_objective(gains, qptr, sigma=sigma, weighting=weighting,
                                truncation=trunc, normalize=norm, doc_weights=doc_weights,
                                n_threads=threads)  # fmt: skip

    elif isinstance(pairs, SessionLists):
        return _session_objective(model, pairs)
    else:

        def fobj(preds, _dataset):
            lam = pair_lambdas(
                preds, pairs, qptr, pair_weights=pair_weights, sigma=sigma,
                weighting=weighting, truncation=trunc, normalize=norm,
            )  # fmt: skip
            return -lam.forces, lam.weights

    model.position_bias_ = None
    return fobj


def _session_objective(model, sessions: SessionLists):
    """Unbiased LambdaMART's objective: gradients with the biases of the previous round.

    The state (:math:`t^+`, :math:`t^-`, ones at first) lives in the
    closure; after every round the biases are recomputed from that
    round's costs (:func:`~clickrank.lambdas.position_bias_update`) and
    the latest are the model's ``position_bias_`` (XGBoost's ``lambdarank_unbiased``).
    """
    trunc = None if model.truncation_level is None else int(model.truncation_level)
    sigma, norm = float(model.sigma), bool(model.normalize)
    if model.weighting != "ndcg":
        raise InputError(
            "the unbiased-lambdamart target needs weighting='ndcg' "
            "(its pairs are LambdaRank-weighted)"
        )
    k = sessions.n_positions
    t_plus, t_minus = np.ones(k), np.ones(k)
    model.position_bias_ = {"t_plus": t_plus, "t_minus": t_minus}

    step = None  # the sessions checked once (SessionStep), at the first round

    def fobj(preds, _dataset):
        nonlocal t_plus, t_minus, step
        if step is None:
            step = SessionStep(
                sessions.rows, sessions.sptr, sessions.positions, sessions.clicks,
                sessions.counts, n_rows=len(preds), sigma=sigma, truncation=trunc,
                normalize=norm, cost=sessions.cost, n_threads=fit_threads(int(model.n_jobs)),
            )  # fmt: skip
        lam = step(preds, t_plus, t_minus)
        t_plus, t_minus = position_bias_update(
            lam.li, lam.lj, bias_norm=sessions.bias_norm, block=sessions.context_block
        )
        model.position_bias_ = {"t_plus": t_plus, "t_minus": t_minus}  # the latest estimate
        return -lam.forces, lam.weights

    return fobj
