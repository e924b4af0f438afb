r"""Model-aware corrections: gain targets for users who are not PBM users.

IPS (``targets.ips``) divides a click by a position-only propensity, which is
unbiased only under the position-based model. Two other user models have
their own unbiased corrections:

* **Trust bias** (Agarwal et al. (2019b)): :math:`P(C = 1 \mid d, k) =
  \alpha_k R_d + \beta_k`. The *affine correction* (Vardasbi et al.
  (2020b), Eq. 10-11) :math:`(c - \beta_k)/\alpha_k` has
  expectation :math:`R_d` (:func:`affine`).
* **Cascading users** (DCM, DBN, SDBN, cascade, UBM): the examination of rank
  :math:`k` depends on the clicks above it. Vardasbi et al.
  (2020a) divide a click by the examination probability given the
  clicks above, :math:`P(E_k = 1 \mid A_{<k} = c_{<k})`, which has
  expectation :math:`\alpha_d` (:func:`cascade_ips`).

Which correction fits a log is an empirical question:
:func:`clickrank.clickmodels.compare_click_models` fits the models on
training sessions and ranks them by held-out conditional perplexity; its
``recommend()`` names the correction of the best model (PBM -> ``ips``;
DCM, DBN, SDBN or UBM -> :func:`cascade_ips`; trust bias -> :func:`affine`;
the strict cascade -> :func:`fitted_relevance`, a fitted model's relevance
estimates as gains: under a cascade a document below an attractive one is
never examined, so its clicks cannot be reweighted into an unbiased estimate,
while the model's maximum-likelihood attractiveness is consistent).

Every builder returns a :class:`Target` with per-document gains and the
candidate mask (documents shown at least once, by default), joined to the
data's rows by ``(query, doc)`` like the other gain targets.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, check_choice, check_positive
from ..datasets import RankingData
from ..engine.join import candidate_mask, per_doc, prepare_log, scatter
from ._target import Target

__all__ = ["affine", "cascade_ips", "fitted_relevance", "affine_parameters_of"]


def affine_parameters_of(parameters: Any, K: int) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)``, each ``[K]``, of a trust-bias model, a fitted one or a pair of arrays."""
    if hasattr(parameters, "affine_parameters"):
        alpha, beta = parameters.affine_parameters(K)
    else:
        try:
            alpha, beta = parameters
        except (TypeError, ValueError):
            raise InputError(
                "parameters must be a TrustBias model, a fitted trust model or a "
                f"pair (alpha, beta) of arrays; got {type(parameters).__name__}"
            ) from None
    alpha = np.asarray(alpha, dtype=np.float64).ravel()
    beta = np.asarray(beta, dtype=np.float64).ravel()
    if alpha.size < K or beta.size < K:
        raise InputError(
            f"the affine parameters cover {min(alpha.size, beta.size)} positions; "
            f"the log shows results at position {K}"
        )
    alpha, beta = alpha[:K], beta[:K]
    if not (np.isfinite(alpha).all() and np.isfinite(beta).all()):
        bad = int(np.flatnonzero(~(np.isfinite(alpha) & np.isfinite(beta)))[0]) + 1
        raise InputError(f"affine parameters at position {bad} are not finite (not identified)")
    if np.any(alpha <= 0):
        bad = int(np.flatnonzero(alpha <= 0)[0]) + 1
        raise InputError(
            f"alpha at position {bad} is {alpha[bad - 1]:g}; the affine correction "
            "divides by alpha and needs alpha > 0"
        )
    return alpha, beta


def _non_negative(
    gains: np.ndarray, mask: np.ndarray | None, data: RankingData, negative: str
) -> tuple[np.ndarray, int]:
    """Make gains non-negative: shift each query's candidates by its minimum, or clip at 0."""
    cand = np.ones(gains.size, dtype=bool) if mask is None else mask
    n_neg = int((gains[cand] < 0).sum())
    if negative == "clip":
        return np.maximum(gains, 0.0), n_neg
    q = data.query_index
    low = np.full(data.n_queries, np.inf)
    np.minimum.at(low, q[cand], gains[cand])
    shift = np.where(np.isfinite(low) & (low < 0), -low, 0.0)
    out = gains + shift[q]
    out[~cand] = 0.0
    return out, n_neg


