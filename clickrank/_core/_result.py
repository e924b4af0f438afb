"""The contract every result class of clickrank shares.

A result (propensities, an evaluation, a comparison, an online experiment, a
power curve, a fidelity study, a click-model comparison) is an immutable
object that

* prints a readable :meth:`~Result.summary` (``str(result)`` is the same),
* gives its intervals as a :class:`polars.DataFrame` (:meth:`~Result.conf_int`),
* converts to a JSON-ready dict and back (:meth:`~Result.to_dict`,
  :meth:`~Result.from_dict`; ``from_dict(to_dict(r)) == r``); the dict is the
  one schema that ``summary.json`` and the report read,
* saves itself atomically as JSON with a ``format`` key and a ``version``
  (:meth:`~Result.save`, :meth:`~Result.load`), and
* draws itself, where it has a figure, into a pyplot-free
  :class:`matplotlib.figure.Figure` (:meth:`~Result.plot`, saved atomically
  through :mod:`clickrank._core._figures`).

Two results are equal when they are of the same class and their dicts are
equal (NaN equals NaN).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, ClassVar, Self

import polars as pl

from ._io import atomic_write_text, check_output, json_default, read_json
from ._validation import DataFormatError, InputError

__all__ = ["Result", "check_format"]


def _canonical(x: Any) -> Any:
    """``x`` with NaN replaced by a marker, tuples by lists: a value ``==`` can compare."""
    if isinstance(x, float) and math.isnan(x):
        return ("nan",)
    if isinstance(x, dict):
        return {k: _canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    return x


def check_format(obj: Any, fmt: str, version: int, *, path: Any = None) -> dict:
    """Check a loaded object's ``format`` and ``version`` keys (both optional in the object).

    Raises
    ------
    DataFormatError
        If ``obj`` is not a JSON object, names another format, or has a newer
        version than this clickrank reads.
    """
    if not isinstance(obj, dict):
        raise DataFormatError(
            f"expected a JSON object ({fmt}), got {type(obj).__name__}", path=path
        )
    got = obj.get("format", fmt)
    if got != fmt:
        raise DataFormatError(f"expected format {fmt!r}, the file holds {got!r}", path=path)
    v = obj.get("version", version)
    if not isinstance(v, int) or v > version:
        raise DataFormatError(
            f"{fmt} version {v!r} is newer than this clickrank reads ({version}); "
            "upgrade clickrank",
            path=path,
        )
    return obj


class Result:
    """Base of clickrank's result classes (see the module docstring for the contract).

    Subclasses set :attr:`FORMAT` (the ``format`` key of their files) and
    implement :meth:`to_dict`, :meth:`from_dict`, :meth:`summary` and
    :meth:`conf_int`; :meth:`save`, :meth:`load`, equality and ``str`` come
    from here. :meth:`plot` is implemented by results that have a figure.
    """

    FORMAT: ClassVar[str] = "clickrank.result"
    VERSION: ClassVar[int] = 1

    # -- to implement ------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready dict of the result (numbers, strings, lists, dicts; null for NaN)."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, d: dict) -> Self:
        """Rebuild the result from :meth:`to_dict` (derived keys are ignored)."""
        raise NotImplementedError

    def summary(self) -> str:
        """A readable, plain-text summary."""
        raise NotImplementedError

    def conf_int(self, alpha: float = 0.05) -> pl.DataFrame:
        """Confidence intervals at level ``1 - alpha`` as a frame with ``lower`` and ``upper``."""
        raise NotImplementedError

    def plot(self, *, ax: Any = None, path: str | os.PathLike | None = None):
        """Draw the result; returns a :class:`matplotlib.figure.Figure` (PNG at ``path``)."""
        raise NotImplementedError(f"{type(self).__name__} has no figure")

    # -- shared ------------------------------------------------------------------------
    @classmethod
    def _fields_in(cls, d: dict) -> dict:
        """The constructor arguments (dataclass fields) found in ``d``; derived keys dropped."""
        return {f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d}  # type: ignore[arg-type]

    def save(self, path: str | os.PathLike, *, overwrite: bool = True) -> Path:
        """Write the result as JSON atomically, with its ``format`` and ``version``."""
        path = Path(path)
        check_output(path, force=overwrite, what="", hint="overwrite=True")
        obj = {"format": self.FORMAT, "version": self.VERSION, **self.to_dict()}
        text = json.dumps(obj, indent=2, default=json_default)
        atomic_write_text(path, text + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Self:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        obj = check_format(read_json(path), cls.FORMAT, cls.VERSION, path=path)
        body = {k: v for k, v in obj.items() if k not in ("format", "version")}
        try:
            return cls.from_dict(body)
        except (KeyError, TypeError, ValueError, InputError) as err:
            raise DataFormatError(f"not a valid {cls.FORMAT} file: {err!r}", path=path) from None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return _canonical(self.to_dict()) == _canonical(other.to_dict())  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return self.summary()
