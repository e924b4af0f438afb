"""Where the members fit: here, in processes or as Spark tasks, behind one interface.

A backend runs :class:`MemberTask` s of one :class:`MemberJob` and returns a
:class:`MemberFit` per task, in the order given: ``backend.run(tasks)``. Every backend
gives the models of one thread to the bit; :func:`open_backend` picks one.

* :class:`LocalBackend`: one member after the other here, each on ``n_jobs`` threads.
* :class:`ProcessBackend`: the members at once, each in its own process. Processes, not
  threads: LightGBM keeps its thread count in a process-wide variable, and two fits on
  threads of one process crashed it (a segfault in ``lib_lightgbm.so``, once in eight
  fits of MQ2008 with the CRM fallback). Each fit takes its share of the cores when it
  starts (:func:`~clickrank._core._threads.fit_threads`): one thread while the members left keep
  every core busy, all of them for the last one, whose trees and lambdas then run on every
  core with the bits of one. The members with session lists (Unbiased LambdaMART, whose
  session pass adds to every round) are sent first. The processes are started by
  ``spawn`` (a fork of a process that ran OpenMP can hang); the job is sent through the
  pool's initializer and unpickled once in each, and its members share their folds and
  binned features there (:data:`WORKER`).
* :class:`SparkBackend`: one Spark task per member and call, the job broadcast once; each
  task sends its fitted selection back (its model and out-of-fold scores; fitted up to a
  fold, its fold models, to be sent on).
"""

from __future__ import annotations

import multiprocessing
import pickle
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from .._core._threads import share_cores
from .._core._validation import InputError
from ..selection import LambdaMARTCV
from . import thresholds

__all__ = [
    "LocalBackend",
    "MemberFit",
    "MemberJob",
    "MemberTask",
    "ProcessBackend",
    "SparkBackend",
    "WORKER",
    "fit_member",
    "open_backend",
    "spark_session",
]


@dataclass(frozen=True)
class MemberJob:
    """What every member's selection needs, sent once to each process or executor.

    Attributes
    ----------
    data : RankingData
        The training queries.
    validation : ClickValidation
        The estimate each selection chooses its trees on.
    reference : numpy.ndarray or None
        The logging ranker's scores (PRPO and CRM stay close to them).
    targets : dict
        Member -> its :class:`~clickrank.targets.Target`.
    grid : tuple of dict
        The tree shapes of every member.
    settings : dict
        The other :class:`~clickrank.selection.LambdaMARTCV` parameters but ``n_jobs``.
    shapes : dict or None
        Member -> the one tree shape it tries instead of ``grid`` (the fallback).
    """

    data: Any
    validation: Any
    reference: Any
    targets: dict[str, Any]
    grid: tuple
    settings: dict[str, Any]
    shapes: dict[str, dict] | None = None

    def selection(self, name: str, n_jobs: int, grid: tuple | None = None) -> LambdaMARTCV:
        """Member ``name``'s selection, unfitted, on ``n_jobs`` threads; ``grid``: its tree
        shapes (None: its one shape of ``shapes``, else ``grid``)."""
        shape = (self.shapes or {}).get(name)
        if grid is None:
            grid = self.grid if shape is None else (shape,)
        return LambdaMARTCV(grid=grid, n_jobs=n_jobs, **self.settings)


@dataclass(frozen=True)
class MemberTask:
    """One member to fit: from the start (``selection`` None, on the tree shapes ``grid``,
    None: the job's) or on from a selection fitted up to a fold, up to fold ``until``
    (None: to the end)."""

    name: str
    selection: LambdaMARTCV | None = None
    until: int | None = None
    grid: tuple | None = None


@dataclass(frozen=True)
class MemberFit:
    """A member's selection as a task left it: fitted to the end, or up to fold ``until``
    (then :attr:`LambdaMARTCV.held_terms_` holds its first fold's per-query scores)."""

    name: str
    selection: LambdaMARTCV
    until: int | None = None


