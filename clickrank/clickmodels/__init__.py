r"""Click models: from true labels of a displayed list to simulated clicks.

Every model follows the :class:`ClickModel` protocol: ``n_uniforms`` uniform
draws per displayed position, ``click_probabilities(labels)`` (exact marginal
P(click) for a ``[sessions, positions]`` label matrix, NaN = empty slot) and
``sample(labels, u)`` (clicks from uniforms ``u`` of shape
``[sessions, positions, n_uniforms]``, deterministic and vectorized).

Models
    :class:`PBM`, :class:`TrustBias`, :class:`ClickMatrix` (position-only examination),
    :class:`Cascade`, :class:`DCM`, :class:`DBN`, :class:`SDBN` (cascade family, base
    :class:`CascadeFamily`),
    :class:`UBM` (examination depends on the distance to the last click),
    :class:`UserMixture` (a population of user types, one per session).
Populations
    :func:`pbm_population` (log-normal spread of η, click-noise levels),
    :func:`web_search_population` (navigational / economic / exhaustive /
    low-engagement users).
Examination curves
    :class:`PowerLaw`, :class:`EyeTracking`, :class:`Linear`, :class:`Constant`,
    :class:`Explicit`; :func:`power_law`, :func:`eye_tracking`.
Relevance maps
    :class:`Binarized`, :class:`Graded`, :class:`ERRSatisfaction`, :class:`Table`;
    :func:`binarized`, :func:`graded`, :func:`err_satisfaction`, :func:`table`;
    defaults that follow the data's label range: :func:`relevance_for_labels`,
    :func:`default_threshold`.
Factory
    :func:`make_click_model`.
Fitting to click logs (:mod:`clickrank.clickmodels.fitting`)
    :func:`fit_click_model` (PBM, UBM, cascade, DCM, SDBN, DBN, trust bias by
    EM), :func:`compare_click_models` (held-out perplexity, the correction to
    use), :func:`sessions_from_log`.

See ``docs/clickmodels.md`` for the assumptions and defaults of each model.
"""

from __future__ import annotations

from ._cascade import DBN, DCM, SDBN, Cascade, CascadeFamily
from ._curves import (
    EYE_TRACKING_THETA,
    Constant,
    Explicit,
    EyeTracking,
    Linear,
    PowerLaw,
    eye_tracking,
    power_law,
)
from ._factory import CLICK_MODELS, make_click_model
from ._mixture import WEB_SEARCH_WEIGHTS, UserMixture, pbm_population, web_search_population
from ._position import PBM, ClickMatrix, TrustBias, load_click_matrix
from ._relevance import (
    Binarized,
    ERRSatisfaction,
    Graded,
    Table,
    as_relevance_map,
    binarized,
    default_threshold,
    err_satisfaction,
    evaluate_map,
    graded,
    relevance_for_labels,
    table,
)
from ._ubm import UBM, ULTRA_UBM_GAMMA
from .base import ClickModel
from .fitting import (
    FIT_MODELS,
    ClickModelComparison,
    ClickModelEvaluation,
    FittedClickModel,
    compare_click_models,
    fit_click_model,
    sessions_from_log,
)

__all__ = [
    "ClickModel",
    "PBM",
    "TrustBias",
    "ClickMatrix",
    "load_click_matrix",
    "Cascade",
    "DCM",
    "DBN",
    "SDBN",
    "CascadeFamily",
    "UBM",
    "ULTRA_UBM_GAMMA",
    "UserMixture",
    "pbm_population",
    "web_search_population",
    "WEB_SEARCH_WEIGHTS",
    "PowerLaw",
    "EyeTracking",
    "Linear",
    "Constant",
    "Explicit",
    "EYE_TRACKING_THETA",
    "power_law",
    "eye_tracking",
    "Binarized",
    "Graded",
    "ERRSatisfaction",
    "Table",
    "binarized",
    "graded",
    "err_satisfaction",
    "table",
    "default_threshold",
    "relevance_for_labels",
    "as_relevance_map",
    "evaluate_map",
    "make_click_model",
    "CLICK_MODELS",
    "fit_click_model",
    "compare_click_models",
    "sessions_from_log",
    "FittedClickModel",
    "ClickModelEvaluation",
    "ClickModelComparison",
    "FIT_MODELS",
]
