"""The Spark side of the queries: the same aggregations on a ``pyspark.sql.DataFrame``.

pyspark is imported inside the functions (the optional extra
``clickrank[spark]``). Each function returns a small polars DataFrame built
from the Arrow result of the Spark aggregation, with the column names and
(up to integer width) the dtypes of the polars query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, LogSchemaError
from .polars import BUCKET

__all__ = [
    "spark_schema",
    "normalize",
    "to_polars",
    "counts",
    "co_clicks",
    "n_unique",
    "n_unique_by",
    "position_range",
    "doc_counts",
    "preference_counts",
    "cast_ids",
    "session_patterns",
    "fairpairs_sessions",
]

_TYPES = {
    "LongType": pl.Int64(),
    "IntegerType": pl.Int32(),
    "ShortType": pl.Int16(),
    "ByteType": pl.Int8(),
    "BooleanType": pl.Boolean(),
    "StringType": pl.String(),
    "DoubleType": pl.Float64(),
    "FloatType": pl.Float32(),
}


def spark_schema(df: Any) -> pl.Schema:
    """The polars dtype of every column (Decimal(p, 0) as Int64, other types as Object)."""
    out = {}
    for f in df.schema.fields:
        name = type(f.dataType).__name__
        if name == "DecimalType" and f.dataType.scale == 0:
            out[f.name] = pl.Int64()
        else:
            out[f.name] = _TYPES.get(name, pl.Object())
    return pl.Schema(out)


def normalize(df: Any) -> Any:
    """Integer log columns as Spark integers (polars writes UInt64 sessions, which Spark
    reads as Decimal(20, 0)); categories as strings."""
    from pyspark.sql import functions as F

    types = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    casts = {}
    for col, want in (("session", "long"), ("position", "int"), ("swap_pivot", "int")):
        if col in types and types[col] == "DecimalType":
            casts[col] = F.col(col).cast(want)
    casts.update({c: F.col(c).cast("long") for c in ("swap_k",) if types.get(c) == "DecimalType"})
    for col in ("query", "doc"):
        if types.get(col) == "DecimalType":
            casts[col] = F.col(col).cast("long")
    return df.withColumns(casts) if casts else df


def to_polars(df: Any) -> pl.DataFrame:
    """A (small) Spark result as a polars DataFrame, through Arrow."""
    return pl.from_arrow(df.toArrow())


def _where(df: Any, where: Mapping[str, Any] | None) -> Any:
    from pyspark.sql import functions as F

    for col, value in (where or {}).items():
        c = F.col(col)
        if isinstance(value, str):
            c = c.cast("string")
        elif isinstance(value, bool):
            c = c.cast("boolean")
        df = df.filter(c == value)
    return df


def with_buckets(df: Any, buckets: int, seed: int) -> Any:
    """``df`` with the session-bucket column of :func:`clickrank._core._random.session_buckets`,
    computed by the same numpy code on the executors (``mapInArrow``)."""
    if not buckets:
        return df
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = StructType([*df.schema.fields, StructField(BUCKET, IntegerType(), False)])
    seed, buckets = int(seed), int(buckets)

    def add(batches):  # runs on the executors
        import pyarrow as pa

        from clickrank._core._random import STREAM_BOOTSTRAP, session_buckets

        for batch in batches:
            ids = batch.column("session").to_numpy(zero_copy_only=False).astype(np.uint64)
            b = session_buckets(seed, ids, buckets, STREAM_BOOTSTRAP).astype(np.int32)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array(b)], names=[*batch.schema.names, BUCKET]
            )

    return df.mapInArrow(add, schema)


def _keys(by: Sequence[str], buckets: int) -> list[str]:
    return [*by, BUCKET] if buckets else list(by)


def _bucket_dtype(table: pl.DataFrame) -> pl.DataFrame:
    if BUCKET in table.columns:
        return table.with_columns(pl.col(BUCKET).cast(pl.UInt32))
    return table


def counts(
    df: Any,
    by: Sequence[str],
    *,
    where: Mapping[str, Any] | None = None,
    buckets: int = 0,
    seed: int = 0,
) -> pl.DataFrame:
    """Impressions ``n`` and clicks ``c`` (Float64) per group, as
    :func:`.polars.grouped_counts`."""
    from pyspark.sql import functions as F

    keys = _keys(by, buckets)
    need = sorted({*by, "click", "session"} if buckets else {*by, "click"})
    rows = with_buckets(_where(df, where).select(*need), buckets, seed)
    agg = rows.groupBy(*keys).agg(
        F.count(F.lit(1)).cast("double").alias("n"),
        F.sum(F.col("click").cast("double")).alias("c"),
    )
    return _bucket_dtype(to_polars(agg)).sort(keys)


def co_clicks(
    df: Any, *, where: Mapping[str, Any] | None = None, buckets: int = 0, seed: int = 0
) -> pl.DataFrame:
    """Clicks per position (and bucket) in sessions whose slot 1 was clicked: ``cc``.

    A left-semi join of the clicked rows on the sessions clicked at slot 1.
    """
    from pyspark.sql import functions as F

    keys = _keys(["position"], buckets)
    clicked = _where(df, where).filter(F.col("click").cast("boolean")).select("session", "position")
    first = clicked.filter(F.col("position") == 1).select("session")
    rows = with_buckets(clicked.join(first, on="session", how="left_semi"), buckets, seed)
    agg = rows.groupBy(*keys).agg(F.count(F.lit(1)).cast("double").alias("cc"))
    return _bucket_dtype(to_polars(agg)).sort(keys)


def n_unique(df: Any, col: str) -> int:
    """Distinct values of ``col``."""
    from pyspark.sql import functions as F

    return int(df.select(F.countDistinct(col)).first()[0])


def n_unique_by(df: Any, by: str, col: str) -> pl.DataFrame:
    """Distinct values of ``col`` per ``by``: columns ``by`` and ``n``."""
    from pyspark.sql import functions as F

    return to_polars(df.groupBy(by).agg(F.countDistinct(col).alias("n")))


def position_range(df: Any) -> tuple[Any, Any]:
    """Smallest and largest position (None, None for an empty log)."""
    from pyspark.sql import functions as F

    row = df.select(F.min("position"), F.max("position")).first()
    return row[0], row[1]


def cast_ids(df: Any, keys: pl.Schema) -> Any:
    """``query`` and ``doc`` cast to the data's ids (Int64 or String)."""
    from pyspark.sql import functions as F

    schema = spark_schema(df)
    out = {}
    for col in ("query", "doc"):
        if keys[col] == pl.String:
            out[col] = F.col(col).cast("string")
        elif schema[col].is_integer():
            out[col] = F.col(col).cast("long")
        else:
            raise LogSchemaError(
                f"log has {schema[col]} ids but the data has integer ids; convert one to match",
                column=col,
            )
    return df.withColumns(out)


