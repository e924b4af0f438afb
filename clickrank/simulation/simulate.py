"""The entry point: :func:`simulate` a click log from labelled data."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import polars as pl

from .._core._random import (
    STREAM_POLICY,
    _check_seed,
)
from .._core._threads import numba_threads
from .._core._validation import InputError, check_jobs, check_positive
from .._version import __version__
from ..clicklog import parquet_metadata
from ..datasets import RankingData
from ..policies import DeterministicPolicy, LoggingPolicy, MixturePolicy
from .context import Context, as_contexts, context_clicks
from .interventions import Intervention, _apply_interventions, _as_interventions
from .sampler import _click_sampler, _query_sampler, _sample_queries
from .writer import (
    _Cells,
    _check_memory,
    _id_source,
    _positions,
    _RowTable,
    _to_table,
    _Writer,
    estimate_log_bytes,
)

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


@dataclass(frozen=True)
class SimulationSpec:
    """What to simulate: the sessions of a click log (same spec, same log).

    The fields are those of :func:`simulate` (see there): ``policy``,
    ``click_model``, ``n_sessions``, ``interventions``, ``top_k``,
    ``query_frequency``, ``seed``, ``first_session`` and ``context``.
    """

    policy: Any
    click_model: Any
    n_sessions: int
    interventions: Intervention | Sequence[Intervention] | None = None
    top_k: int = 10
    query_frequency: np.ndarray | None = None
    seed: int = 0
    first_session: int = 0
    context: Context | Sequence[Context] | None = None


@dataclass(frozen=True)
class OutputOptions:
    """How a simulation runs and where its log goes; none of these change the log.

    The fields are those of :func:`simulate`: ``out``, ``overwrite``,
    ``chunk_size``, ``progress``, ``check_space``, ``metadata`` and ``n_jobs``.
    """

    out: str | os.PathLike | None = None
    overwrite: bool = False
    chunk_size: int = 200_000
    progress: bool | Callable[[int], None] = False
    check_space: bool = True
    metadata: Mapping[str, Any] | None = None
    n_jobs: int = 1


def simulate(
    data: RankingData,
    spec: SimulationSpec | None = None,
    *,
    policy: LoggingPolicy | None = None,
    click_model: Any = None,
    n_sessions: int | None = None,
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
    n_jobs: int = 1,
    context: Context | Sequence[Context] | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Simulate a click log.

    For session :math:`s` (index ``first_session + i``): draw a query
    :math:`q_s` (uniform over queries with documents, or proportional to
    ``query_frequency``); let ``policy`` display its top ``top_k``
    documents; with probability ``fraction`` apply one of the
    ``interventions`` (the fractions partition the sessions); draw clicks
    from ``click_model`` given the true labels of the displayed documents.

    The sessions are described by a :class:`SimulationSpec` (what to simulate:
    same spec, same log) and the run by :class:`OutputOptions` (where and how:
    they never change the log). Pass a ``spec``, or the same fields as
    keywords (``simulate(data, policy=..., click_model=..., n_sessions=...)``).

    Parameters
    ----------
    data : RankingData
        Labelled data; the labels drive the clicks and are logged in ``label``.
    spec : SimulationSpec, optional
        The sessions; then the keywords ``policy`` to ``first_session`` are not given.
    policy : LoggingPolicy, ranker or scores
        See :mod:`clickrank.policies`. A ranker with ``predict(X)`` or an array
        of per-row scores is shown deterministically (``DeterministicPolicy``).
    click_model : click model or str
        An object following the :class:`clickrank.clickmodels.ClickModel`
        protocol, or a name for ``clickrank.clickmodels.make_click_model``.
        May be None when a ``context`` gives every value its own model.
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
        fitted :class:`~clickrank.policies.production.ProductionRanker`, its quality
        (``logger_quality``, :meth:`~clickrank.policies.production.ProductionRanker.quality`
        on ``data``).
    n_jobs : int
        Threads of the compiled kernels (numba's, at most ``NUMBA_NUM_THREADS``):
        each session's draws are hashed from its index, so the log is the same
        for any value.
    context : Context or sequence of Context, optional
        Categorical columns drawn per session from their shares
        (:class:`~clickrank.simulation.Context`), appended to the log after
        ``swap_k`` as Categorical columns, constant within a session. The context
        with ``click_models`` clicks each session by its value's model. Without a
        context no column is added and no draw changes.

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
    given = dict(
        policy=policy,
        click_model=click_model,
        n_sessions=n_sessions,
        interventions=interventions,
        top_k=top_k,
        query_frequency=query_frequency,
        seed=seed,
        first_session=first_session,
        context=context,
    )
    if spec is None:
        needed = ("policy", "n_sessions") + (
            () if _models_everywhere(context) else ("click_model",)
        )
        missing = [k for k in needed if given[k] is None]
        if missing:
            raise InputError(f"simulate needs {', '.join(missing)} (or a SimulationSpec)")
        spec = SimulationSpec(**given)
    else:
        if not isinstance(spec, SimulationSpec):
            raise InputError(f"spec must be a SimulationSpec, got {type(spec).__name__}")
        defaults = {"top_k": 10, "seed": 0, "first_session": 0}  # the keywords' defaults
        clash = [
            k for k, v in given.items() if (v != defaults[k] if k in defaults else v is not None)
        ]
        if clash:
            raise InputError(f"give {', '.join(clash)} in the SimulationSpec, not as keywords too")
    options = OutputOptions(out, overwrite, chunk_size, progress, check_space, metadata, n_jobs)
    return _run(data, spec, options)


@dataclass(frozen=True)
class _Plan:
    """A checked :class:`SimulationSpec`: the values the chunks are drawn from."""

    policy: LoggingPolicy
    model: Any
    n_sessions: int
    items: list
    top_k: int
    seed: int
    first_session: int
    query_frequency: Any
    contexts: tuple[Context, ...] = ()


def _models_everywhere(context: Any) -> bool:
    """True when a context gives every one of its values a click model."""
    items = (context,) if isinstance(context, Context) else (context or ())
    return any(
        isinstance(c, Context) and c.click_models and len(c.click_models) == len(c.values)
        for c in items
    )


def _check_spec(data: RankingData, spec: SimulationSpec) -> _Plan:
    """Validate ``data`` and ``spec`` (errors name the argument)."""
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("data has no labels (data.y is None); clicks are simulated from labels")
    policy = spec.policy
    if not isinstance(policy, LoggingPolicy):
        if not (hasattr(policy, "predict") or isinstance(policy, (np.ndarray, list, tuple))):
            raise InputError(
                "policy must be a LoggingPolicy (see clickrank.policies), a ranker with "
                f"predict(X), or an array of scores; got {type(policy).__name__}"
            )
        policy = DeterministicPolicy(policy)  # a plain ranker or scores: show its top k
    seed = _check_seed(spec.seed)
    n_sessions = check_positive(spec.n_sessions, name="n_sessions", integer=True)
    first_session = int(spec.first_session)
    if first_session < 0:
        raise InputError(f"first_session must be >= 0, got {first_session}")
    top_k = check_positive(spec.top_k, name="top_k", integer=True)
    longest = int(data.lengths.max()) if data.n_queries else 0
    if top_k > longest:
        raise InputError(
            f"top_k={top_k} is larger than the longest query in the data "
            f"({longest} documents); use top_k <= {longest}"
        )
    if top_k > 65535:
        raise InputError(f"top_k must fit a UInt16 position, got {top_k}")
    items = _as_interventions(spec.interventions, top_k)
    contexts = as_contexts(spec.context)
    if spec.click_model is None and not _models_everywhere(contexts):
        raise InputError("simulate needs click_model (or a context with a model for every value)")
    return _Plan(
        policy,
        spec.click_model,
        n_sessions,
        items,
        top_k,
        seed,
        first_session,
        spec.query_frequency,
        contexts,
    )


def _writer(plan: _Plan, options: OutputOptions):
    """The parquet writer of ``options.out`` with the log's description (None: in memory)."""
    if options.out is None and options.metadata is not None:
        raise InputError("metadata is stored with the log on disk: give out=... too")
    if options.out is None:
        if options.check_space:
            _check_memory(plan.n_sessions, plan.top_k)
        return None
    need = estimate_log_bytes(plan.n_sessions, plan.top_k) if options.check_space else 0
    return _Writer(options.out, options.overwrite, need)


