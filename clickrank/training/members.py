"""The family of members: a member is a click target and its candidate set.

Adding a member is one entry of :data:`FAMILY` (and its name in
:data:`clickrank.specs.names.CLICK_FAMILY`, which the CLI lists).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._core._validation import InputError

__all__ = [
    "AVERAGE",
    "DEFAULT_FAMILY",
    "FAMILY",
    "Member",
    "member_target",
    "shape_lead",
    "trainable",
]


class Member(NamedTuple):
    """A family member: the name of its target and the options of
    :func:`clickrank.targets.make_target` (its candidate set, ...)."""

    target: str
    options: dict[str, Any]


#: Members of the family: name -> :class:`Member`. The order is the safety order of the
#: one-SE rule: earlier members are simpler or closer to what a user runs today (naive
#: clicks), later ones correct more and vary more.
FAMILY: dict[str, Member] = {
    "naive": Member("naive", {}),
    "ips-shown": Member("ips", {"candidates": "shown"}),
    "ips-hybrid": Member("ips", {"candidates": "hybrid"}),
    "ips-all": Member("ips", {"candidates": "all"}),
    "dr": Member("dr", {}),
    "unbiased-lambdamart": Member("unbiased-lambdamart", {}),
}
#: The members tried by default (a new member joins them once the robustness suite says
#: it should: docs/robustness.md).
DEFAULT_FAMILY: tuple[str, ...] = (
    "naive", "ips-shown", "ips-hybrid", "ips-all", "dr", "unbiased-lambdamart",
)  # fmt: skip
#: Name of the members' average (``combine="average"``).
AVERAGE = "average"
#: Targets that need propensities.
NEEDS_PROPENSITIES = ("ips", "dr")


def check_family(names: Any) -> None:
    """Raise :class:`~clickrank._core._validation.InputError` unless ``names`` are members."""
    unknown = [m for m in names if m not in FAMILY]
    if unknown or not names:
        raise InputError(f"family must name members of {list(FAMILY)}, got {list(names)}")


def trainable(names: Any, theta: Any) -> list[str]:
    """The members of ``names`` that can train: all with propensities ``theta``, else those
    whose target needs none.

    Raises
    ------
    InputError
        When none can.
    """
    out = [m for m in names if theta is not None or FAMILY[m].target not in NEEDS_PROPENSITIES]
    if not out:
        raise InputError("no member of the family can train without propensities")
    return out


def shape_lead(names: list[str]) -> str:
    """The member whose leading tree shape on its first fold the later members fit
    (``ClickRanker(shared_shape=True)``): the first whose target corrects for position
    bias, else the first. Not naive clicks: their gains are not reweighted, and on MQ2008
    and LightGBM's example set they chose larger trees than the median corrected member
    twice as often as smaller ones (docs/robustness.md, "One tree shape for the later
    members")."""
    for m in names:
        if m not in FAMILY or FAMILY[m].target != "naive":
            return m
    return names[0]


def member_target(name: str, data: Any, log: Any, theta: Any, stats: Any, *, clip: Any,
                  seed: int, n_jobs: int, context: Any = None) -> Any:  # fmt: skip
    """The :class:`~clickrank.targets.Target` of member ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`FAMILY`.
    data, log, theta, stats
        The training queries, the click log, the propensities and the log's click
        statistics (:func:`clickrank.targets.click_stats`), shared by the members.
    clip, seed
        The propensity clipping and the seed of every target.
    n_jobs : int
        Threads of the doubly robust target's relevance model (the same model as on one).
    context : tuple of str, optional
        The log's context columns: Unbiased LambdaMART learns biases per context (the
        other targets take θ per context from ``theta`` and ``stats``).
    """
    from .. import targets as T

    tname, opts = FAMILY[name]
    stats_arg = stats if tname in ("ips", "dr", "naive") else None
    if tname == "dr":
        threads = {"num_threads": int(n_jobs)}

        def relevance(d, s):
            return T.relevance_model(d, s, seed=seed, params=threads)

        opts = {**opts, "relevance": relevance}
    if tname == "unbiased-lambdamart" and context is not None:
        opts = {**opts, "context": context}
    return T.make_target(tname, data, log, theta, clip=clip, seed=seed, stats=stats_arg, **opts)