def fit_member(job: MemberJob, task: MemberTask, shared: dict | None, threads: int = 1,
               progress: Callable | None = None) -> MemberFit:  # fmt: skip
    """Run one task: the member's selection started or resumed, up to ``task.until``.

    Parameters
    ----------
    job : MemberJob
    task : MemberTask
    shared : dict or None
        The folds and binned features the members of a job share
        (:meth:`LambdaMARTCV.fit` ``shared``).
    threads : int
        The selection's threads.
    progress : callable, optional
        Hears the selection's lines.
    """
    kw = {"validation": job.validation, "reference": job.reference, "shared": shared,
          "progress": progress, "until": task.until}  # fmt: skip
    target = job.targets[task.name]
    if task.selection is None:
        cv = job.selection(task.name, threads, task.grid).fit(job.data, target, **kw)
    else:
        cv = task.selection.resume(job.data, target, **kw)
    return MemberFit(task.name, cv, task.until)


def _quiet(_line: str) -> None:
    """Progress heard by no one."""


def _fold_line(say: Callable, member: str, line: str) -> None:
    """A member's selection line said after each fold (its per-shape lines are summed up by
    the member's own line after the fit)."""
    if line.lstrip().startswith("fold"):
        say(f"  {member}: {line.strip()}")


@dataclass
class LocalBackend:
    """The members one after the other here, each on ``threads`` threads; ``shared``: the
    folds and binned features, kept for every call (and the fallback's)."""

    job: MemberJob
    threads: int = 1
    shared: dict = field(default_factory=dict)
    say: Callable = _quiet

    def run(self, tasks: list[MemberTask]) -> dict[str, MemberFit]:
        """Each task's fit, by member."""
        return {t.name: fit_member(self.job, t, self.shared, self.threads,
                                   lambda line, m=t.name: _fold_line(self.say, m, line))
                for t in tasks}  # fmt: skip

    def close(self) -> None:
        """Nothing to release."""


class _WorkerState:
    """A member process's job, unpickled once when the process starts, with the folds and
    binned features its members share and the count of members not yet fitted (whose
    cores the process's fits share)."""

    def __init__(self) -> None:
        self.job: MemberJob | None = None
        self.shared: dict = {}
        self.left: Any = None

    def receive(self, payload: bytes, cores: int, left: Any) -> None:
        """The process's start: unpickle the job; its fits share ``cores`` with the other
        processes (``left``: the members not yet fitted)."""
        self.job, self.shared, self.left = pickle.loads(payload), {}, left
        share_cores(cores, left)

    def run(self, task: bytes) -> bytes:
        """One pickled task's pickled :class:`MemberFit`; its core then goes to the members
        still fitting."""
        try:
            return pickle.dumps(fit_member(self.job, pickle.loads(task), self.shared))
        finally:
            with self.left.get_lock():
                self.left.value -= 1


#: The state of a member process (:class:`ProcessBackend`); unused in the parent.
WORKER = _WorkerState()


def _start_worker(payload: bytes, cores: int, left: Any) -> None:
    WORKER.receive(payload, cores, left)


def _run_in_worker(task: bytes) -> bytes:
    return WORKER.run(task)


