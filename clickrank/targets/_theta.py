"""Propensities as IPS weights: ``theta[p - 1]`` from arrays, result objects or JSON files,
and per impression (``theta[context, p - 1]``) from an estimate per context."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .._core._io import read_json
from .._core._validation import ClickRankWarning, DataFormatError, InputError, check_theta_scale

__all__ = ["as_theta", "read_theta", "ContextTheta", "context_theta"]


def as_theta(propensities: Any, *, allow_zero: bool = False) -> np.ndarray:
    """Propensities as float64 ``theta[p - 1]`` for positions ``p = 1..K``.

    Accepts an array-like or any object with a ``.theta`` array (such as
    :class:`clickrank.propensity.Propensities`). Raises :class:`InputError`
    for empty, non-finite, negative or (unless ``allow_zero``, for an
    estimator's propensities that will be clipped) zero values. A user's file
    is stricter: :func:`read_theta` refuses 0 whatever the clipping.
    """
    raw = getattr(propensities, "theta", propensities)
    try:
        theta = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"propensities must be numbers or have a .theta array, got {type(raw).__name__}"
        ) from None
    if theta.ndim != 1 or theta.size == 0:
        raise InputError(
            f"propensities must be a non-empty 1-d array theta[p-1], got shape {theta.shape}"
        )
    nan = np.flatnonzero(~np.isfinite(theta))
    if nan.size:
        raise InputError(
            f"propensity at position {nan[0] + 1} is {float(theta[nan[0]])!r} (not identified); "
            "IPS needs a finite theta at every logged position"
        )
    bad = np.flatnonzero(theta < 0 if allow_zero else theta <= 0)
    if bad.size:
        raise InputError(
            f"propensity at position {bad[0] + 1} is {float(theta[bad[0]])!r}; "
            "IPS needs theta > 0 at every position (or clipping, e.g. clip='auto')"
        )
    return theta


def read_theta(path: str | os.PathLike) -> np.ndarray:
    """Read propensities from JSON: ``{"theta": [...], ...}`` or a plain list.

    The object form is what :meth:`clickrank.propensity.Propensities.save`
    writes. Errors name the file; values are checked by :func:`as_theta` and
    :func:`clickrank._core._validation.check_theta_scale` (theta_1 = 1 unless the
    object says ``"absolute": true``). A relative theta_p > 1 is refused
    unless the file's own interval (``"lower"``, as ``Propensities.save``
    writes it) reaches 1 at p, which is estimation noise and gives a
    :class:`~clickrank._core._validation.ClickRankWarning`; booleans are refused.
    """
    p = Path(path)
    obj = read_json(p)
    absolute = isinstance(obj, dict) and obj.get("absolute") is True
    lower = obj.get("lower") if isinstance(obj, dict) else None
    upper = obj.get("upper") if isinstance(obj, dict) else None
    if isinstance(obj, dict):
        obj = obj.get("theta")
    if not isinstance(obj, list):
        raise DataFormatError(
            'expected a JSON list of numbers or an object with a "theta" list', path=p
        )
    for i, v in enumerate(obj):
        if isinstance(v, bool) or not (isinstance(v, (int, float)) or v is None):
            raise DataFormatError(
                f"theta at position {i + 1} is {json.dumps(v)[:40]}; expected a number "
                "(or null for a position that is not identified)",
                path=p,
                column="theta",
            )
    try:
        theta = as_theta([np.nan if v is None else v for v in obj], allow_zero=True)
        _check_no_zero(theta)
        notes = check_theta_scale(theta, absolute=absolute)
        _check_above_one(theta, lower)
    except InputError as err:
        raise DataFormatError(str(err), path=p, column="theta") from None
    notes += _rises(theta, lower, upper)
    for note in notes:
        warnings.warn(f"{p}: {note}", ClickRankWarning, stacklevel=2)
    return theta


def _check_no_zero(theta: np.ndarray) -> None:
    """A file's theta is refused at 0 (``-0.0`` too) whatever the clipping: a weight 1/0."""
    zero = np.flatnonzero(theta == 0)
    if zero.size:
        raise InputError(
            f"propensity at position {zero[0] + 1} is {float(theta[zero[0]])!r}; IPS needs "
            "theta > 0 at every position, whatever the clipping (a 0 is no estimate: log more "
            "sessions)"
        )