def affine(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    parameters: Any,
    *,
    negative: str = "shift",
    candidates: str = "shown",
) -> Target:
    r"""Affine trust-bias correction (Vardasbi et al. (2020b)).

    .. math::
        G(d) = \sum_{\text{sessions } s} \frac{c_s(d) - \beta_{k_s(d)}}{\alpha_{k_s(d)}}

    where :math:`c_s(d)` is the click on ``d`` in session ``s`` and
    :math:`k_s(d)` its position. Under the trust-bias model
    :math:`P(C = 1 \mid d, k) = \alpha_k R_d + \beta_k` (Agarwal et al. (2019b);
    :math:`\alpha_k = \theta_k(\epsilon^+_k - \epsilon^-_k)`,
    :math:`\beta_k = \theta_k\epsilon^-_k`) every term has expectation
    :math:`R_d`, so :math:`E[G(d)] = n_d R_d` (:math:`n_d` = impressions):
    the gains are unbiased where IPS (:math:`c/\theta`) is not.

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``query``, ``doc``, ``position``, ``click``.
    parameters : TrustBias, fitted trust model or (alpha, beta)
        Anything with ``affine_parameters(K)`` (the simulation model
        :class:`clickrank.clickmodels.TrustBias`, or the result of
        ``fit_click_model(log, "trust")``, whose EM estimates them from the
        clicks), or two arrays ``[K]``.
    negative : {"shift", "clip"}
        The sums can be negative (a document shown often and rarely clicked
        gets :math:`-n_d\beta/\alpha`), but a :class:`Target` holds
        non-negative gains. ``"shift"`` adds to all candidates of a query the
        same amount (minus the query's lowest gain): LambdaRank's pairwise
        terms depend on gain *differences*, so only the per-query
        normalization changes. ``"clip"`` sets negative gains to 0 (biased).
    candidates : {"shown", "all"}
        Candidate set (see :mod:`clickrank.targets`).
    """
    check_choice(negative, ("shift", "clip"), name="negative")
    check_choice(candidates, ("shown", "all"), name="candidates")
    lf, keys = prepare_log(data, log, ("query", "doc", "position", "click"))
    agg = per_doc(
        lf,
        keys,
        [pl.col("click").cast(pl.Int64).sum().alias("clicks"), pl.len().alias("shown")],
        "click log",
        by=("position",),
    ).sort("row", "position")
    pos = agg["position"].to_numpy().astype(np.int64)
    alpha, beta = affine_parameters_of(parameters, int(pos.max()))
    shown = agg["shown"].to_numpy().astype(np.float64)
    value = (agg["clicks"].to_numpy() - shown * beta[pos - 1]) / alpha[pos - 1]
    rows_all = agg["row"].to_numpy()
    raw = np.bincount(rows_all, weights=value, minlength=data.n_docs)
    rows = np.unique(rows_all)
    mask = candidate_mask(data.n_docs, rows, candidates)
    gains, n_neg = _non_negative(raw, mask, data, negative)
    return Target(
        "affine",
        gains=gains,
        candidates=mask,
        metadata={
            "impressions": int(shown.sum()),
            "clicks": int(agg["clicks"].sum()),
            "positions": int(pos.max()),
            "negative": negative,
            "negative_sums": n_neg,
            "alpha": np.round(alpha, 4).tolist(),
            "beta": np.round(beta, 4).tolist(),
            "reference": "Vardasbi, Oosterhuis & de Rijke, CIKM 2020",
        },
    )


def _true_examination(model: Any, sessions: Any, labels: np.ndarray) -> np.ndarray:
    """Examination given the clicks above under a *simulation* model with the true labels."""
    from ..clickmodels import PBM, UBM, CascadeFamily

    shown, c = sessions.shown, sessions.click
    K = sessions.K
    if isinstance(model, CascadeFamily):
        _, sigma, lam, kap = model._parts(labels)
        sig = 0.0 if sigma is None else sigma
        step = np.where(c, lam * (1.0 - sig), kap)
        out = np.ones(c.shape)
        np.cumprod(step[:, :-1], axis=1, out=out[:, 1:])
        return np.where(shown, out, 0.0)
    if isinstance(model, UBM):
        from ..clickmodels.fitting import rank_distance

        r, d = rank_distance(sessions)
        gamma = np.nan_to_num(model.examination_matrix(K))
        return np.where(shown, gamma[r, d - 1], 0.0)
    if isinstance(model, PBM):
        return np.where(shown, model.propensities(K), 0.0)
    raise InputError(
        f"cascade_ips needs a fitted click model or a Cascade, DCM, DBN, SDBN, UBM "
        f"or PBM simulation model; got {type(model).__name__}"
    )


