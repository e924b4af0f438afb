"""Spec -> object: build click models, interventions, policies, LambdaMART and targets."""

from __future__ import annotations

from .._validation import InputError, check_choice
from ..datasets import RankingData
from ..policies import DeterministicPolicy, LoggingPolicy, PlackettLuce, UniformRandom
from ..production import production_ranker
from ._names import POLICY_KINDS

__all__ = ["make_policy"]


def make_policy(
    kind: str,
    data: RankingData,
    *,
    fraction: float = 0.01,
    min_queries: int = 20,
    temperature: float = 1.0,
    seed: int = 0,
) -> LoggingPolicy:
    """A named logging policy for ``data`` (used by the CLI and run configs).

    ``production``: deterministic ranking by :func:`production_ranker` (trained
    on ``fraction`` of the queries, at least ``min_queries``);
    ``plackett-luce``: Plackett–Luce over the production ranker's scores with
    ``temperature``; ``oracle``: deterministic ranking by the true labels;
    ``random``: :class:`UniformRandom`.
    """
    check_choice(kind, POLICY_KINDS, name="policy")
    if kind == "random":
        return UniformRandom()
    if kind == "oracle":
        if data.y is None:
            raise InputError("the oracle policy needs labelled data")
        return DeterministicPolicy(data.y, name="oracle")
    ranker = production_ranker(data, fraction, seed=seed, min_queries=min_queries)
    if kind == "production":
        return DeterministicPolicy(ranker, name="production")
    return PlackettLuce(ranker, temperature=temperature, name="plackett-luce")
