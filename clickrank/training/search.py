"""The member search: which members fit which folds, and in what order.

As scikit-learn's ``BaseSearchCV``, one loop owns the schedule: :meth:`MemberSearch.run`
hands :meth:`MemberSearch._run_search` an ``evaluate`` function that runs tasks on a
backend (:mod:`~clickrank.training.backends`) and keeps what they return;
``_run_search`` calls it once per stage. :class:`MemberSearch` fits every member to the
end in one call (one member, or no unseen guard); :class:`RacedMemberSearch`, the
default learner's, fits every member's first fold, drops the members its paired bound
shows beyond the unseen guard (:func:`~clickrank.training.safety.guard_race`) and fits
the others on from there, as successive halving is repeated calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backends import MemberFit, MemberTask
from .safety import guard_race

__all__ = ["MemberSearch", "RacedMemberSearch", "SearchResult"]


@dataclass
class SearchResult:
    """What a member search leaves.

    Attributes
    ----------
    fitted : dict
        Member -> its selection fitted to the end (raced members left out), in the order
        the members were given.
    raced : dict
        Member raced out after its first fold -> its relative loss to the best there.
    raced_cost : tuple of int
        The LightGBM fits and boosting rounds the raced members ran.
    calls : list
        Each call of the backend: the members and the fold they were fitted up to.
    """

    fitted: dict[str, Any] = field(default_factory=dict)
    raced: dict[str, float] = field(default_factory=dict)
    raced_cost: tuple[int, int] = (0, 0)
    calls: list[tuple[tuple[str, ...], int | None]] = field(default_factory=list)


class MemberSearch:
    """Fit every member to the end in one call of the backend.

    Parameters
    ----------
    names : list of str
        The members, in the family's order.
    say : callable, optional
        Hears a line per schedule decision.
    """

    def __init__(self, names: list[str], say: Callable | None = None) -> None:
        self.names = list(names)
        self.say = say if say is not None else (lambda _m: None)

    def run(self, backend: Any) -> SearchResult:
        """Run the schedule on ``backend`` (anything with ``run(tasks)``)."""
        result = SearchResult()

        def evaluate(selections: dict[str, Any], until: int | None = None) -> dict[str, MemberFit]:
            tasks = [MemberTask(m, cv, until) for m, cv in selections.items()]
            out = backend.run(tasks)
            result.calls.append((tuple(selections), until))
            if until is None:
                result.fitted.update({m: f.selection for m, f in out.items()})
            return out

        self._run_search(evaluate, result)
        return result

    def _run_search(self, evaluate: Callable, result: SearchResult) -> None:
        """The schedule: every member from the start to the end."""
        evaluate(dict.fromkeys(self.names))


class RacedMemberSearch(MemberSearch):
    """Fit every member's first fold, then only those not raced out to the end.

    Parameters
    ----------
    names : list of str
    guard : float
        The unseen guard's relative loss.
    confidence : float
        Level of the race's paired bound.
    say : callable, optional
    """

    def __init__(self, names: list[str], guard: float, confidence: float,
                 say: Callable | None = None) -> None:  # fmt: skip
        super().__init__(names, say)
        self.guard, self.confidence = float(guard), float(confidence)

    def _run_search(self, evaluate: Callable, result: SearchResult) -> None:
        """The schedule: the first fold of every member, the race, the rest of the others."""
        first = {m: f.selection for m, f in evaluate(dict.fromkeys(self.names), until=1).items()}
        result.raced = guard_race({m: cv.held_terms_ for m, cv in first.items()}, self.guard,
                                  self.confidence)  # fmt: skip
        for m, loss in result.raced.items():
            self.say(f"  {m}: raced out after its first fold ({loss:.0%} below the best "
                     "member over all documents there: the unseen guard)")  # fmt: skip
        result.raced_cost = (sum(first[m].fits_ for m in result.raced),
                             sum(first[m].rounds_ for m in result.raced))  # fmt: skip
        evaluate({m: cv for m, cv in first.items() if m not in result.raced})