def _check_min_propensity(clip: float | None) -> float | None:
    """``clip`` as a float in (0, 1] or None: the validation step of :func:`cascade_ips`."""
    if clip is not None:
        clip = float(check_positive(clip, name="clip"))
        if clip > 1:
            raise InputError(f"clip is a minimum propensity in (0, 1], got {clip}")
    return clip


def _examination(model: Any, log: pl.DataFrame | pl.LazyFrame, sessions: Any) -> np.ndarray:
    """Each slot's examination probability given the clicks above: the model step of cascade IPS."""
    from ..clickmodels.fitting import FittedClickModel

    if isinstance(model, FittedClickModel):
        rho = model.examination(sessions)
    else:
        lf = log.lazy() if isinstance(log, pl.DataFrame) else log
        if "label" not in lf.collect_schema():
            raise InputError(
                "a simulation model needs the log's true labels (column 'label'); "
                "pass a fitted model (fit_click_model) for a real log"
            )
        lab = lf.group_by("query", "doc").agg(pl.col("label").first()).collect()
        lab = sessions.pairs.join(lab, on=["query", "doc"], how="left")["label"].to_numpy()
        labels = np.where(sessions.shown, lab[np.maximum(sessions.pair, 0)], np.nan)
        rho = _true_examination(model, sessions, labels)
    return rho


def _per_doc_gains(
    data: RankingData,
    sessions: Any,
    pair_gain: np.ndarray,
    pair_shown: np.ndarray,
    pair_clicks: np.ndarray,
) -> pl.DataFrame:
    """The pairs' gains and impressions per document row: the aggregation step of cascade IPS."""
    frame = sessions.pairs.with_columns(
        gain=pl.Series(pair_gain),
        shown=pl.Series(pair_shown),
        click=pl.Series(np.rint(pair_clicks).astype(np.int64)),
    )
    lf2, keys = prepare_log(data, frame, ("query", "doc", "click"))
    agg = per_doc(lf2, keys, [pl.col("gain").sum(), pl.col("shown").sum()], "click log")
    return agg


def _cascade_metadata(
    model: Any,
    rho: np.ndarray,
    c: np.ndarray,
    impossible: np.ndarray,
    w: np.ndarray,
    pair_shown: np.ndarray,
    pair_clicks: np.ndarray,
    clip: float | None,
) -> dict[str, Any]:
    """Model, counts, clipping and reference: the metadata step of :func:`cascade_ips`."""
    name = getattr(model, "name", type(model).__name__.lower())
    lowest = rho[c & ~impossible]
    return {
        "model": name,
        "impressions": int(round(pair_shown.sum())),
        "clicks": int(round(pair_clicks.sum())),
        "clip": clip,
        "impossible_clicks": int(round(float(w[impossible].sum()))),
        "min_propensity": float(lowest.min()) if lowest.size else None,
        "reference": "Vardasbi, de Rijke & Markov, SIGIR 2020",
    }


