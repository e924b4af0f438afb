"""The aggregation queries of the estimators and targets, on either engine.

Each function takes a click log -- a polars LazyFrame/DataFrame or a Spark
DataFrame -- runs one aggregation on the log's engine and returns a small
polars DataFrame (or a number). The polars plans are the ones the
estimators always ran (streaming engine); :mod:`._spark` holds their Spark
translation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from . import _spark
from ._detect import is_spark
from .polars import grouped_counts, where_expr, with_buckets

__all__ = [
    "log_schema",
    "counts",
    "co_clicks",
    "n_unique",
    "n_unique_by",
    "position_range",
    "doc_counts",
    "preference_counts",
    "session_patterns",
    "fairpairs_sessions",
]


def _lazy(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    return log.lazy() if isinstance(log, pl.DataFrame) else log


def log_schema(log: Any) -> pl.Schema:
    """Column names and polars dtypes of a log (no data read)."""
    if is_spark(log):
        return _spark.spark_schema(log)
    return _lazy(log).collect_schema()


def counts(
    log: Any,
    by: Sequence[str],
    *,
    where: Mapping[str, Any] | None = None,
    buckets: int = 0,
    seed: int = 0,
) -> pl.DataFrame:
    """Impressions ``n`` and clicks ``c`` (Float64) per group of ``by``, sorted.

    Parameters
    ----------
    log : polars LazyFrame/DataFrame or Spark DataFrame
    by : list of str
        Group columns.
    where : dict, optional
        Keep rows with ``column == value`` for every item (strings compare
        the column cast to String, so Categorical columns work).
    buckets, seed : int
        With ``buckets > 0``, also group by the session bucket
        (:data:`clickrank.propensity._stats.BUCKET`) of the bootstrap.
    """
    if is_spark(log):
        return _spark.counts(log, by, where=where, buckets=buckets, seed=seed)
    lf = _lazy(log)
    if where:
        lf = lf.filter(where_expr(where))
    return grouped_counts(with_buckets(lf, buckets, seed), list(by), buckets).collect(
        engine="streaming"
    )


def co_clicks(
    log: Any, *, where: Mapping[str, Any] | None = None, buckets: int = 0, seed: int = 0
) -> pl.DataFrame:
    """Clicks ``cc`` per position (and bucket) in the sessions clicked at slot 1 (Spark only:
    the polars path keeps its constant-memory pass in :mod:`clickrank.propensity._randomized`)."""
    return _spark.co_clicks(log, where=where, buckets=buckets, seed=seed)


def n_unique(log: Any, col: str) -> int:
    """Distinct values of ``col`` in the log."""
    if is_spark(log):
        return _spark.n_unique(log, col)
    return int(_lazy(log).select(pl.col(col).n_unique()).collect().item())


def n_unique_by(log: Any, by: str, col: str) -> pl.DataFrame:
    """Distinct values of ``col`` per ``by``: columns ``by`` and ``n``."""
    if is_spark(log):
        return _spark.n_unique_by(log, by, col)
    return _lazy(log).group_by(by).agg(pl.col(col).n_unique().alias("n")).collect()


def position_range(log: Any) -> tuple[Any, Any]:
    """``(min, max)`` of ``position`` ((None, None) for an empty log)."""
    if is_spark(log):
        return _spark.position_range(log)
    got = (
        _lazy(log)
        .select(pl.col("position").min().alias("lo"), pl.col("position").max().alias("hi"))
        .collect()
    )
    return got.row(0)


def doc_counts(log: Any, exprs: Sequence[pl.Expr], by: Sequence[str] = ()) -> pl.DataFrame:
    """``exprs`` aggregated per (query, doc, *by).

    On Spark the expressions are recognised by their output names:
    ``clicks`` (sum of clicks), ``shown`` (rows) and ``top`` (largest position).
    """
    if is_spark(log):
        return _spark.doc_counts(log, by, [e.meta.output_name() for e in exprs])
    return _lazy(log).group_by(["query", "doc", *by]).agg(list(exprs)).collect()


def preference_counts(
    log: Any, rules: Sequence[str], adjacent: Mapping[str, int]
) -> tuple[pl.DataFrame, int]:
    """Spark only: see :func:`._spark.preference_counts`."""
    return _spark.preference_counts(log, rules, adjacent)


def session_patterns(log: Any, keys: pl.DataFrame) -> pl.DataFrame:
    """Spark only: see :func:`._spark.session_patterns`."""
    return _spark.session_patterns(log, keys)


def fairpairs_sessions(log: Any) -> tuple[Any, int, Any, Any]:
    """Spark only: see :func:`._spark.fairpairs_sessions`."""
    return _spark.fairpairs_sessions(log)