def _description(data: RankingData, plan: _Plan, model: Any, metadata) -> dict[str, Any]:
    """The JSON description every parquet file of the log carries."""
    return {
        "format": "clickrank.log",
        "clickrank": __version__,
        "data": data.name,
        "n_queries": data.n_queries,
        "sessions": plan.n_sessions,
        "first_session": plan.first_session,
        "top_k": plan.top_k,
        "seed": plan.seed,
        "policy": list(plan.policy.names),
        "click_model": repr(model),
        "interventions": [repr(i) for i in plan.items],
        **({"context": [c.describe() for c in plan.contexts]} if plan.contexts else {}),
        **({} if "logger_quality" in (metadata or {}) else _logger_quality(plan.policy, data)),
        **dict(metadata or {}),
    }


def _chunks(
    data: RankingData, plan: _Plan, model: Any, chunk_size: int, report, threads: int = 1
) -> Iterator[pl.DataFrame]:
    """The log, ``chunk_size`` sessions at a time (each chunk one vectorized pass), the
    kernels on ``threads`` threads (set per chunk: a parquet sink pulls the chunks on
    polars' threads, and numba's thread count belongs to the calling thread)."""
    sampler = _query_sampler(data, plan.query_frequency)
    with numba_threads(threads):
        prepared = plan.policy.prepare(data, plan.top_k)
    names = tuple(prepared.names)
    qids, docs = _id_source(data.qid), _id_source(data.doc)
    table = _RowTable(data.y, docs)  # each row's label and id, for one gather per cell
    lists = table.of_lists(prepared.lists)  # fixed lists (per query and ranker): their cells
    clicks_of = _click_sampler(model, data.y, plan.top_k) if model is not None else None
    by_context = context_clicks(
        plan.contexts,
        model,
        lambda m: _click_sampler(_resolve_click_model(m), data.y, plan.top_k),
    )
    mixes = [c.query_shares(plan.seed, data.n_queries, i) for i, c in enumerate(plan.contexts)]
    positions = _positions(min(chunk_size, plan.n_sessions), plan.top_k)
    seed, end = plan.seed, plan.first_session + plan.n_sessions
    for start in range(plan.first_session, end, chunk_size):
        stop = min(start + chunk_size, end)
        sessions = np.arange(start, stop, dtype=np.uint64)
        with numba_threads(threads):
            queries = _sample_queries(seed, sessions, sampler)
            # labels, doc ids, session and query ids in one compiled call
            if lists is None:
                rows, rcode = prepared.rank(queries, sessions, seed, STREAM_POLICY)
                cells = _Cells.fill(rows, table, sessions, queries, qids)
            else:
                picked, rcode = prepared.pick(queries, sessions, seed, STREAM_POLICY)
                cells = _Cells.from_lists(lists, table, sessions, picked, queries, qids)
            icode, pivot, swap_k = _apply_interventions(
                plan.items, cells.labels, cells.rows, seed, sessions
            )
            codes = [
                c.codes(seed, sessions, i, queries, mix)
                for i, (c, mix) in enumerate(zip(plan.contexts, mixes, strict=True))
            ]
            if by_context is None:
                clicks = clicks_of(seed, sessions, cells.labels)
            else:
                clicks = by_context(seed, sessions, cells.labels, codes)
        yield _to_table(
            cells=cells,
            queries=queries,
            clicks=clicks,
            icode=icode,
            rcode=rcode,
            pivot=pivot,
            swap_k=swap_k,
            qids=qids,
            docs=docs,
            ranker_names=names,
            positions=positions,
            contexts=[(c.name, c.values, k) for c, k in zip(plan.contexts, codes, strict=True)],
        )
        if report is not None:
            report(stop - start)