def cascade_ips(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    model: Any,
    *,
    clip: float | None = None,
    candidates: str = "shown",
) -> Target:
    r"""IPS with cascade-model-based propensities (Vardasbi et al. (2020a)).

    .. math::
        G(d) = \sum_{\text{sessions } s} \frac{c_s(d)}{\max(\rho_s(d), \tau)}, \qquad
        \rho_s(d) = P\bigl(E_{k} = 1 \mid A_{<k} = c_{s,<k}\bigr)
        = \prod_{i<k}\bigl[c_{s,i}\lambda_i(1 - \sigma_{s,i}) + (1 - c_{s,i})\kappa_i\bigr]

    with :math:`k = k_s(d)`: the probability that the user examined the
    position of ``d`` given the clicks above it, under a cascade-family model
    (after a click she goes on with :math:`\lambda_i(1 - \sigma_i)`, after a
    skip with :math:`\kappa_i`: DCM, DBN, SDBN, cascade; the UBM's
    :math:`\gamma_{k, k - k'}` given the last click :math:`k'` above).
    Because :math:`c_i = A_i` for every rank above an examined one,
    :math:`E[c_s(d)/\rho_s(d)] = \alpha_d`: unbiased for the attractiveness
    wherever :math:`P(E_k = 1 \mid A_{<k}) > 0` for every :math:`A`. Under a
    PBM, :math:`\rho = \theta_k` and this is ``targets.ips``. Under the strict
    cascade (:math:`\lambda = 0`) that positivity fails (nothing below an
    attractive document is examined) and the gains reduce to click counts;
    use :func:`fitted_relevance` there.

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``session``, ``query``, ``doc``, ``position``, ``click``
        (and ``label`` when ``model`` is a simulation model).
    model : fitted click model or simulation model
        A :class:`~clickrank.clickmodels.FittedClickModel` (from
        ``fit_click_model``; its :meth:`examination`), or a ``Cascade``,
        ``DCM``, ``DBN``, ``SDBN``, ``UBM`` or ``PBM`` of
        :mod:`clickrank.clickmodels` with the log's true labels (the oracle
        propensities of a simulation).
    clip : float, optional
        Minimum propensity :math:`\tau` (weights at most :math:`1/\tau`).
        Without it, a click the model deems impossible (:math:`\rho = 0`, e.g.
        a second click under the cascade) is left out and counted in
        ``metadata["impossible_clicks"]``.
    candidates : {"shown", "all"}
    """
    from ..clickmodels.fitting import sessions_from_log

    clip = _check_min_propensity(clip)
    check_choice(candidates, ("shown", "all"), name="candidates")
    sessions = sessions_from_log(log)
    rho = _examination(model, log, sessions)
    c = sessions.click & sessions.shown
    if clip is not None:
        rho = np.maximum(rho, clip)
    impossible = c & (rho <= 0)
    w = np.broadcast_to(sessions.weight[:, None], c.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_slot = np.where(c & ~impossible, w / rho, 0.0)
    shown = sessions.shown
    g = sessions.pair[shown]
    G = sessions.n_pairs
    pair_gain = np.bincount(g, weights=per_slot[shown], minlength=G)
    pair_shown = np.bincount(g, weights=w[shown], minlength=G)
    pair_clicks = np.bincount(g, weights=(w * c)[shown], minlength=G)
    agg = _per_doc_gains(data, sessions, pair_gain, pair_shown, pair_clicks)
    rows = agg["row"].to_numpy()
    return Target(
        "cascade-ips",
        gains=scatter(data.n_docs, rows, agg["gain"].to_numpy()),
        candidates=candidate_mask(data.n_docs, rows, candidates),
        metadata=_cascade_metadata(model, rho, c, impossible, w, pair_shown, pair_clicks, clip),
    )


def fitted_relevance(data: RankingData, model: Any, *, candidates: str = "shown") -> Target:
    r"""A fitted click model's relevance estimates as gains.

    The per-(query, doc) relevance of :meth:`FittedClickModel.relevance`
    (attractiveness :math:`\alpha_{qd}`; :math:`\alpha_{qd}\sigma_{qd}` for
    DBN/SDBN, Chapelle & Zhang (2009), §5), one gain per document: the classic
    use of click models as relevance labels. Candidates are the pairs the
    model saw in training (``"shown"``) or all documents (``"all"``, unseen
    ones at gain 0).
    """
    check_choice(candidates, ("shown", "all"), name="candidates")
    rel = model.relevance().filter(pl.col("impressions") > 0)
    frame = rel.with_columns(click=pl.col("clicks").round().cast(pl.Int64))
    lf, keys = prepare_log(data, frame, ("query", "doc", "click"))
    agg = per_doc(lf, keys, [pl.col("relevance").max()], "fitted model")
    rows = agg["row"].to_numpy()
    return Target(
        f"{model.name}-relevance",
        gains=scatter(data.n_docs, rows, np.clip(agg["relevance"].to_numpy(), 0, None)),
        candidates=candidate_mask(data.n_docs, rows, candidates),
        metadata={"model": model.name, "pairs": int(rel.height)},
    )
