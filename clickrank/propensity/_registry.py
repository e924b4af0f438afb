"""The estimator registry: method name -> (sufficient statistics, fit on them).

The package ``__init__`` fills :data:`ESTIMATORS` once it has imported every
estimator; :mod:`._bootstrap` reads it here. Keeping the registry in a module
that imports no estimator is what breaks the cycle ``propensity`` ->
``_bootstrap`` -> ``propensity`` (and ``_em`` -> ``_bootstrap`` -> ``_em``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._result import Propensities

__all__ = ["ESTIMATORS"]


@dataclass(frozen=True)
class _Spec:
    """An estimator as (sufficient statistics, fit on them); used by bootstrap and dispatch."""

    function: Callable[..., Propensities]
    statistics: Callable[..., Any]
    fit: Callable[..., Propensities]
    fit_kwargs: dict = field(default_factory=dict)


#: Filled by :mod:`clickrank.propensity` (importing any of its modules imports it first).
ESTIMATORS: dict[str, _Spec] = {}
