"""Memory and time estimates of a size option, checked before the work.

A size option (``--sessions``, ``--bootstrap``, ``--impressions``, ``--trees``,
``--top-k``, ...) gets a rough estimate of the memory its work holds at once
and of the time it takes. :func:`check_budget` refuses, in one line naming the
option and the estimate, what cannot fit in the memory available now, and
returns a one-line note of the estimate for long work (the caller prints it),
so a run that will take days says so before it starts. The per-unit figures
are rough lower bounds measured on clickrank's own workloads (2 cores).
"""

from __future__ import annotations

import os

from ._validation import InputError

__all__ = [
    "available_memory",
    "check_budget",
    "format_bytes",
    "format_seconds",
    "LONG_SECONDS",
]

#: Work estimated to take longer than this gets a note with the estimate.
LONG_SECONDS = 60.0


def available_memory() -> int | None:
    """Bytes of memory available to new allocations (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units (``1.5 GiB``)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f}"  # pragma: no cover


def format_seconds(s: float) -> str:
    """A duration in the largest fitting unit (``3.2 hours``, ``11.6 days``)."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600),
                       ("minutes", 60)):  # fmt: skip
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s:,.1f} seconds"


def check_budget(
    option: str,
    value: float,
    *,
    memory: float,
    seconds: float | None = None,
    available: int | None = None,
) -> str | None:
    """Refuse work whose memory estimate exceeds the available memory; note long work.

    Parameters
    ----------
    option : str
        The option (or options) that size the work, as the user typed them (``--bootstrap``).
    value : number
        Its value, shown in the message.
    memory : float
        Estimated bytes held at once.
    seconds : float, optional
        Estimated time (a lower bound).
    available : int, optional
        Memory available (default: :func:`available_memory`; None if unknown).

    Returns
    -------
    str or None
        ``"estimate: --sessions 1,000,000,000,000: at least 11.6 days, about 180.0 MiB of
        memory"`` when the work takes longer than :data:`LONG_SECONDS`, else None.

    Raises
    ------
    InputError
        One line naming the option, the estimate and the memory available.
    """
    avail = available_memory() if available is None else available
    shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
    if avail is not None and memory > avail:
        when = f" and at least {format_seconds(seconds)}" if seconds and seconds >= 1 else ""
        raise InputError(
            f"{option} {shown}: needs about {format_bytes(memory)} of memory{when}, but "
            f"{format_bytes(avail)} are available; choose a smaller {option.split(' ')[0]}"
        )
    if seconds is not None and seconds > LONG_SECONDS:
        return (
            f"estimate: {option} {shown}: at least {format_seconds(seconds)}, about "
            f"{format_bytes(memory)} of memory"
        )
    return None
