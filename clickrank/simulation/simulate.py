"""The entry point: :func:`simulate` a click log from labelled data."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from .._random import (
    STREAM_POLICY,
    _check_seed,
)
from .._validation import InputError, check_positive
from .._version import __version__
from ..clicklog import _parquet_metadata
from ..datasets import RankingData
from ..policies import DeterministicPolicy, LoggingPolicy, MixturePolicy, ProductionRanker
from .interventions import Intervention, _apply_interventions, _as_interventions
from .sampler import _click_sampler, _query_sampler, _sample_queries
from .writer import _check_memory, _id_source, _positions, _to_table, _Writer, estimate_log_bytes

# -- the entry point ------------------------------------------------------------------


def _resolve_click_model(click_model: Any) -> Any:
    if isinstance(click_model, str):
        from ..clickmodels import make_click_model

        return make_click_model(click_model)
    for attr in ("n_uniforms", "sample"):
        if not hasattr(click_model, attr):
            raise InputError(
                f"click_model must be a model name or a click model (with n_uniforms, "
                f"sample()); got {type(click_model).__name__} without {attr!r}"
            )
    n_u = click_model.n_uniforms
    if isinstance(n_u, bool) or not isinstance(n_u, (int, np.integer)) or n_u < 0:
        raise InputError(f"click_model.n_uniforms must be an integer >= 0, got {n_u!r}")
    return click_model


def simulate(
    data: RankingData,
    *,
    policy: LoggingPolicy,
    click_model: Any,
    n_sessions: int,
    interventions: Intervention | Sequence[Intervention] | None = None,
    top_k: int = 10,
    query_frequency: np.ndarray | None = None,
    seed: int = 0,
    chunk_size: int = 200_000,
    first_session: int = 0,
    out: str | os.PathLike | None = None,
    overwrite: bool = False,
    progress: bool | Callable[[int], None] = False,
    check_space: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Simulate a click log.

    For session :math:`s` (index ``first_session + i``): draw a query
    :math:`q_s` (uniform over queries with documents, or proportional to
    ``query_frequency``); let ``policy`` display its top ``top_k``
    documents; with probability ``fraction`` apply one of the
    ``interventions`` (the fractions partition the sessions); draw clicks
    from ``click_model`` given the true labels of the displayed documents.

    Parameters
    ----------
    data : RankingData
        Labelled data; the labels drive the clicks and are logged in ``label``.
    policy : LoggingPolicy, ranker or scores
        See :mod:`clickrank.policies`. A ranker with ``predict(X)`` or an array
        of per-row scores is shown deterministically (``DeterministicPolicy``).
    click_model : click model or str
        An object following the :class:`clickrank.clickmodels.ClickModel`
        protocol, or a name for ``clickrank.clickmodels.make_click_model``.
    n_sessions : int
        Number of impressions, >= 1.
    interventions : Swap, RandPair, Randomize, FairPairs or a sequence of them
        Fractions must sum to at most 1.
    top_k : int
        Displayed results per session; must not exceed the longest query.
        Shorter queries show all their documents (positions ``1..n``).
    query_frequency : array ``[n_queries]``, optional
        Non-negative query weights (e.g. a Zipf law); uniform by default.
    seed : int
        Same seed, same log, for any ``chunk_size``.
    chunk_size : int
        Sessions simulated at once; memory grows with ``chunk_size * top_k``
        (roughly 100-200 bytes per displayed result). The log does not depend on it.
    first_session : int
        Index of the first session (to extend a log with fresh sessions).
    out : path, optional
        Stream the log to parquet instead of returning it in memory: a path
        ending in ``.parquet`` gets one file, any other path a folder of part
        files (one per :data:`PART_SESSIONS` sessions). Written atomically;
        row groups of :data:`ROW_GROUP_ROWS` rows make the bytes independent of
        ``chunk_size``.
    overwrite : bool
        Replace an existing ``out``; only a log clickrank wrote is ever replaced.
    progress : bool or callable
        True draws a progress bar on stderr; a callable receives the number
        of sessions finished after every chunk.
    check_space : bool
        Before simulating, compare the estimated size of the log
        (:func:`estimate_log_bytes`) with the free disk space (``out``) or the
        available memory, and refuse if it does not fit. False skips the check.
    metadata : dict, optional
        With ``out``: JSON entries added to the description that every parquet
        file of the log carries (:func:`clickrank.clicklog.read_log_metadata`);
        they override the entries simulate records itself: the data, the
        number of sessions, ``top_k``, the seed, the click model, the
        interventions, the policy's ranker names and, when the policy shows a
        fitted :class:`~clickrank.policies.ProductionRanker`, its quality
        (``logger_quality``, :meth:`~clickrank.policies.ProductionRanker.quality`
        on ``data``).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        The log (DESIGN §2; see :mod:`clickrank.clicklog`), sorted by
        ``session`` then ``position``; with ``out``, a LazyFrame scanning it.

    Raises
    ------
    InputError
        For bad arguments, naming the argument; an ``out`` that exists (without
        ``overwrite``), that clickrank did not write, or that does not fit.

    Examples
    --------
    >>> from clickrank.datasets import synthetic
    >>> from clickrank.policies import DeterministicPolicy
    >>> from clickrank.clickmodels import make_click_model
    >>> data = synthetic(20, 10, seed=0)
    >>> log = simulate(data, policy=DeterministicPolicy(data.X[:, 0]),
    ...                click_model=make_click_model("pbm"), n_sessions=100, top_k=5)
    >>> log.shape
    (500, 10)
    """
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("data has no labels (data.y is None); clicks are simulated from labels")
    if not isinstance(policy, LoggingPolicy):
        if not (hasattr(policy, "predict") or isinstance(policy, (np.ndarray, list, tuple))):
            raise InputError(
                "policy must be a LoggingPolicy (see clickrank.policies), a ranker with "
                f"predict(X), or an array of scores; got {type(policy).__name__}"
            )
        policy = DeterministicPolicy(policy)  # a plain ranker or scores: show its top k
    seed = _check_seed(seed)
    n_sessions = check_positive(n_sessions, name="n_sessions", integer=True)
    chunk_size = check_positive(chunk_size, name="chunk_size", integer=True)
    first_session = int(first_session)
    if first_session < 0:
        raise InputError(f"first_session must be >= 0, got {first_session}")
    top_k = check_positive(top_k, name="top_k", integer=True)
    longest = int(data.lengths.max()) if data.n_queries else 0
    if top_k > longest:
        raise InputError(
            f"top_k={top_k} is larger than the longest query in the data "
            f"({longest} documents); use top_k <= {longest}"
        )
    if top_k > 65535:
        raise InputError(f"top_k must fit a UInt16 position, got {top_k}")
    items = _as_interventions(interventions, top_k)
    if out is None and metadata is not None:
        raise InputError("metadata is stored with the log on disk: give out=... too")
    writer = None
    if out is not None:
        need = estimate_log_bytes(n_sessions, top_k) if check_space else 0
        writer = _Writer(out, overwrite, need)
    elif check_space:
        _check_memory(n_sessions, top_k)
    model = _resolve_click_model(click_model)
    if writer is not None:
        writer.metadata = _parquet_metadata(
            {
                "format": "clickrank.log",
                "clickrank": __version__,
                "data": data.name,
                "n_queries": data.n_queries,
                "sessions": n_sessions,
                "first_session": first_session,
                "top_k": top_k,
                "seed": seed,
                "policy": list(policy.names),
                "click_model": repr(model),
                "interventions": [repr(i) for i in items],
                **({} if "logger_quality" in (metadata or {}) else _logger_quality(policy, data)),
                **dict(metadata or {}),
            }
        )
    sampler = _query_sampler(data, query_frequency)
    prepared = policy.prepare(data, top_k)
    names = tuple(prepared.names)
    qids, docs = _id_source(data.qid), _id_source(data.doc)
    y_ext = np.append(data.y, np.nan)  # row -1 (empty slot) reads NaN
    clicks_of = _click_sampler(model, data.y, top_k)

    bar = None
    if progress is True:
        import click

        bar = click.progressbar(length=n_sessions, label="simulating", file=sys.stderr)
        bar.__enter__()
        report = bar.update
    elif callable(progress):
        report = progress
    else:
        report = None

    positions = _positions(min(chunk_size, n_sessions), top_k)

    def chunks() -> Iterator[pl.DataFrame]:
        for start in range(first_session, first_session + n_sessions, chunk_size):
            stop = min(start + chunk_size, first_session + n_sessions)
            sessions = np.arange(start, stop, dtype=np.uint64)
            queries = _sample_queries(seed, sessions, sampler)
            rows, rcode = prepared.rank(queries, sessions, seed, STREAM_POLICY)
            rows, icode, pivot, swap_k = _apply_interventions(items, rows, seed, sessions)
            labels = np.take(y_ext, rows)  # row -1 reads the NaN appended
            clicks = clicks_of(seed, sessions, labels)
            yield _to_table(
                sessions=sessions,
                queries=queries,
                rows=rows,
                clicks=clicks,
                labels=labels,
                icode=icode,
                rcode=rcode,
                pivot=pivot,
                swap_k=swap_k,
                qids=qids,
                docs=docs,
                ranker_names=names,
                positions=positions,
            )
            if report is not None:
                report(stop - start)

    try:
        if writer is None:
            frames = list(chunks())
            return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)
        path = writer.run(chunks(), first_session)
        return pl.scan_parquet(path if path.is_file() else path / "*.parquet")
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _logger_quality(policy: LoggingPolicy, data: RankingData) -> dict[str, Any]:
    """``{"logger_quality": {name: quality}}`` for the fitted production rankers a policy shows.

    The quality (:meth:`~clickrank.policies.ProductionRanker.quality`) is the
    ranker's NDCG@10 on ``data``, on the queries it was not trained on and on all.
    """
    parts = policy.policies if isinstance(policy, MixturePolicy) else [policy]
    found = {}
    for part in parts:
        ranker = getattr(part, "ranker", None)
        if isinstance(ranker, ProductionRanker) and hasattr(ranker, "model_"):
            found[str(part.name)] = ranker.quality(data)
    return {"logger_quality": found} if found else {}
