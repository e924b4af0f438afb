"""Where the aggregation step runs: polars (one machine) or Apache Spark (a cluster).

Every estimator and target of clickrank reduces a click log to small
sufficient statistics (counts per position, per swapped pair, per (query,
doc, position) cell, per preference pair) and then solves a small problem in
numpy. Only the first step reads the log, so only it needs to scale out.
This package holds that step as a handful of *queries* (:mod:`._queries`):
grouped impressions and clicks under an equality filter, optionally per
session bucket of the bootstrap; co-clicks with slot 1; distinct sessions;
counts per document; preference pairs. Each query runs on a polars
LazyFrame (the streaming engine, as before) or on a ``pyspark.sql.DataFrame``
(:mod:`._spark`), and returns a small :class:`polars.DataFrame`: the code
after it -- fits, intervals, bootstrap replicates, targets -- is the same for
both engines.

A Spark DataFrame is recognised at the boundary (:func:`is_spark`) without
importing pyspark, so ``import clickrank`` never needs it; pyspark is the
optional extra ``clickrank[spark]``. :func:`spark_session` starts (or reuses)
a session, :func:`read_spark_log` reads a parquet folder or a Hive table
into a log DataFrame (:func:`read_spark_source`: any parquet source, such as
a feature table), :func:`to_spark` turns a polars log into one and
:func:`to_polars` a small Spark result back into polars, and
:func:`clickrank.engine.simulate.simulate_spark` simulates a log on Spark
executors, session ranges per partition, with the same rows as
:func:`clickrank.simulation.simulate` (a module of its own: it imports the
simulation, which the estimators do not need).
"""

from __future__ import annotations

from ._detect import engine_of, is_spark, require_spark
from ._input import as_lazy, require_columns
from ._queries import (
    co_clicks,
    counts,
    doc_counts,
    fairpairs_sessions,
    log_schema,
    n_unique,
    n_unique_by,
    position_range,
    preference_counts,
    session_patterns,
)
from ._session import read_spark_log, read_spark_source, spark_session, to_spark
from ._spark import to_polars

__all__ = [
    "as_lazy",
    "require_columns",
    "is_spark",
    "engine_of",
    "require_spark",
    "log_schema",
    "counts",
    "co_clicks",
    "doc_counts",
    "fairpairs_sessions",
    "n_unique",
    "n_unique_by",
    "position_range",
    "preference_counts",
    "session_patterns",
    "spark_session",
    "read_spark_log",
    "read_spark_source",
    "to_spark",
    "to_polars",
]
