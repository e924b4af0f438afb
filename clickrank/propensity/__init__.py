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
====================  ================================================  ===========================

:func:`estimate_propensities` dispatches by name; :func:`bootstrap` gives a
session-level bootstrap interval for any of them. See ``docs/propensity.md``.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_choice
from ._bootstrap import bootstrap
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
from ._result import Propensities
from ._stats import as_lazy
from ._swap import pair_from_counts, pair_statistics, randpair, swap

__all__ = [
    "Propensities",
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

#: Method names accepted by :func:`estimate_propensities` and the CLI.
METHODS = tuple(ESTIMATORS)


def estimate_propensities(log: Any, method: str = "swap", **kw: Any) -> Propensities:
    """Estimate position bias from a click log with the named ``method``.

    Parameters
    ----------
    log : polars DataFrame, LazyFrame, parquet path or Spark DataFrame
        The click log (DESIGN §2); a Spark DataFrame is aggregated on Spark
        (:mod:`clickrank.engine`), the fit runs here.
    method : str
        One of :data:`METHODS`.
    **kw
        Passed to the estimator (``K``, ``route``, ``weighting``, ``n_boot``, ...).

    Returns
    -------
    Propensities
    """
    check_choice(method, METHODS, name="method")
    return ESTIMATORS[method].function(as_lazy(log), **kw)
