"""Targets by name: the one translation from a name and options to a :class:`Target`.

Used by ``clickrank train``, ``clickrank run`` and the benchmarks, so a name
means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError
from ..datasets import RankingData
from ..engine import n_unique
from ..specs.names import MODEL_AWARE, NEEDS_THETA, TARGET_NAMES
from ._direct import dr
from ._gains import ips, naive, oracle
from ._pairwise import ips_rank_pairs, propensity_ratio_pairs, unbiased_lambdamart
from ._preferences import click_preferences, parse_strategy
from ._stats import ClickStats, auto_clip, click_stats
from ._target import Target

__all__ = ["TARGET_NAMES", "MODEL_AWARE", "make_target", "needs_propensities"]


def _resolve(clip: float | str | None, log: pl.DataFrame | pl.LazyFrame) -> float | None:
    """``clip="auto"`` as :func:`auto_clip` of the log's sessions."""
    if clip != "auto":
        return clip
    return auto_clip(n_unique(log, "session"))


def needs_propensities(name: str) -> bool:
    """Whether target ``name`` reads propensities."""
    return name in NEEDS_THETA


def make_target(
    name: str,
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame | None = None,
    propensities: Any = None,
    *,
    candidates: str = "auto",
    clip: float | str | None = "auto",
    normalize: str = "none",
    naive_kind: str = "clicks",
    seed: int = 0,
    stats: ClickStats | None = None,
    click_model: str | None = None,
    relevance: Callable[[RankingData, ClickStats], np.ndarray] | None = None,
    context: Any = None,
) -> Target:
    """The target called ``name`` for ``data`` from ``log``.

    Names: ``"naive"`` (:func:`~clickrank.targets.naive`), ``"ips"``
    (:func:`~clickrank.targets.ips`), ``"dr"`` (:func:`~clickrank.targets.dr`),
    ``"unbiased-lambdamart"`` (:func:`~clickrank.targets.unbiased_lambdamart`),
    ``"ips-pairs"`` (:func:`~clickrank.targets.ips_rank_pairs`), ``"prs-pairs"``
    (:func:`~clickrank.targets.propensity_ratio_pairs`),
    the model-aware ``"affine"`` (trust bias; :func:`~clickrank.targets.affine`
    with a trust-bias model fitted to the log), ``"cascade-ips"``
    (:func:`~clickrank.targets.cascade_ips` with a DBN fitted to the log) and
    ``"fitted-relevance"`` (the fitted DBN's relevance as gains; the choice for
    strict cascade users), ``"skip-above"`` and ``"skip-above-ips"``
    (:func:`~clickrank.targets.skip_above` unweighted / weighted by 1/theta), ``"pairs:<strategy>"``
    (:func:`~clickrank.targets.click_preferences`), ``"oracle"`` (the labels).
    ``stats`` (from :func:`~clickrank.targets.click_stats` with the same
    propensities and clipping) saves reading the log again. ``click_model``
    names the model a model-aware target fits to the log instead of its
    default (:data:`MODEL_AWARE`), e.g. ``"ubm"`` for ``cascade-ips`` when
    ``clickrank fit-clicks`` found that UBM describes the users best.
    ``relevance(data, stats)`` gives ``"dr"`` its direct-method predictions
    instead of :func:`~clickrank.targets.relevance_model` (e.g. a model fitted
    on a Spark cluster, :func:`clickrank.training.distributed.spark_relevance`).
    Propensities per context (``estimate_propensities(..., context=)``) weigh every
    impression of ``"ips"``, ``"dr"`` and ``"ips-pairs"`` by its context's curve;
    ``context`` (the log's context columns) gives ``"unbiased-lambdamart"`` biases per
    context.
    """
    if name == "oracle":
        return oracle(data)
    _check_inputs(name, log, stats, propensities)
    if name in ("naive", "ips", "dr") and stats is None:
        stats = click_stats(
            data,
            log,
            None if name == "naive" else propensities,
            clip=None if name == "naive" else clip,
        )
    if name == "naive":
        return naive(data, None, kind=naive_kind, candidates=candidates, stats=stats)
    if name == "ips":
        return ips(data, None, None, normalize=normalize, candidates=candidates,
                   stats=stats.clipped(clip))  # fmt: skip
    if name == "dr":
        r = None if relevance is None else relevance(data, stats)
        return dr(data, None, None, relevance=r, clip=clip, seed=seed, stats=stats,
                  candidates="shown" if candidates == "shown" else "all")  # fmt: skip
    pair_candidates = "shown" if candidates in ("auto", "hybrid") else candidates
    if name == "unbiased-lambdamart":
        return unbiased_lambdamart(data, log, context=context)
    if name in ("ips-pairs", "prs-pairs"):
        build = ips_rank_pairs if name == "ips-pairs" else propensity_ratio_pairs
        return build(data, log, propensities, clip=_resolve(clip, log),
                     candidates=pair_candidates)  # fmt: skip
    if name in ("skip-above", "skip-above-ips"):
        w = name == "skip-above-ips"
        return click_preferences(data, log, strategy="skip-above", ips_weighted=w,
                                 propensities=propensities if w else None,
                                 candidates=pair_candidates)  # fmt: skip
    if name in MODEL_AWARE:
        return _model_aware(name, data, log, click_model, clip, pair_candidates)
    if name.startswith("pairs:"):
        strategy = name[len("pairs:") :]
        parse_strategy(strategy)  # a clear error for an unknown strategy
        return click_preferences(data, log, strategy=strategy, candidates=pair_candidates)
    raise InputError(
        f"unknown target {name!r}; choose from {list(TARGET_NAMES)} or 'pairs:<strategy>'"
    )


def _check_inputs(name: str, log: Any, stats: ClickStats | None, propensities: Any) -> None:
    """Raise when ``name`` lacks its inputs: the validation step of :func:`make_target`."""
    if log is None and stats is None:
        raise InputError(f"target {name!r} needs a click log")
    if needs_propensities(name) and propensities is None:
        raise InputError(f"target {name!r} needs propensities")


def _model_aware(
    name: str,
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame | None,
    click_model: str | None,
    clip: float | str | None,
    pair_candidates: str,
) -> Target:
    """A model-aware target, its click model fitted to ``log``: a branch of :func:`make_target`."""
    from ..clickmodels import fit_click_model
    from ._corrections import affine, cascade_ips, fitted_relevance

    fit = fit_click_model(log, click_model or MODEL_AWARE[name])
    if name == "affine":
        return affine(data, log, fit, candidates=pair_candidates)
    if name == "cascade-ips":
        return cascade_ips(data, log, fit, clip=_resolve(clip, log),
                           candidates=pair_candidates)  # fmt: skip
    return fitted_relevance(data, fit, candidates=pair_candidates)
