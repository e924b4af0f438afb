"""The member search: which members fit which folds, and in what order.

As scikit-learn's ``BaseSearchCV``, one loop owns the schedule: :meth:`MemberSearch.run`
hands :meth:`MemberSearch._run_search` an ``evaluate`` function that runs tasks on a
backend (:mod:`~clickrank.training.backends`) and keeps what they return;
``_run_search`` calls it once per stage. :class:`MemberSearch` fits every member to the
end (one member, or no unseen guard; in one call without ``shape_from``);
:class:`RacedMemberSearch`, the default learner's, fits every member's first fold, drops
the members its paired bound shows beyond the unseen guard
(:func:`~clickrank.training.safety.guard_race`) and fits the others on from there, as
successive halving is repeated calls.

With ``shape_from`` (a member), the members up to that one race the tree shapes on their
first folds, and the shape leading that member's is the only one every later member fits:
the members are averaged, and a shape within noise of a member's own best costs the
average little, while each shape a member tries is a fit of its first fold.
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
    shape : dict or None
        The tree shape the members after ``shape_from`` fitted, else None.
    calls : list
        Each call of the backend: the members and the fold they were fitted up to.
    """

    fitted: dict[str, Any] = field(default_factory=dict)
    raced: dict[str, float] = field(default_factory=dict)
    raced_cost: tuple[int, int] = (0, 0)
    shape: dict | None = None
    calls: list[tuple[tuple[str, ...], int | None]] = field(default_factory=list)


class MemberSearch:
    """Fit every member to the end in one call of the backend.

    Parameters
    ----------
    names : list of str
        The members, in the family's order.
    say : callable, optional
        Hears a line per schedule decision.
    shape_from : str, optional
        A member: the tree shape leading its first fold is the only one the members after
        it fit (None, or the last member: each member tries every shape).
    """

    def __init__(self, names: list[str], say: Callable | None = None, *,
                 shape_from: str | None = None) -> None:  # fmt: skip
        self.names = list(names)
        self.say = say if say is not None else (lambda _m: None)
        last = shape_from is None or shape_from not in self.names[:-1]
        self.shape_from = None if last else shape_from

    def run(self, backend: Any) -> SearchResult:
        """Run the schedule on ``backend`` (anything with ``run(tasks)``)."""
        result = SearchResult()

        def evaluate(selections: dict[str, Any], until: int | None = None,
                     grid: tuple | None = None) -> dict[str, MemberFit]:  # fmt: skip
            tasks = [MemberTask(m, cv, until, grid) for m, cv in selections.items()]
            out = backend.run(tasks)
            result.calls.append((tuple(selections), until))
            if until is None:
                result.fitted.update({m: f.selection for m, f in out.items()})
            return out

        self._run_search(evaluate, result)
        return result

    def _run_search(self, evaluate: Callable, result: SearchResult) -> None:
        """The schedule: every member from the start to the end (with ``shape_from``, the
        first folds first)."""
        if self.shape_from is None:
            evaluate(dict.fromkeys(self.names))
            return
        evaluate(self._first_folds(evaluate, result))

    def _first_folds(self, evaluate: Callable, result: SearchResult) -> dict[str, Any]:
        """Every member's selection fitted up to its first fold (with ``shape_from``: the
        members up to it on every shape, the later ones on its leading shape)."""
        if self.shape_from is None:
            return {m: f.selection for m, f in evaluate(dict.fromkeys(self.names), 1).items()}
        cut = self.names.index(self.shape_from) + 1
        head, rest = self.names[:cut], self.names[cut:]
        first = {m: f.selection for m, f in evaluate(dict.fromkeys(head), 1).items()}
        result.shape = first[self.shape_from].leader_
        self.say(f"  tree shape {result.shape}: {self.shape_from}'s best on its first fold, "
                 f"the only one {', '.join(rest)} fit")  # fmt: skip
        out = evaluate(dict.fromkeys(rest), 1, (result.shape,))
        return {**first, **{m: f.selection for m, f in out.items()}}


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
    shape_from : str, optional
    """

    def __init__(self, names: list[str], guard: float, confidence: float,
                 say: Callable | None = None, *,
                 shape_from: str | None = None) -> None:  # fmt: skip
        super().__init__(names, say, shape_from=shape_from)
        self.guard, self.confidence = float(guard), float(confidence)

    def _run_search(self, evaluate: Callable, result: SearchResult) -> None:
        """The schedule: the first fold of every member, the race, the rest of the others."""
        first = self._first_folds(evaluate, result)
        result.raced = guard_race({m: cv.held_terms_ for m, cv in first.items()}, self.guard,
                                  self.confidence)  # fmt: skip
        for m, loss in result.raced.items():
            self.say(f"  {m}: raced out after its first fold ({loss:.0%} below the best "
                     "member over all documents there: the unseen guard)")  # fmt: skip
        result.raced_cost = (sum(first[m].fits_ for m in result.raced),
                             sum(first[m].rounds_ for m in result.raced))  # fmt: skip
        evaluate({m: cv for m, cv in first.items() if m not in result.raced})