@contextmanager
def _main_not_rerun() -> Iterator[None]:
    """While member processes start: hide the caller's main module from ``spawn``.

    ``spawn`` runs the parent's main script again in every child, so a user's script
    without the ``if __name__ == "__main__":`` guard would fit again there (Python stops
    it with a RuntimeError). The members need nothing from that module (their job holds
    clickrank objects only), so its path and spec are hidden from ``multiprocessing``
    meanwhile and restored after.
    """
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    try:
        main.__dict__.pop("__file__", None)
        main.__dict__["__spec__"] = None
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class ProcessBackend:
    """The members at once on ``cores`` spawned processes, kept open between calls until
    :meth:`close`; ``say`` hears each member as it finishes."""

    def __init__(self, job: MemberJob, cores: int, say: Callable = _quiet) -> None:
        self.job, self.cores, self.say = job, int(cores), say
        self.workers = min(self.cores, len(job.targets))
        context = multiprocessing.get_context("spawn")
        self.left = context.Value("i", len(job.targets))  # members not yet fitted
        self._open = ExitStack()  # the caller's main stays hidden while processes may start
        self._open.enter_context(_main_not_rerun())
        self.pool = self._open.enter_context(
            ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start_worker,
                                initargs=(pickle.dumps(job), self.cores, self.left))
        )  # fmt: skip

    def run(self, tasks: list[MemberTask]) -> dict[str, MemberFit]:
        """Each task's fit, by member (sent session lists first, returned in task order)."""
        with self.left.get_lock():
            self.left.value = len(tasks)
        targets = self.job.targets
        first = sorted(tasks, key=lambda t: targets[t.name].sessions is None)
        sent = {self.pool.submit(_run_in_worker, pickle.dumps(t)): t for t in first}
        blobs = {}
        for done in as_completed(sent):  # said as they finish
            t = sent[done]
            blobs[t.name] = done.result()
            upto = "" if t.until is None else f" up to fold {t.until}"
            self.say(f"  {t.name}: fitted{upto} ({len(blobs)} of {len(sent)} members, "
                     f"{self.workers} processes)")  # fmt: skip
        return {t.name: pickle.loads(blobs[t.name]) for t in tasks}

    def close(self) -> None:
        """Stop the processes and show the main module again."""
        self._open.close()


def _spark_task(job: bytes, task: bytes) -> bytes:
    """One member's task on a Spark executor: its own folds, for its fit and its first
    fold's terms."""
    return pickle.dumps(fit_member(pickle.loads(job), pickle.loads(task), {}))


class SparkBackend:
    """The members as Spark tasks of ``spark``'s session
    (:class:`clickrank.engine.tasks.SparkTasks`), the job broadcast once until
    :meth:`close`."""

    def __init__(self, job: MemberJob, spark: Any) -> None:
        from ..engine.tasks import SparkTasks

        self.tasks = SparkTasks(spark, pickle.dumps(job))

    def run(self, tasks: list[MemberTask]) -> dict[str, MemberFit]:
        """Each task's fit, by member, one Spark task each."""
        out = self.tasks.map(_spark_task, [pickle.dumps(t) for t in tasks])
        return {t.name: pickle.loads(b) for t, b in zip(tasks, out, strict=True)}

    def close(self) -> None:
        """Drop the broadcast job."""
        self.tasks.close()


@contextmanager
def open_backend(job: MemberJob, *, spark: Any = None, n_jobs: int = 1, shared: dict | None = None,
                 say: Callable | None = None) -> Iterator[Any]:  # fmt: skip
    """The backend for ``job``, closed after use.

    Parameters
    ----------
    job : MemberJob
    spark : SparkSession, optional
        Fit the members as its Spark tasks.
    n_jobs : int
        Cores: below :data:`~clickrank.training.thresholds.PROCESSES_FROM` documents (read
        when called), or with one member, each member's threads here; from there, members
        fitted at once in processes.
    shared : dict, optional
        The folds and binned features kept here across calls.
    say : callable, optional
        Hears progress lines.
    """
    say = say if say is not None else _quiet
    if spark is not None:
        backend: Any = SparkBackend(job, spark)
    elif min(int(n_jobs), len(job.targets)) <= 1 or job.data.n_docs < thresholds.PROCESSES_FROM:
        backend = LocalBackend(job, n_jobs, {} if shared is None else shared, say)
    else:
        backend = ProcessBackend(job, n_jobs, say)
    try:
        yield backend
    finally:
        backend.close()


def spark_session(engine: str, log: Any) -> Any:
    """The Spark session the members are fitted on (``engine`` "spark", or "auto" with a
    Spark log), or None (locally).

    Raises
    ------
    InputError
        For ``engine="spark"`` without a Spark log.
    """
    from ..engine import is_spark

    if engine == "spark" and not is_spark(log):
        raise InputError("engine='spark' fits the members as Spark tasks: the log must be a "
                         "Spark DataFrame (clickrank train --engine spark)")  # fmt: skip
    if engine == "local" or not is_spark(log):
        return None
    return log.sparkSession
