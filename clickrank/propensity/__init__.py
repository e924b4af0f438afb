"""Propensity (position-bias) estimation from click logs, with confidence intervals.

Estimators (each takes a click log, polars DataFrame/LazyFrame or parquet
path, and returns :class:`Propensities`):

====================  ================================================  ===========================
method                design needed in the log                          interval
====================  ================================================  ===========================
``swap``              rank-1 <-> rank-k swaps (Joachims et al. (2017))  score, ratio of rates
``randpair``          RandPair swaps, pivot 1 (Wang et al. (2018))      score, ratio of rates
``randomized``        shuffled top k (RandTop-k; Wang et al. (2016))    delta method, session cov.
``harvest-pivot``     (q, d) at several ranks (Agarwal et al. (2019a))  jackknife over (q, d), t
``harvest-adjacent``  same                                              jackknife over (q, d), t
``harvest-allpairs``  same                                              jackknife over (q, d), t
``em``                same, no interventions (Wang et al. (2018))       session bootstrap
``regression-em``     features (``data=``), no interventions (Wang      query bootstrap
                      et al. (2018), §4); θ identified by a model
``auto``              whatever the log holds (:func:`choose_source`)    the chosen estimator's
====================  ================================================  ===========================

:func:`estimate_propensities` dispatches by name; :func:`bootstrap` gives a
session-level bootstrap interval for any of them. See ``docs/propensity.md``.
"""

from __future__ import annotations

from typing import Any

from .._core._validation import InputError, check_choice
from ._auto import PropensitySource, auto, choose_source, source_and_cells
from ._bootstrap import bootstrap
from ._context import CONTEXT_METHODS, by_context, check_context
from ._context_model import by_features, check_features
from ._context_result import ContextCurves, ContextModel
from ._em import em, em_from_cells
from ._harvest import (
    cell_statistics,
    harvest,
    harvest_adjacent,
    harvest_allpairs,
    harvest_from_cells,
    harvest_pivot,
)
from ._randomized import randomized, randomized_from_counts, randomized_statistics
from ._registry import ESTIMATORS, _Spec
from ._regression_em import regression_em
from ._result import Propensities
from ._stats import as_lazy, identified
from ._swap import pair_from_counts, pair_statistics, randpair, swap

__all__ = [
    "Propensities",
    "ContextCurves",
    "ContextModel",
    "CONTEXT_METHODS",
    "check_context",
    "check_features",
    "estimate_propensities",
    "bootstrap",
    "swap",
    "randpair",
    "randomized",
    "harvest",
    "harvest_pivot",
    "harvest_adjacent",
    "harvest_allpairs",
    "em",
    "regression_em",
    "auto",
    "choose_source",
    "identified",
    "source_and_cells",
    "PropensitySource",
    "METHODS",
    "ESTIMATORS",
]


ESTIMATORS.update(
    {
        "swap": _Spec(swap, pair_statistics, pair_from_counts, {"design": "swap"}),
        "randpair": _Spec(randpair, pair_statistics, pair_from_counts, {"design": "randpair"}),
        "randomized": _Spec(randomized, randomized_statistics, randomized_from_counts),
        "harvest-allpairs": _Spec(
            harvest_allpairs, cell_statistics, harvest_from_cells, {"estimator": "allpairs"}
        ),
        "harvest-pivot": _Spec(
            harvest_pivot, cell_statistics, harvest_from_cells, {"estimator": "pivot"}
        ),
        "harvest-adjacent": _Spec(
            harvest_adjacent, cell_statistics, harvest_from_cells, {"estimator": "adjacent"}
        ),
        "em": _Spec(em, cell_statistics, em_from_cells),
    }
)

#: Method names accepted by :func:`estimate_propensities` and the CLI (the last two take
#: the documents' features, ``data=``, and are not session-bootstrapped).
METHODS = (*ESTIMATORS, "regression-em", "auto")


def estimate_propensities(
    log: Any,
    method: str = "swap",
    *,
    context: Any = None,
    context_features: Any = None,
    **kw: Any,
) -> Propensities:
    """Estimate position bias from a click log with the named ``method``.

    ``method="auto"`` picks the estimator from what the log holds (randomized
    interventions, else documents at several positions, else a relevance model
    of ``data``'s features; :func:`choose_source`) and records why in
    ``info["source"]``.

    Parameters
    ----------
    log : polars DataFrame, LazyFrame, parquet path or Spark DataFrame
        The click log (DESIGN §2); a Spark DataFrame is aggregated on Spark
        (:mod:`clickrank.engine`), the fit runs here.
    method : str
        One of :data:`METHODS`.
    context : str or list of str, optional
        Context columns of the log (``"device"``, ``["device", "layout"]``): the
        result also holds the curve of every context (each combination of values),
        shrunk toward the common curve by an empirical-Bayes prior, and a Wald test
        of whether one curve is enough (``result.contexts``, a :class:`ContextCurves`;
        the prior, the shrinkage and the test are stated in
        :mod:`clickrank.propensity._context`). Every method gives them (``auto`` for the
        source it chooses); each context's curve is the method on that context's
        sessions, with the method's own intervals. ``theta`` stays the pooled curve,
        the same numbers as without ``context``.
    context_features : str or list of str, optional
        Numeric columns describing each session's context, for a context with too many
        values for a curve each (a query class, a page template, joined to the log with
        its features): θ is modelled as log-linear in them (Fang, Agarwal & Joachims
        (2019); the model in :mod:`clickrank.propensity._context_model`), with intervals
        and the Wald test of no feature effect (``result.contexts``, a
        :class:`ContextModel`). Where the pooled curve is EM's (``method="em"``, or
        ``"auto"`` where documents moved) the model is fitted by EM's likelihood; with
        any other method (``"regression-em"`` on a log whose documents each stay at one
        position, ``"swap"``, ``"auto"`` on a log with randomized interventions, ...) its
        level is that method's pooled curve and its slopes come from within each (query,
        doc, position). ``theta`` stays the method's pooled curve.
    **kw
        Passed to the estimator (``K``, ``route``, ``weighting``, ``n_boot``, ...;
        ``data``, a RankingData, for ``regression-em`` and ``auto``).

    Returns
    -------
    Propensities
    """
    check_choice(method, METHODS, name="method")
    if context_features is not None:
        if context is not None:
            raise InputError(
                "context_features and context=: give one (a curve per value of a context "
                "with few values, or a model of a context's features)"
            )
        return by_features(as_lazy(log), context_features, method, estimate_propensities, **kw)
    if method == "auto":
        return auto(log, context=context, **kw)
    if method == "regression-em" and kw.get("data") is None:
        raise InputError("method 'regression-em' needs the documents' features: pass data=")
    if context is not None:
        return by_context(as_lazy(log), context, design=method, **kw)
    if method == "regression-em":
        return regression_em(log, **kw)
    return ESTIMATORS[method].function(as_lazy(log), **kw)