def _run(data: RankingData, spec: SimulationSpec, options: OutputOptions):
    """Check, then simulate in chunks into memory or through the parquet writer."""
    plan = _check_spec(data, spec)
    chunk_size = check_positive(options.chunk_size, name="chunk_size", integer=True)
    threads = min(check_jobs(options.n_jobs), numba.config.NUMBA_NUM_THREADS)
    writer = _writer(plan, options)
    model = None if plan.model is None else _resolve_click_model(plan.model)
    if writer is not None:
        writer.metadata = parquet_metadata(_description(data, plan, model, options.metadata))
    bar = None
    report = options.progress if callable(options.progress) else None
    if options.progress is True:
        from .._core._progress import progress as progress_bar

        bar = progress_bar(plan.n_sessions, label="simulating", enabled=True)
        bar.__enter__()
        report = bar.update
    chunks = _chunks(data, plan, model, chunk_size, report, threads)
    try:
        if writer is None:
            frames = list(chunks)
            return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)
        path = writer.run(chunks, plan.first_session)
        return pl.scan_parquet(path if path.is_file() else path / "*.parquet")
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _logger_quality(policy: LoggingPolicy, data: RankingData) -> dict[str, Any]:
    """``{"logger_quality": {name: quality}}`` for the fitted production rankers a policy shows.

    The quality (:meth:`~clickrank.policies.production.ProductionRanker.quality`) is the
    ranker's NDCG@10 on ``data``, on the queries it was not trained on and on all.
    """
    parts = policy.policies if isinstance(policy, MixturePolicy) else [policy]
    found = {}
    for part in parts:
        ranker = getattr(part, "ranker", None)
        if callable(getattr(ranker, "quality", None)) and hasattr(ranker, "model_"):
            found[str(part.name)] = ranker.quality(data)
    return {"logger_quality": found} if found else {}
