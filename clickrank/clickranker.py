"""The default click learner's public names, where they have always been imported from.

:class:`ClickRanker` and its parts live in :mod:`clickrank.training`; this module
re-exports what users, docs and pickles name as ``clickrank.clickranker.X``. The large-log
thresholds are re-exported as values: to lower one, patch
:mod:`clickrank.training.thresholds`, which the learner reads at call time.
"""

from __future__ import annotations

from .training.bounds import Comparison
from .training.learner import ClickRanker, logged_ranking
from .training.members import AVERAGE, DEFAULT_FAMILY, FAMILY
from .training.thresholds import PROCESSES_FROM, SPREAD_DOCS

__all__ = [
    "AVERAGE",
    "DEFAULT_FAMILY",
    "FAMILY",
    "PROCESSES_FROM",
    "SPREAD_DOCS",
    "ClickRanker",
    "Comparison",
    "logged_ranking",
]
