"""A click log as the estimators take it: polars (lazy) or Spark, with its columns checked."""

from __future__ import annotations

import os
from typing import Any

import polars as pl

from .._core._validation import InputError, LogSchemaError
from ._detect import is_spark
from ._queries import log_schema

__all__ = ["as_lazy", "require_columns"]


def as_lazy(log: Any) -> pl.LazyFrame:
    """Return ``log`` as a LazyFrame (a Spark DataFrame stays one, see :mod:`clickrank.engine`);
    paths (parquet file/folder/glob, CSV) go through :func:`clickrank.clicklog.read_log`, which
    validates the schema and values."""
    if isinstance(log, pl.LazyFrame):
        return log
    if isinstance(log, pl.DataFrame):
        return log.lazy()
    if is_spark(log):  # aggregated by clickrank.engine on Spark
        from ._spark import normalize

        return normalize(log)
    if isinstance(log, str | os.PathLike):
        p = str(log)
        from ..clicklog import read_log

        return read_log(p, lazy=True, validate=True)
    raise InputError(
        "log must be a polars DataFrame, LazyFrame, Spark DataFrame or a parquet path, "
        f"got {type(log).__name__}"
    )


def require_columns(lf: Any, columns: tuple[str, ...], *, what: str) -> pl.Schema:
    """Check that the log (polars or Spark) has ``columns`` (schema only, no data read)."""
    schema = log_schema(lf)
    missing = [c for c in columns if c not in schema]
    if missing:
        raise LogSchemaError(
            f"{what} needs column(s) {', '.join(map(repr, missing))}; the log has "
            f"{', '.join(schema.names())}"
        )
    if not schema["position"].is_integer():
        raise LogSchemaError(f"position must be an integer column, got {schema['position']}")
    if schema["click"] != pl.Boolean and not schema["click"].is_integer():
        raise LogSchemaError(f"click must be Boolean (or 0/1 integers), got {schema['click']}")
    return schema
