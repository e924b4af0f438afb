"""The combination of the members: their average, or one selected by the one-SE rule."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import thresholds
from .bounds import Comparison

__all__ = ["average", "member_terms", "select", "selection_reason", "spread"]


def spread(scores: np.ndarray, qptr: np.ndarray) -> float:
    """Root mean square of scores around their query's mean: the scale that ranks.

    Parameters
    ----------
    scores : numpy.ndarray
        One score per document.
    qptr : numpy.ndarray
        The queries' row offsets.

    Returns
    -------
    float
        The spread; 1 for constant scores, which rank nothing whatever their weight.
    """
    from .._core._segments import lengths, segment_ids

    q = segment_ids(qptr)
    mean = np.bincount(q, weights=scores, minlength=qptr.size - 1) / np.maximum(lengths(qptr), 1)
    out = float(np.sqrt(np.mean((scores - mean[q]) ** 2)))
    return out if out > 0 else 1.0


def member_terms(cv: Any, validation: Any, k: int) -> np.ndarray:
    """Per-query scores of a fitted selection's out-of-fold rankings on ``validation``
    (the mean over its repetitions)."""
    return np.mean([validation.per_query(s, k) for s in cv.oof_], axis=0)


def average(named: dict[str, Any], data: Any, val: Any, cmp_val: Any,
            k: int) -> tuple[np.ndarray, np.ndarray, Any]:  # fmt: skip
    """The average of fitted selections, each divided by its spread.

    Parameters
    ----------
    named : dict
        Member name -> fitted :class:`~clickrank.selection.LambdaMARTCV`.
    data : RankingData
        The training queries.
    val, cmp_val : ClickValidation
        The estimate over every document and the one members are compared on.
    k : int
        The cut-off of the estimate.

    Returns
    -------
    terms, terms_all : numpy.ndarray
        Per-query scores of the average's out-of-fold rankings (each repetition's
        out-of-fold scores averaged, each member's divided by its spread) on ``cmp_val``
        and ``val``.
    model : LambdaMART
        One model of the members' models (:meth:`~clickrank.lambdamart.LambdaMART.average`)
        with the same weights on those models' spreads over the training rows, or, above
        :data:`~clickrank.training.thresholds.SPREAD_DOCS` documents, over every k-th
        query's (a scale, which a fifth of 10^6 rows measures to 0.1 %).
    """
    from ..lambdamart import LambdaMART

    cvs = list(named.values())
    runs = [np.mean([cv.oof_[r] / spread(cv.oof_[r], data.qptr) for cv in cvs], axis=0)
            for r in range(len(cvs[0].oof_))]  # fmt: skip
    models = [cv.model_ for cv in cvs]
    step = -(-data.n_docs // thresholds.SPREAD_DOCS)  # every query up to SPREAD_DOCS documents
    sample = data if step == 1 else data.subset(np.arange(0, data.n_queries, step))
    weights = [1 / (len(models) * spread(m.predict(sample.X), sample.qptr)) for m in models]
    return (np.mean([cmp_val.per_query(s, k) for s in runs], axis=0),
            np.mean([val.per_query(s, k) for s in runs], axis=0),
            LambdaMART.average(models, weights, list(named)))  # fmt: skip


def select(eligible: list[str], terms: dict[str, np.ndarray], n_sessions: float,
           tolerance: float, confidence: float,
           prefer: str | None = None) -> tuple[str, str, str]:  # fmt: skip
    """The candidate ``prefer`` (the average) when eligible, else the one-SE selection.

    Parameters
    ----------
    eligible : list of str
        The candidates in safety order (earlier: simpler, safer).
    terms : dict
        Candidate -> its per-query scores.
    n_sessions : float
        The sessions (a score is a sum of terms per session).
    tolerance : float
        The best candidate is selected only when it beats every safer one by more than
        this many paired standard errors; else the first one it does not.
    confidence : float
        The level of the paired comparisons.
    prefer : str, optional
        The candidate taken when eligible.

    Returns
    -------
    selected : str
    best : str
        The candidate with the best score.
    best_member : str
        The best one but ``prefer`` (what the rule takes at tolerance 0).
    """
    scores = {m: terms[m].sum() / n_sessions for m in eligible}
    best = max(eligible, key=lambda m: scores[m])
    best_member = max((m for m in eligible if m != prefer), key=lambda m: scores[m],
                      default=best)  # fmt: skip
    selected = prefer if prefer in eligible else best
    for m in eligible if selected == best else ():  # the first (safest) member the best
        if m == best:  # does not clearly beat
            break
        c = Comparison.of(best, m, terms[best], terms[m], n_sessions, confidence)
        if c.gain <= tolerance * c.se:
            selected = m
            break
    return selected, best, best_member


def selection_reason(candidates: list[str], selected: str, best: str, prefer: str | None,
                     averaged: list[str], excluded: dict[str, float],
                     tolerance: float) -> str:  # fmt: skip
    """Why ``selected`` was selected, in one line (:func:`select`'s outcome; ``averaged``:
    the members of ``prefer``, the average; ``excluded``: those the unseen guard left out)."""
    left_out = f" ({', '.join(excluded)} excluded by the unseen guard)" if excluded else ""
    if len(candidates) == 1:
        return f"{selected}: the one target asked for"
    if selected == prefer:
        return f"the {prefer} of {', '.join(averaged)}" + left_out
    if selected == best:
        return f"{selected} has the best counterfactual score" + left_out
    return f"{selected}: within {tolerance:g} SE of the best ({best}), and safer"
