"""Interleaved comparison of rankers from clicks.

Methods (each builds lists for many impressions at once and turns clicks into
a per-impression outcome, +1 A wins / -1 B wins / 0 tie):

- :func:`balanced` (Joachims (2002)) — biased for shifted rankings, kept for reference;
- :func:`team_draft` (Radlinski et al. (2008));
- :func:`probabilistic` (Hofmann et al. (2011)), credit marginalized over assignments;
- :func:`optimized` (Radlinski & Craswell (2013)), an LP per query solved with ``linprog``;
- :func:`team_draft_multileave` (Schuth et al. (2014)) for more than two rankers.

Simulated interleaving experiments (impressions, clicks, statistics) are in
:mod:`clickrank.interleaving.experiment`; A/B tests, power and fidelity in
:mod:`clickrank.online`.
"""

from __future__ import annotations

from ._base import Interleaved, rankings_from_scores
from .balanced import BalancedInterleaved, balanced
from .multileave import Multileaved, team_draft_multileave
from .optimized import OptimizedDistribution, OptimizedInterleaved, optimized, solve_optimized
from .probabilistic import (
    ProbabilisticInterleaved,
    probabilistic,
    probabilistic_list_probability,
)
from .team_draft import TeamDraftInterleaved, team_draft

METHODS = {
    "balanced": balanced,
    "team-draft": team_draft,
    "probabilistic": probabilistic,
    "optimized": optimized,
}


def interleave(method: str, ranking_a, ranking_b, **kwargs) -> Interleaved:
    """Dispatch to one of :data:`METHODS` by name."""
    from .._core._validation import check_choice

    check_choice(method, METHODS, name="method")
    return METHODS[method](ranking_a, ranking_b, **kwargs)


__all__ = [
    "METHODS",
    "interleave",
    "rankings_from_scores",
    "Interleaved",
    "balanced",
    "BalancedInterleaved",
    "team_draft",
    "TeamDraftInterleaved",
    "probabilistic",
    "ProbabilisticInterleaved",
    "probabilistic_list_probability",
    "optimized",
    "OptimizedInterleaved",
    "OptimizedDistribution",
    "solve_optimized",
    "team_draft_multileave",
    "Multileaved",
]
