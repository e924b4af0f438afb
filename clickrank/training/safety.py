"""The unseen guard and the high-confidence check against the safe ranker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bounds import Comparison, paired_bound

__all__ = ["SafetyCheck", "check_safety", "guard_race", "unseen_guard"]


def unseen_guard(every: dict[str, np.ndarray], family: list[str],
                 guard: float | None) -> dict[str, float]:  # fmt: skip
    """Members that give more than ``guard`` of the best member's all-documents score to
    documents the log never showed.

    Parameters
    ----------
    every : dict
        Member -> its per-query scores over every document (never-shown ones as
        irrelevant: a pessimistic estimate).
    family : list of str
        The members compared.
    guard : float or None
        The relative loss beyond which a member is excluded (None: no guard).

    Returns
    -------
    dict
        Excluded member -> its relative loss to the best (empty without the scores of
        every member, or when the best scores nothing).
    """
    if guard is None or not all(m in every for m in family):
        return {}
    total = {m: float(every[m].sum()) for m in family}
    top = max(total.values())
    if top <= 0:
        return {}
    return {m: 1 - v / top for m, v in total.items() if v < (1 - guard) * top}


def guard_race(terms: dict[str, np.ndarray], guard: float,
               confidence: float) -> dict[str, float]:  # fmt: skip
    r"""The unseen guard after one fold: the members a paired bound already shows beyond it.

    Parameters
    ----------
    terms : dict
        Member -> its first fold's per-query held-out scores over every document.
    guard : float
        The unseen guard's relative loss.
    confidence : float
        Level of the one-sided bound (:func:`~clickrank.training.bounds.paired_bound`)
        of :math:`(1 - \text{guard})\, t_q(\text{best}) - t_q(m)` over the fold's queries.

    Returns
    -------
    dict
        Member whose bound is above zero -> its relative loss to the best on that fold
        (none under three queries, or when the best scores nothing). A member near the
        line fits every fold and meets the guard at the end.
    """
    total = {m: float(v.sum()) for m, v in terms.items()}
    top = max(total, key=lambda m: total[m])
    if total[top] <= 0 or terms[top].size < 3:
        return {}
    out = {}
    for m, v in terms.items():
        if paired_bound((1 - float(guard)) * terms[top] - v, confidence).lower > 0:
            out[m] = 1 - total[m] / total[top]
    return out


@dataclass
class SafetyCheck:
    """The offered candidate after the check against the safe ranker, and why.

    Attributes
    ----------
    choice : str
        The offered candidate (the safe ranker's name when it is kept).
    reason : str
        The choice in one line.
    vs_safe : dict
        Candidate -> its :class:`~clickrank.training.bounds.Comparison` with the safe
        ranker.
    record : dict
        ``safe`` (its name), ``vs_logged``, ``vs_naive`` and ``vs_safe``: the offered
        candidate's comparisons (None where they do not apply).
    """

    choice: str
    reason: str
    vs_safe: dict[str, Comparison] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)


def check_safety(candidates: list[str], eligible: list[str], terms: dict[str, np.ndarray],
                 selected: str, reason: str, safe_name: str, safe_terms: np.ndarray | None,
                 logged: np.ndarray, n_sessions: float, *, confidence: float, safe: bool,
                 prefer: str | None = None, keep: Any = None) -> SafetyCheck:  # fmt: skip
    """Offer ``selected`` only when its one-sided ``confidence`` bound of gain over the safe
    ranker is above zero.

    Parameters
    ----------
    candidates, eligible : list of str
        Every candidate, and those the unseen guard left.
    terms : dict
        Candidate -> its per-query scores.
    selected, reason : str
        The selected candidate and why.
    safe_name : str
        The safe ranker (``"logging"`` or ``"naive"``), with its per-query scores
        ``safe_terms`` (None: no check).
    logged : numpy.ndarray
        The per-query scores of the ranking in the log.
    n_sessions : float
        The sessions.
    confidence : float
        Level of the bounds.
    safe : bool
        Whether the check may replace ``selected``: by the best member shown to beat the
        safe ranker (not for ``prefer``, the average: switching to whichever member
        clears the bound would be the best of several tests, optimistic by the winner's
        curse), else by the safe ranker.
    keep : array of bool, optional
        The queries of the comparison with the logging ranker (its own training queries
        left out).
    """
    if keep is None or safe_name != "logging" or keep.size != safe_terms.size:
        keep = slice(None)
    vs_safe = {}
    if safe_terms is not None:
        vs_safe = {m: Comparison.of(m, safe_name, terms[m][keep], safe_terms[keep], n_sessions,
                                    confidence)
                   for m in candidates if m != safe_name}  # fmt: skip
    choice = selected
    if safe and selected in vs_safe and vs_safe[selected].lower <= 0:
        sure = [] if selected == prefer else [
            m for m in eligible if m in vs_safe and vs_safe[m].lower > 0]  # fmt: skip
        if sure:
            choice = max(sure, key=lambda m: terms[m].sum() / n_sessions)
            reason = (f"{selected} is not shown to beat {safe_name} at {confidence:.0%}; "
                      f"{choice} is (bound {vs_safe[choice].lower:+.3g})")  # fmt: skip
        else:
            choice = safe_name
            reason = (f"no candidate is shown to beat {safe_name} at {confidence:.0%} "
                      f"(best bound {max(c.lower for c in vs_safe.values()):+.3g}): "
                      f"{safe_name} kept")  # fmt: skip
    offered = terms.get(choice, safe_terms if choice == safe_name else None)
    record = {
        "safe": safe_name,
        "vs_logged": Comparison.of(choice, "logged ranking", offered, logged, n_sessions,
                                   confidence),
        "vs_naive": (Comparison.of(choice, "naive", offered, terms["naive"], n_sessions,
                                   confidence)
                     if "naive" in terms and choice != "naive" else None),
        "vs_safe": (Comparison.of(choice, safe_name, offered[keep], safe_terms[keep],
                                  n_sessions, confidence)
                    if safe_terms is not None and choice != safe_name else None),
    }  # fmt: skip
    return SafetyCheck(choice, reason, vs_safe, record)
