"""Errors and boundary checks shared by every module.

Every error raised on purpose by clickrank is a :class:`ClickRankError`, so a
caller (and the CLI) can catch the whole family at once. Messages name the
file, line, column or argument at fault and what was expected.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ClickRankError",
    "InputError",
    "DataFormatError",
    "LogSchemaError",
    "ConfigError",
    "NotFittedError",
    "EstimationError",
    "OutputError",
    "check_qptr",
    "check_choice",
    "check_probability",
    "check_positive",
    "check_non_negative",
    "check_fraction",
    "check_alpha",
    "check_is_fitted",
    "check_theta_scale",
    "check_jobs",
    "available_cpus",
    "follows_load",
    "free_cpus",
    "ClickRankWarning",
]


class ClickRankError(Exception):
    """Base class of every error clickrank raises on purpose."""


class InputError(ClickRankError, ValueError):
    """An argument has a wrong value, shape or type."""


class DataFormatError(ClickRankError, ValueError):
    """A data file is malformed; the message names the file and line.

    Parameters
    ----------
    message : str
        What is wrong and what was expected.
    path : str or Path, optional
        The file at fault.
    line : int, optional
        1-based line number in ``path``.
    column : str, optional
        Column (or field) at fault.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.column = column
        where = []
        if self.path is not None:
            where.append(self.path if line is None else f"{self.path}:{line}")
        elif line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class LogSchemaError(DataFormatError):
    """A click log violates the schema (missing column, bad dtype or value)."""


class ConfigError(ClickRankError, ValueError):
    """A run configuration has an unknown key or a bad value."""


class NotFittedError(ClickRankError, AttributeError):
    """An estimator was used before ``fit``."""


class EstimationError(ClickRankError, RuntimeError):
    """A quantity cannot be estimated from the data given (not identified)."""


class OutputError(ClickRankError, OSError):
    """An output could not be written (full disk, read-only file system, permissions).

    Also an :class:`OSError`, so code that catches OS errors still catches it;
    the message names the output and the reason.
    """


class ClickRankWarning(UserWarning):
    """Something clickrank accepts but the user should know (the CLI prints it as one line)."""


