"""Spark sessions and click logs as Spark DataFrames."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import polars as pl

from .._core._validation import DataFormatError, InputError, LogSchemaError
from ._detect import require_spark
from ._spark import normalize, spark_schema

__all__ = [
    "spark_session",
    "check_master",
    "read_spark_log",
    "read_spark_source",
    "to_spark",
    "spark_ready",
    "TABLE_PREFIX",
]

#: ``table:db.name`` names a Hive/metastore table instead of a path.
TABLE_PREFIX = "table:"


def check_master(master: str, timeout: float = 3.0) -> None:
    """Fail with one line if a ``spark://host:port`` master does not accept connections.

    Spark itself would retry for a minute and then print a Java stack trace;
    other masters (``local[*]``, ``yarn``, ``k8s://...``) are left to Spark.

    Raises
    ------
    InputError
        Naming the master and the network error.
    """
    if not master.startswith("spark://"):
        return
    for address in master[len("spark://") :].split(","):  # a list of masters (ZooKeeper HA)
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as err:
            reason = getattr(err, "strerror", None) or str(err)
    raise InputError(f"cannot reach the Spark master {master}: {reason}")


def spark_session(master: str | None = "local[*]", **conf: str) -> Any:
    """The active SparkSession, or a new one on ``master``.

    Parameters
    ----------
    master : str or None
        ``local[*]`` (all cores of this machine), ``local[2]``, ``yarn``,
        ``spark://host:7077``, ...; None, or a driver started by
        ``spark-submit``, leaves it to ``spark-submit``.
    **conf : str
        Spark settings, e.g. ``spark_sql_shuffle_partitions="8"`` (underscores
        become dots). With a ``local`` master the Python workers run this
        interpreter (``PYSPARK_PYTHON``, unless set).

    Raises
    ------
    InputError
        If pyspark or Java is missing, or a ``spark://`` master does not
        accept connections.
    """
    require_spark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if master and "PYSPARK_GATEWAY_PORT" not in os.environ:
        check_master(master)  # one line for a dead master, not a minute of retries
    builder = SparkSession.builder.appName("clickrank")
    if master and "PYSPARK_GATEWAY_PORT" not in os.environ:  # spark-submit's master wins
        builder = builder.master(master)
    if master and master.startswith("local"):  # the executors are this interpreter's children
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read_spark_log(source: str | os.PathLike, spark: Any = None) -> Any:
    """A click log as a Spark DataFrame: a parquet file or folder, or ``table:db.name``.

    Integer columns that polars wrote unsigned (``session`` UInt64 reads as
    Decimal(20, 0) in Spark) are cast to Spark integers. Only the schema is
    checked here (the required columns): the value checks of
    :func:`clickrank.clicklog.validate_log` would take a pass over the data.

    Raises
    ------
    LogSchemaError
        If the path does not exist or a required column is missing.
    """
    from ..clicklog import REQUIRED_COLUMNS

    src = str(source)
    df = read_spark_source(src, spark, what="a click log", error=LogSchemaError)
    missing = [c for c in REQUIRED_COLUMNS if c not in spark_schema(df)]
    if missing:
        raise LogSchemaError(
            f"missing required column(s) {missing}; a click log needs {list(REQUIRED_COLUMNS)}",
            path=src,
        )
    return df


def read_spark_source(
    source: str | os.PathLike, spark: Any = None, *, what: str, error: type = DataFormatError
) -> Any:
    """A parquet file or folder, a URI or ``table:db.name`` as a Spark DataFrame, with the
    integer columns :func:`~clickrank.engine._spark.normalize` casts.

    Raises ``error`` (one line naming the path) if a local path does not exist or
    Spark cannot read ``what`` there. Columns are the caller's to check.
    """
    spark = spark if spark is not None else spark_session()
    from pyspark.errors import AnalysisException

    src = str(source)
    if not src.startswith(TABLE_PREFIX) and "://" not in src and not os.path.exists(src):
        raise error("no such file or folder", path=src)
    try:
        if src.startswith(TABLE_PREFIX):
            df = spark.table(src[len(TABLE_PREFIX) :])
        else:
            df = spark.read.option("recursiveFileLookup", "true").parquet(src)
        return normalize(df)
    except AnalysisException as err:
        first = (str(err).strip().splitlines() or ["?"])[0]
        raise error(f"Spark cannot read {what} here: {first}", path=src) from None


def spark_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """A polars log with the types Spark has: unsigned integers as signed, categories as
    strings (:func:`clickrank.clicklog.validate_log` casts them back)."""
    casts = []
    for name, dtype in frame.schema.items():
        if dtype in (pl.UInt64, pl.UInt32):
            casts.append(pl.col(name).cast(pl.Int64))
        elif dtype in (pl.UInt16, pl.UInt8):
            casts.append(pl.col(name).cast(pl.Int32))
        elif dtype == pl.Categorical or isinstance(dtype, pl.Enum):
            casts.append(pl.col(name).cast(pl.String))
    return frame.with_columns(casts)


def to_spark(log: pl.DataFrame | pl.LazyFrame, spark: Any = None) -> Any:
    """A polars click log as a Spark DataFrame (:func:`spark_ready` types), for tests and
    small logs; large logs go through parquet."""
    spark = spark if spark is not None else spark_session()
    df = log.collect() if isinstance(log, pl.LazyFrame) else log
    return spark.createDataFrame(spark_ready(df).to_arrow())
