"""The fallbacks when no candidate is shown to beat the logging ranker.

``"crm"`` (the default) and ``"proximal"`` retrain the selected member (for the average,
every averaged member, then their average) near the logger's rankings, with CRM's
penalty (Gupta et al. (2023)) or PRPO's clipping (Gupta et al. (2024)); ``"safe"`` keeps
the logging ranker itself (nothing to retrain: :func:`retrained_fallback` is not called).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .bounds import Comparison
from .combine import average, member_terms
from .deployment import risk_weight
from .members import AVERAGE

__all__ = ["Fallback", "fallback_training", "retrained_fallback"]


def fallback_training(kind: str, eps: float, n_sessions: float,
                      confidence: float) -> tuple[str, dict[str, float], str]:  # fmt: skip
    """How the fallback retrains: its tag, the :class:`~clickrank.lambdamart.LambdaMART`
    parameter (``proximal`` or ``risk``) and a phrase saying it.

    Parameters
    ----------
    kind : {"crm", "proximal"}
        CRM's exposure penalty (:func:`~clickrank.training.deployment.risk_weight` of the sessions
        at ``confidence``) or PRPO's clipping ``eps``.
    eps, n_sessions, confidence : float
    """
    if kind == "proximal":
        said = (f"PRPO (eps {eps:g}) around the logging ranker: its exposures stay within "
                "that factor of the logger's")  # fmt: skip
        return "prpo", {"proximal": float(eps)}, said
    alpha = risk_weight(n_sessions, float(confidence))
    said = (f"exposure-based CRM (alpha {alpha:.3g} for {n_sessions:g} sessions "
            f"at {confidence:.0%}) around the logging ranker: its exposures "
            "are pulled towards the logger's as far as the clicks cannot vouch "
            "for them")  # fmt: skip
    return "crm", {"risk": alpha}, said


@dataclass
class Fallback:
    """The retrained fallback offered.

    Attributes
    ----------
    name : str
        ``"<member>+<tag>"`` (``"average+crm"``, ``"ips-shown+prpo"``, ...).
    selections : dict
        ``"<member>+<tag>"`` -> each retrained member's fitted
        :class:`~clickrank.selection.LambdaMARTCV`.
    terms : numpy.ndarray
        Its per-query scores on the compared estimate.
    terms_all : numpy.ndarray or None
        Over every document (the average's).
    model : LambdaMART
        The offered model.
    vs_safe : Comparison
        Its comparison with the logging ranker.
    reason : str
        What the reason gains.
    """

    name: str
    selections: dict[str, Any]
    terms: np.ndarray
    terms_all: np.ndarray | None
    model: Any
    vs_safe: Comparison
    reason: str


def retrained_fallback(selected: str, averaged: list[str], members: dict[str, Any],
                       fit: Callable[..., dict[str, Any]], data: Any, val: Any,
                       cmp_val: Any, *, kind: str, eps: float, confidence: float, k: int,
                       keep: Any, logging_terms: np.ndarray,
                       say: Callable) -> Fallback:  # fmt: skip
    """The selected candidate retrained near the logger's rankings.

    Parameters
    ----------
    selected : str
        The candidate the rule selected (a member, or the average of ``averaged``).
    members : dict
        Member -> its fitted selection; each retrained member keeps its tree shape (the
        penalty moves the trees, not what the data can carry), so only its number of
        trees is chosen again.
    fit : callable
        ``fit(names, shapes, **how)`` -> name -> the fitted selection of each member
        retrained with ``how`` (``proximal`` or ``risk``), each on its one ``shape``.
    data, val, cmp_val
        The training queries and the estimates (every document, compared).
    kind, eps, confidence
        :func:`fallback_training`.
    k : int
        The estimate's cut-off.
    keep, logging_terms
        The queries of the comparison with the logging ranker and its per-query scores.
    say : callable
        Hears a line per retrained member.
    """
    tag, how, said = fallback_training(kind, eps, val.n_sessions, confidence)
    names = averaged if selected == AVERAGE else [selected]
    shapes = {m: {p: v for p, v in members[m].best_params_.items() if p != "n_estimators"}
              for m in names}  # fmt: skip
    fitted = fit(names, shapes, **how)
    retrained = {}
    for m in names:
        cv = retrained[f"{m}+{tag}"] = fitted[m]
        say(f"  {m}+{tag}: the fallback, {cv.best_params_}")
    name, terms_all = f"{selected}+{tag}", None
    if selected == AVERAGE:
        terms, terms_all, model = average(retrained, data, val, cmp_val, k)
    else:
        (cv,) = retrained.values()
        terms, model = member_terms(cv, cmp_val, k), cv.model_
    vs_safe = Comparison.of(name, "logging", terms[keep], logging_terms[keep], val.n_sessions,
                            float(confidence))  # fmt: skip
    what = f"the {AVERAGE} of its members" if selected == AVERAGE else selected
    return Fallback(name, retrained, terms, terms_all, model, vs_safe,
                    f"; offering {what} retrained with {said}")  # fmt: skip
