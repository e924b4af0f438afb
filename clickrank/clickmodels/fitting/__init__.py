r"""Fitting click models to click logs, and comparing them on held-out sessions.

* :func:`fit_click_model` fits PBM, UBM, cascade, DCM, SDBN, DBN or a
  two-class trust-bias model by maximum likelihood (EM with closed-form
  M-steps; compiled per-session E-steps for the cascade family) and returns a
  :class:`FittedClickModel` with per-(query, doc) and global parameters,
  standard errors, evaluation (log-likelihood, perplexity, conditional
  perplexity, CTR error), sampling and relevance estimates.
* :func:`compare_click_models` splits a log by session, fits several models
  and ranks them on the test sessions (:class:`ClickModelComparison`), which
  also says which correction the best model calls for.
* :func:`sessions_from_log` reduces a log to its distinct sessions
  (:class:`Sessions`), the input of every fit.

See ``docs/clickmodels.md`` ("Fitting click models to logs").
"""

from __future__ import annotations

from ._base import ClickModelEvaluation, FittedClickModel, PairLookup
from ._cascade import CascadeFamilyFit
from ._compare import (
    CORRECTIONS,
    DEFAULT_MODELS,
    FIT_MODELS,
    ClickModelComparison,
    compare_click_models,
    fit_click_model,
)
from ._position import PBMFit, TrustFit, UBMFit, rank_distance
from ._sessions import Sessions, group_hashes, sessions_from_log

__all__ = [
    "fit_click_model",
    "compare_click_models",
    "sessions_from_log",
    "Sessions",
    "group_hashes",
    "rank_distance",
    "FittedClickModel",
    "PBMFit",
    "UBMFit",
    "TrustFit",
    "CascadeFamilyFit",
    "ClickModelEvaluation",
    "ClickModelComparison",
    "PairLookup",
    "FIT_MODELS",
    "DEFAULT_MODELS",
    "CORRECTIONS",
]