def _bound(values: Any, p: int, default: float) -> float:
    v = values[p] if isinstance(values, list) and p < len(values) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _rises(theta: np.ndarray, lower: Any, upper: Any) -> list[str]:
    """One note if theta rises from a position to a later one beyond their intervals.

    Examination falls with rank (DESIGN §3); a rise inside the file's own
    intervals (``"lower"``/``"upper"``, as ``Propensities.save`` writes them)
    is noise. Without intervals any rise is noted.
    """
    how = "beyond their intervals" if isinstance(upper, list) else "and no intervals given"
    for p in range(theta.size - 1):
        q = p + 1
        if theta[q] > theta[p] and _bound(lower, q, theta[q]) > _bound(upper, p, theta[p]):
            return [
                f"theta rises with position (theta_{q + 1} = {theta[q]:.4g} > theta_{p + 1} "
                f"= {theta[p]:.4g}, {how}); examination should not increase down the list: "
                "check the estimate"
            ]
    return []


def _check_above_one(theta: np.ndarray, lower: Any) -> None:
    """Refuse a relative theta_p > 1 unless the file's own interval at p reaches 1 (noise)."""
    for p in np.flatnonzero(np.isfinite(theta) & (theta > 1)):
        low = lower[p] if isinstance(lower, list) and p < len(lower) else None
        if isinstance(low, (int, float)) and not isinstance(low, bool) and low <= 1:
            continue  # an estimate whose interval includes 1: noise, warned about
        raise InputError(
            f"theta at position {p + 1} is {float(theta[p])!r} > theta_1 = 1 with no "
            "interval reaching 1 (a position examined more than the first): propensities "
            "are examination probabilities relative to position 1, at most 1"
        )


@dataclass(frozen=True, eq=False)
class ContextTheta:
    """θ per impression: one curve per context of the log, the pooled curve for the rest.

    Attributes
    ----------
    columns : tuple of str
        The log's context columns.
    values : tuple of tuple of str
        Each context's values in ``columns`` (row ``i`` of ``table``).
    table : numpy.ndarray
        float64 ``[C + 1, K]``: row ``i`` the curve of context ``values[i]`` (its
        empirical-Bayes estimate, :class:`clickrank.propensity.ContextCurves`), the last
        row the pooled curve, used for a context the estimate has not seen and at a
        position a context's curve does not identify.
    """

    columns: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    table: np.ndarray

    def _known(self) -> pl.DataFrame:
        """The contexts' values (as strings) with their row of ``table``, ``_context``."""
        return pl.DataFrame(
            [
                pl.Series(c, [v[j] for v in self.values], pl.String)
                for j, c in enumerate(self.columns)
            ]  # fmt: skip
        ).with_row_index("_context")

    def index(self, frame: pl.DataFrame) -> np.ndarray:
        """int64 row of ``table`` for every row of ``frame`` (which holds ``columns``)."""
        cols = list(self.columns)
        keys = frame.select(pl.col(c).cast(pl.String) for c in cols)
        joined = keys.join(self._known(), on=cols, how="left", nulls_equal=False,
                           maintain_order="left")  # fmt: skip
        out = joined["_context"].fill_null(len(self.values)).to_numpy()
        return out.astype(np.int64)

    def slot_positions(self, lf: Any) -> Any:
        """``lf`` (a LazyFrame with ``position`` and ``columns``) with ``position`` made the
        impression's slot ``row * K + position``, so that ``table.ravel()[slot - 1]`` is its
        propensity; the order of positions within a session is kept."""
        cols = list(self.columns)
        K = self.table.shape[1]
        return (
            lf.with_columns(pl.col(c).cast(pl.String) for c in cols)
            .join(self._known().lazy(), on=cols, how="left", maintain_order="left")
            .with_columns(
                pl.col("position")
                + K * pl.col("_context").fill_null(len(self.values)).cast(pl.Int64)
            )
            .drop("_context", *cols)
        )

    def clipped(self, tau: float) -> ContextTheta:
        """The curves with every propensity at least ``tau``."""
        return replace(self, table=np.maximum(self.table, tau))


def context_theta(propensities: Any, *, allow_zero: bool = False) -> ContextTheta | None:
    """The per-context curves of ``propensities`` (a result with ``.contexts``), or None.

    A :class:`clickrank.propensity.Propensities` estimated with ``context=`` carries them;
    anything else (an array, a pooled estimate, a file's curve) gives None and its pooled
    ``theta`` applies to every impression. A context's position that its own estimate does
    not identify (no clicks, not finite) takes the pooled value.
    """
    contexts = getattr(propensities, "contexts", None)
    if contexts is None:
        return None
    pooled = as_theta(propensities, allow_zero=allow_zero)
    curves = np.asarray(contexts.theta, dtype=np.float64)
    if curves.ndim != 2 or curves.shape[1] != pooled.size:
        raise InputError(
            f"per-context propensities must have shape [contexts, {pooled.size}], "
            f"got {list(curves.shape)}"
        )
    usable = np.isfinite(curves) & (curves > 0)
    table = np.vstack([np.where(usable, curves, pooled), pooled])
    return ContextTheta(tuple(contexts.columns), tuple(map(tuple, contexts.values)), table)