_DOC_VALUES = ("clicks", "shown", "top")


def doc_counts(df: Any, by: Sequence[str], values: Sequence[str]) -> pl.DataFrame:
    """Per (query, doc, *by): any of ``clicks`` (sum), ``shown`` (rows), ``top`` (max position)."""
    from pyspark.sql import functions as F

    exprs = {
        "clicks": F.sum(F.col("click").cast("long")).alias("clicks"),
        "shown": F.count(F.lit(1)).alias("shown"),
        "top": F.max("position").alias("top"),
    }
    bad = [v for v in values if v not in exprs]
    if bad:
        raise InputError(f"no Spark translation of the per-document value(s) {bad}")
    return to_polars(df.groupBy("query", "doc", *by).agg(*[exprs[v] for v in values]))


def _rule(rule: str, adjacent: Mapping[str, int]) -> Any:
    from pyspark.sql import functions as F

    p_win, p_lose = F.col("p_win"), F.col("p_lose")
    if rule == "all":
        return F.lit(True)
    if rule == "skip-above":
        return p_lose < p_win
    if rule == "last-click-skip-above":
        return (p_win == F.col("last_click")) & (p_lose < p_win)
    if rule == "fairpairs":
        start, last = F.col("swap_pivot"), F.col("swap_k")
        return (
            (p_lose == p_win - 1)
            & (p_lose >= start)
            & ((p_lose - start) % 2 == 0)
            & (p_win <= last)
        )
    if rule in adjacent:
        return p_lose == p_win + adjacent[rule]
    raise InputError(f"the click preferences {rule!r} are not available on the Spark engine")