def check_qptr(qptr: Any, n_rows: int | None = None, *, name: str = "qptr") -> np.ndarray:
    """Return ``qptr`` as int64 offsets ``[0, ..., n_rows]``, non-decreasing.

    Raises
    ------
    InputError
        If ``qptr`` is not a 1-d non-decreasing integer array starting at 0
        and ending at ``n_rows``.
    """
    arr = np.asarray(qptr)
    if arr.ndim != 1 or arr.size < 1:
        raise InputError(f"{name} must be a 1-d array of query offsets, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(arr == np.floor(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InputError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr[0] != 0:
        raise InputError(f"{name}[0] must be 0, got {arr[0]}")
    if np.any(np.diff(arr) < 0):
        bad = int(np.flatnonzero(np.diff(arr) < 0)[0])
        raise InputError(f"{name} must be non-decreasing; {name}[{bad + 1}] < {name}[{bad}]")
    if n_rows is not None and arr[-1] != n_rows:
        raise InputError(f"{name}[-1] must equal the number of rows ({n_rows}), got {arr[-1]}")
    return arr


def check_choice(value: Any, choices: Iterable[Any], *, name: str) -> Any:
    """Raise :class:`InputError` unless ``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def _as_float(value: Any, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(out):
        raise InputError(f"{name} must be finite, got {value!r}")
    return out


def check_probability(value: Any, *, name: str) -> float:
    """Return ``value`` as a float in [0, 1] or raise :class:`InputError`."""
    out = _as_float(value, name)
    if not 0.0 <= out <= 1.0:
        raise InputError(f"{name} must be a probability in [0, 1], got {value!r}")
    return out


def check_fraction(value: Any, *, name: str) -> float:
    """Alias of :func:`check_probability` for shares of sessions or queries."""
    return check_probability(value, name=name)


def check_alpha(value: Any, *, name: str = "alpha") -> float:
    """Return a test / interval level ``alpha`` in the open interval (0, 1), else raise.

    ``alpha = 0`` would ask for infinitely wide intervals ([-inf, inf]) and
    ``alpha = 1`` for empty ones; both are refused.
    """
    out = _as_float(value, name)
    if not 0.0 < out < 1.0:
        raise InputError(
            f"{name} must be in (0, 1) (intervals have level 1 - {name}), got {value!r}"
        )
    return out


def check_positive(value: Any, *, name: str, integer: bool = False) -> float | int:
    """Return ``value`` if it is > 0 (an int if ``integer``), else raise."""
    out = _as_float(value, name)
    if out <= 0:
        raise InputError(f"{name} must be > 0, got {value!r}")
    if integer:
        if out != int(out):
            raise InputError(f"{name} must be a whole number, got {value!r}")
        return int(out)
    return out


def check_non_negative(value: Any, *, name: str, integer: bool = False) -> float | int:
    """Return ``value`` if it is >= 0 (an int if ``integer``), else raise."""
    out = _as_float(value, name)
    if out < 0:
        raise InputError(f"{name} must be >= 0, got {value!r}")
    if integer:
        if out != int(out):
            raise InputError(f"{name} must be a whole number, got {value!r}")
        return int(out)
    return out


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: How long a measure of :func:`free_cpus` holds (seconds): one run resolves ``"auto"`` for
#: several learners, and the load changes slower than that.
FREE_CPUS_HOLD = 10.0
_free_cpus: tuple[float, int] | None = None  # (when measured, CPUs free)


def free_cpus(window: float = 0.1) -> int:
    """The available CPUs (:func:`available_cpus`) not kept busy by other processes.

    On Linux the busy time of this process's CPUs in ``/proc/stat`` over ``window``
    seconds, less this process's own CPU time, is the number of cores others use (one
    CPU-bound process elsewhere: one); what is left, at least one, is what ``"auto"``
    threads take, and the most a fit's threads take
    (:func:`~clickrank._core._threads.fit_threads`). More threads than free cores only
    wait for each other: an OpenMP barrier waits for its slowest thread, and the threads
    waiting spin on the cores the others need. A measure holds for
    :data:`FREE_CPUS_HOLD` seconds. Elsewhere, where ``/proc/stat`` cannot be read, or
    with the environment variable ``CLICKRANK_FOLLOW_LOAD=0``: every available CPU.
    """
    global _free_cpus
    cpus = available_cpus()
    if not follows_load():
        return cpus
    now = time.monotonic()
    if _free_cpus is not None and now - _free_cpus[0] < FREE_CPUS_HOLD:
        return _free_cpus[1]
    try:
        ids = os.sched_getaffinity(0)
        busy0, own0, t0 = _busy_seconds(ids), sum(os.times()[:2]), time.monotonic()
        time.sleep(window)
        busy1, own1, t1 = _busy_seconds(ids), sum(os.times()[:2]), time.monotonic()
    except (AttributeError, OSError, ValueError):
        return cpus
    others = max(0.0, (busy1 - busy0) - (own1 - own0)) / max(t1 - t0, 1e-9)
    out = min(cpus, max(1, cpus - int(others + 0.5)))
    _free_cpus = (t1, out)
    return out


def follows_load() -> bool:
    """Whether threads follow the load (:func:`free_cpus`): unless the environment sets
    ``CLICKRANK_FOLLOW_LOAD=0``."""
    return os.environ.get("CLICKRANK_FOLLOW_LOAD", "1") != "0"


def _busy_seconds(ids: Iterable[int]) -> float:
    """CPU seconds the CPUs ``ids`` spent busy since boot (``/proc/stat``: every field but
    idle and iowait)."""
    want = {f"cpu{i}" for i in ids}
    ticks = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if name in want:
                values = [int(v) for v in fields[:8]]
                ticks += sum(values) - values[3] - values[4]
    return ticks / os.sysconf("SC_CLK_TCK")


def check_jobs(value: Any, *, name: str = "n_jobs") -> int:
    """Return a thread count in [1, CPUs available], else raise :class:`InputError`.

    The one bound of every thread option (``n_jobs`` of the estimators and of
    ``simulate``, ``--jobs`` of the CLI, ``[lambdamart] n_jobs``): more threads
    than CPUs gains nothing, and numba and LightGBM fail (or crash) far above it.
    """
    out = check_positive(value, name=name, integer=True)
    cpus = available_cpus()
    if out > cpus:
        raise InputError(
            f"{name} must be at most the {cpus} CPU(s) available to this process, got {value!r}"
        )
    return out


def check_is_fitted(estimator: Any, attribute: str) -> None:
    """Raise :class:`NotFittedError` if ``estimator`` lacks ``attribute``."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"this {type(estimator).__name__} is not fitted yet; call fit() before using it"
        )


def check_theta_scale(theta: Any, *, absolute: bool) -> list[str]:
    r"""Check that ``theta[p - 1]`` can be examination propensities; return warnings.

    Relative propensities (``absolute`` false, DESIGN §2) have
    :math:`\theta_1 = 1`; absolute ones are probabilities in [0, 1]; neither
    is negative. A relative :math:`\theta_p > 1` (a position examined more
    than the first: estimation noise, or an unusual layout) is allowed with a
    warning. NaN (not identified) entries are skipped.

    Raises
    ------
    InputError
        Naming the position and the value.
    """
    theta = np.asarray(theta, dtype=np.float64)
    finite = np.isfinite(theta)
    neg = np.flatnonzero(finite & (theta < 0))
    if neg.size:
        raise InputError(
            f"theta at position {neg[0] + 1} is {float(theta[neg[0]])!r}; "
            "propensities are examination probabilities and cannot be negative"
        )
    if absolute:
        big = np.flatnonzero(finite & (theta > 1))
        if big.size:
            raise InputError(
                f"theta at position {big[0] + 1} is {float(theta[big[0]])!r} > 1; "
                "absolute propensities are examination probabilities in [0, 1]"
            )
        return []
    if theta.size and finite[0] and abs(theta[0] - 1.0) > 1e-9:
        raise InputError(
            f"theta at position 1 is {float(theta[0])!r}; propensities relative to "
            "position 1 have theta_1 = 1 (divide by theta_1, or mark them absolute)"
        )
    return [
        f"position {p + 1}: theta = {theta[p]:.4g} > theta_1 = 1 (examined more than "
        "position 1: estimation noise or an unusual layout)"
        for p in np.flatnonzero(finite & (theta > 1))
    ]
