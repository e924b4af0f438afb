r"""Per-document gain targets (listwise LambdaRank): oracle labels, naive clicks and IPS."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, check_choice
from ..datasets import RankingData
from ._stats import ClickStats, click_stats
from ._target import Target

__all__ = [
    "oracle", "naive", "ips", "CANDIDATE_SETS", "NORMALIZATIONS", "apply_candidates",
    "never_shown_weight", "auto_candidates", "AUTO_HYBRID_BELOW",
]  # fmt: skip

#: Candidate sets of the click-based gain targets.
CANDIDATE_SETS = ("auto", "shown", "all", "hybrid")

#: ``candidates="auto"`` takes the hybrid when fewer than this share of the data's
#: documents were ever shown (docs/lambdamart.md, "Candidate sets", has the measurements).
AUTO_HYBRID_BELOW = 0.2
#: Normalisations of the IPS gains.
NORMALIZATIONS = ("none", "exposure", "query")


def oracle(data: RankingData) -> Target:
    r"""Oracle target: the true graded labels as exponential gains :math:`2^y - 1`.

    The skyline of every debiasing comparison (DESIGN §3, LambdaMART).
    Every document is a candidate.
    """
    if data.y is None:
        raise InputError(f"data {data.name!r} has no labels; the oracle target needs them")
    y = np.asarray(data.y, dtype=np.float64)
    if np.any(y < 0):
        raise InputError("labels must be non-negative for exponential gains 2^y - 1")
    return Target("oracle", gains=np.exp2(y) - 1.0, metadata={"gain": "2^y - 1"})


def naive(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame | None,
    *,
    kind: str = "clicks",
    candidates: str = "auto",
    hybrid_weight: float | str = "auto",
    stats: ClickStats | None = None,
) -> Target:
    r"""Naive click target: click counts (or click-through rates) as gains.

    :math:`G(d) = \sum_{\text{sessions}} c(d)` (``kind="clicks"``) or
    :math:`G(d) = \sum c(d) / \#\text{shown}(d)` (``kind="ctr"``), summed over
    the sessions of the document's query. Biased by position: documents the
    logging ranker put on top collect clicks because they were examined
    (Joachims et al. (2005)).

    Parameters
    ----------
    data : RankingData
        The documents; ``(query, doc)`` of the log must be among its rows.
    log : polars DataFrame or LazyFrame
        Click log (``session``, ``query``, ``doc``, ``position``, ``click``);
        may be None when ``stats`` is given.
    kind : {"clicks", "ctr"}
    candidates : {"shown", "all", "hybrid", "auto"}
        Candidate set (:func:`apply_candidates`).
    hybrid_weight : float or "auto"
    stats : ClickStats, optional
        Precomputed :func:`clickrank.targets.click_stats`.
    """
    check_choice(kind, ("clicks", "ctr"), name="kind")
    if stats is None:
        stats = click_stats(data, log)
    imp = stats.impressions
    value = (stats.clicks if kind == "clicks"
             else np.divide(stats.clicks, imp, out=np.zeros_like(imp), where=imp > 0))  # fmt: skip
    meta = {"kind": kind, "impressions": int(imp.sum()), "clicks": int(stats.clicks.sum())}
    return apply_candidates("naive", value, stats, candidates, hybrid_weight, meta)


def never_shown_weight(stats: ClickStats) -> np.ndarray:
    r"""Per query, the share of its documents the logger never showed, :math:`1 - k_q/n_q`.

    The weight of never-shown documents as negatives under
    ``candidates="hybrid"``: the further below the cut-off the average
    never-shown document of a query sits, the stronger the logger's choice is as
    evidence against it. A document left out of a top 10 of 150 weighs 0.93, one
    left out of a top 10 of 12 weighs 0.17, so the hybrid moves from
    ``"shown"`` (short lists) towards ``"all"`` (long lists). Returns float64
    ``[n_queries]`` in [0, 1].
    """
    q = stats.query_index
    nq = int(q.max()) + 1 if q.size else 0
    n = np.bincount(q, minlength=nq).astype(np.float64)
    never = np.bincount(q, weights=(~stats.shown).astype(np.float64), minlength=nq)
    return np.divide(never, n, out=np.zeros(nq), where=n > 0)


def auto_candidates(stats: ClickStats) -> str:
    """The candidate set ``"auto"`` stands for: ``"hybrid"`` if fewer than
    :data:`AUTO_HYBRID_BELOW` of the documents were shown, else ``"shown"``."""
    return "hybrid" if stats.shown_fraction < AUTO_HYBRID_BELOW else "shown"


def apply_candidates(
    name: str,
    gains: np.ndarray,
    stats: ClickStats,
    candidates: str,
    hybrid_weight: float | str,
    metadata: dict[str, Any],
) -> Target:
    r"""A gains :class:`Target` whose never-shown documents follow ``candidates``.

    ``"shown"``: only documents shown at least once take part (the unbiased
    choice: a never-shown document has :math:`\theta = 0`). ``"auto"``:
    :func:`auto_candidates` (``"hybrid"`` for long lists of which the logger
    showed a small share, else ``"shown"``). ``"all"``: never-shown
    documents take part with gain 0, which re-learns the logging ranker's
    cut-off (item-selection bias, Ovaisi et al. (2020)). ``"hybrid"``: they take
    part as *weak negatives*: gain equal to the smallest gain among the query's
    shown documents (a document the logger did not show is assumed no more
    relevant than the least-clicked one it showed), and every pair that involves
    one counts ``hybrid_weight`` times (:func:`clickrank.lambdas.lambdas`,
    ``doc_weights``). ``hybrid_weight="auto"`` is, per query, the share of its
    documents that were never shown (:func:`never_shown_weight`). No click
    reveals anything about a never-shown document, so the hybrid rests on an
    assumption (the logger's cut-off is evidence) where ``"shown"`` rests on
    none; docs/target-benchmarks.md measures both.
    """
    check_choice(candidates, CANDIDATE_SETS, name="candidates")
    shown = stats.shown
    meta = {**metadata, "shown_fraction": round(stats.shown_fraction, 4)}
    if candidates == "auto":
        candidates = auto_candidates(stats)
        meta["candidates_rule"] = (
            f"auto: {stats.shown_fraction:.1%} of the documents shown "
            f"({'<' if candidates == 'hybrid' else '>='} "
            f"{AUTO_HYBRID_BELOW:.0%}) -> {candidates}"
        )
    meta["candidates"] = candidates
    if candidates == "shown":
        return Target(name, gains=gains, candidates=shown, metadata=meta)
    if candidates == "all":
        return Target(name, gains=np.where(shown, gains, 0.0), metadata=meta)
    q = stats.query_index
    nq = int(q.max()) + 1 if q.size else 0
    floor = np.full(nq, np.inf)
    np.minimum.at(floor, q[shown], gains[shown])
    floor[~np.isfinite(floor)] = 0.0
    hybrid_gains = np.where(shown, gains, floor[q])
    if hybrid_weight == "auto":
        w_query = never_shown_weight(stats)
        w_never = w_query[q]
        meta["hybrid_weight_mean"] = round(float(w_query.mean()), 4) if nq else None
    else:
        w = float(hybrid_weight)
        if not 0.0 <= w <= 1.0:
            raise InputError(f"hybrid_weight must be 'auto' or in [0, 1], got {hybrid_weight!r}")
        w_never = np.full(gains.shape[0], w)
    doc_weights = np.where(shown, 1.0, w_never)
    meta["hybrid_weight"] = hybrid_weight
    return Target(name, gains=hybrid_gains, doc_weights=doc_weights, metadata=meta)


def _ips_gains(data: RankingData, stats: ClickStats, normalize: str) -> np.ndarray:
    """Per-document IPS gains under ``normalize``: the gains step of :func:`ips`."""
    if normalize == "exposure":
        gains = stats.sessions * stats.ratio()
    else:
        gains = stats.ips.copy()
        if normalize == "query":
            q = data.query_index
            total = np.bincount(q, weights=gains, minlength=data.n_queries)[q]
            gains = np.divide(gains, total, out=np.zeros_like(gains), where=total > 0)
    return gains


def ips(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame | None,
    propensities: Any,
    *,
    clip: float | str | None = "auto",
    normalize: str = "none",
    candidates: str = "auto",
    hybrid_weight: float | str = "auto",
    stats: ClickStats | None = None,
) -> Target:
    r"""Inverse-propensity-scored click gains (Joachims et al. (2017), Eq. 5).

    .. math::
        G(d) = \sum_{\text{sessions } s} \frac{c_s(d)}{\max(\theta_{p_s(d)}, \tau)}

    where :math:`c_s(d)` is the click on ``d`` in session ``s``,
    :math:`p_s(d)` its position and :math:`\tau` = ``clip``. Summed over a
    query's sessions, the IPS estimate of a ranking's DCG-like utility is a
    listwise metric with these per-document gains, so IPS-LambdaMART is
    LambdaMART with them (linear gain). Under the position-based model the
    expectation of :math:`G(d)` is :math:`\gamma(d)` times the number of
    sessions that showed ``d``: unbiased over the documents with
    :math:`\theta > 0`, hence the default candidate set ``"shown"``.

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``session``, ``query``, ``doc``, ``position`` (1-based),
        ``click``. May be None when ``stats`` is given.
    propensities : array-like or object with ``.theta``
        ``theta[p - 1]`` for positions ``1..K``; every position in the log
        must be covered and every value must be > 0.
    clip : float, "auto" or None
        Propensity clipping :math:`\tau` (Strehl et al. (2010); Joachims et al. (2017)
        §6): weights are at most :math:`1/\tau`. ``"auto"`` (default):
        :math:`\tau = \min(10/\sqrt{N}, 1)` for a log of :math:`N` sessions
        (:func:`clickrank.targets.auto_clip`), negligible for large logs and
        strong for small ones. None: no clipping (unbiased, most variance).
    normalize : {"none", "exposure", "query"}
        ``"none"``: :math:`G(d)` as above. ``"exposure"``: per-impression
        normalisation :math:`N_q C(d)/E(d)`, the click count over the
        document's summed propensities :math:`E(d) = \sum_s \theta_{p_s(d)}`
        times the query's sessions :math:`N_q`: the policy-aware estimator with
        the empirical expected exposure (Oosterhuis & de Rijke (2020)),
        unbiased for a stochastic logger and lower in variance when a document
        is shown at several positions. ``"query"``: self-normalised, each
        query's gains divided by their sum (Swaminathan & Joachims (2015)).
    candidates : {"auto", "shown", "all", "hybrid"}
        Which documents take part (:func:`apply_candidates`).
    hybrid_weight : float or "auto"
        Weight of never-shown documents' pairs with ``candidates="hybrid"``.
    stats : ClickStats, optional
        Precomputed :func:`clickrank.targets.click_stats` (then ``log`` and
        ``propensities`` are not read; pass clipped statistics,
        :meth:`ClickStats.clipped`, to clip).
    """
    check_choice(normalize, NORMALIZATIONS, name="normalize")
    if stats is None:
        stats = click_stats(data, log, propensities, clip=clip)
    if stats.theta is None:
        raise InputError("IPS gains need propensities")
    gains = _ips_gains(data, stats, normalize)
    return apply_candidates(
        "ips",
        gains,
        stats,
        candidates,
        hybrid_weight,
        {
            "impressions": int(stats.impressions.sum()),
            "clicks": int(stats.clicks.sum()),
            "positions": len(stats.theta),
            "clip": stats.clip,
            "normalize": normalize,
            "min_theta": float(stats.theta.min()),
        },
    )