def preference_counts(
    df: Any, rules: Sequence[str], adjacent: Mapping[str, int]
) -> tuple[pl.DataFrame, int]:
    """Preferences per (query, win, lose, p_win, p_lose) and the sessions with one.

    The Spark form of ``clickrank.targets._preferences._preference_rows``
    followed by its count: a click ``win`` at ``p_win`` over an unclicked
    ``lose`` at ``p_lose`` of the same session, kept when a rule holds; a pair
    derived by several rules in one session counts once.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    extra = ["swap_pivot", "swap_k"] if "fairpairs" in rules else []
    base = df.select(
        "session",
        "query",
        "doc",
        F.col("position").cast("long").alias("position"),
        F.col("click").cast("boolean").alias("click"),
        *[F.col(c).cast("long").alias(c) for c in extra],
    )
    clicked = base.filter(F.col("click")).select(
        "session", "query", F.col("doc").alias("win"), F.col("position").alias("p_win"), *extra
    )
    if "last-click-skip-above" in rules:
        clicked = clicked.withColumn(
            "last_click", F.max("p_win").over(Window.partitionBy("session"))
        )
    skipped = base.filter(~F.col("click")).select(
        "session", "query", F.col("doc").alias("lose"), F.col("position").alias("p_lose")
    )
    keep = ["session", "query", "win", "p_win", "lose", "p_lose"]
    joined = clicked.join(skipped, on=["session", "query"], how="inner")
    cond = F.lit(False)
    for r in rules:  # a loop over at most a few rules
        cond = cond | _rule(r, adjacent)
    prefs = joined.filter(cond).select(*keep).cache()
    try:
        agg = to_polars(
            prefs.groupBy("query", "win", "lose", "p_win", "p_lose").agg(
                F.count(F.lit(1)).alias("count")
            )
        )
        n_sess = n_unique(prefs, "session")
    finally:
        prefs.unpersist()
    return agg, n_sess


def session_patterns(df: Any, keys: pl.DataFrame) -> pl.DataFrame:
    """Distinct session lists (data rows, positions, clicks in position order) with a click
    and a non-click, and their ``count``: the Spark form of the session lists of
    ``clickrank.targets.unbiased_lambdamart``, sorted the same way."""
    from pyspark.sql import functions as F

    spark_keys = df.sparkSession.createDataFrame(keys.to_arrow())
    click = F.col("click").cast("boolean")
    rows = df.select(
        "session", "query", "doc", F.col("position").cast("long").alias("position"), click
    ).join(F.broadcast(spark_keys), on=["query", "doc"], how="inner")
    lists = (
        rows.groupBy("session")
        .agg(
            F.sort_array(F.collect_list(F.struct("position", "row", "click"))).alias("l"),
            F.sum(F.col("click").cast("long")).alias("n_click"),
            F.count(F.lit(1)).alias("n"),
        )
        .filter((F.col("n_click") > 0) & (F.col("n_click") < F.col("n")))
        .select(
            F.col("l.row").alias("row"), F.col("l.position").alias("position"),
            F.col("l.click").alias("click"),
        )
        .groupBy("row", "position", "click")
        .agg(F.count(F.lit(1)).alias("count"))
    )  # fmt: skip
    return to_polars(lists).sort("row", "position", "click")


def fairpairs_sessions(df: Any) -> tuple[Any, int, Any, Any]:
    """The rows of FairPairs sessions, their number and the range of their first paired rank."""
    from pyspark.sql import functions as F

    fair = df.filter(F.col("intervention").cast("string") == "fairpairs")
    row = (
        fair.groupBy("session")
        .agg(F.first("swap_pivot").alias("sp"))
        .agg(F.count(F.lit(1)), F.min("sp"), F.max("sp"))
        .first()
    )
    return fair, int(row[0]), row[1], row[2]
