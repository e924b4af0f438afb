"""A minimal progress bar on standard error, so the library needs no CLI package.

:func:`progress` serves both shapes the library and the CLI use: a context
manager with ``update(n)`` over a known total, and a wrapper that iterates an
iterable and counts its items. When ``enabled`` is false, or standard error is
not a terminal, it draws nothing but the label line (a log file then gets one
line, not thousands of carriage returns).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

__all__ = ["Progress", "progress"]

_WIDTH = 36


class Progress:
    """A progress bar over ``total`` steps (see :func:`progress`)."""

    def __init__(
        self,
        total: int | None,
        *,
        label: str,
        enabled: bool,
        items: Iterable[Any] | None = None,
        file: IO[str] | None = None,
        min_interval: float = 0.1,
    ) -> None:
        self.total = None if total is None else max(int(total), 0)
        self.label = label
        self.enabled = bool(enabled)
        self.done = 0
        self._items = items
        self._file = file
        self._min_interval = min_interval
        self._last = 0.0
        self._open = False

    @property
    def _out(self) -> IO[str]:
        return self._file if self._file is not None else sys.stderr

    def _tty(self) -> bool:
        isatty = getattr(self._out, "isatty", None)
        return bool(isatty and isatty())

    def __enter__(self) -> Progress:
        if self.enabled and not self._open:
            self._open = True
            if not self._tty():
                self._out.write(f"{self.label}\n")
                self._out.flush()
            else:
                self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open:
            if self._tty():
                self._draw(force=True)
                self._out.write("\n")
                self._out.flush()
            self._open = False

    def __iter__(self) -> Iterator[Any]:
        if self._items is None:
            raise TypeError("this progress bar counts a total; call update(n)")
        with self:
            for item in self._items:
                yield item
                self.update(1)

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` steps."""
        self.done += int(n)
        if self._open and self._tty():
            self._draw()

    def render(self) -> str:
        """The bar as text, e.g. ``simulating  [#########---]   75%``."""
        if not self.total:
            return f"{self.label}  {self.done:,}"
        frac = min(self.done / self.total, 1.0)
        filled = int(round(frac * _WIDTH))
        return f"{self.label}  [{'#' * filled}{'-' * (_WIDTH - filled)}]  {frac:5.0%}"

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self._min_interval:
            return
        self._last = now
        self._out.write("\r" + self.render())
        self._out.flush()


def progress(
    iterable_or_total: Iterable[Any] | int, *, label: str, enabled: bool = True
) -> Progress:
    """A progress bar on standard error over an iterable or a number of steps.

    Parameters
    ----------
    iterable_or_total : iterable or int
        Iterate the returned bar to walk the iterable (one step per item), or
        give the number of steps and call ``update(n)`` inside ``with``.
    label : str
        Printed before the bar.
    enabled : bool
        False draws nothing (the calls still work).

    Examples
    --------
    >>> with progress(3, label="work", enabled=False) as bar:
    ...     bar.update(2)
    >>> bar.done
    2
    >>> sum(progress([1, 2, 3], label="sum", enabled=False))
    6
    """
    if isinstance(iterable_or_total, int):
        return Progress(iterable_or_total, label=label, enabled=enabled)
    total = len(iterable_or_total) if hasattr(iterable_or_total, "__len__") else None
    return Progress(total, label=label, enabled=enabled, items=iterable_or_total)
