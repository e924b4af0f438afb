"""The polars side of the queries: lazy plans run by polars' streaming engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

__all__ = ["BUCKET", "bucket_expr", "with_buckets", "grouped_counts", "where_expr"]

#: Name of the session-bucket column added for the bootstrap.
BUCKET = "_b"


def bucket_expr(buckets: int, seed: int) -> pl.Expr:
    """Bucket ``0..buckets-1`` of each row's session
    (:func:`clickrank._core._random.session_buckets`).

    Every row of a session gets the same bucket, and sessions fall into
    buckets independently and uniformly. An elementwise expression, so it
    runs inside polars' streaming engine, batch by batch.
    """
    from .._core._random import STREAM_BOOTSTRAP, session_buckets

    def apply(s: pl.Series) -> pl.Series:
        ids = s.cast(pl.UInt64).to_numpy()
        return pl.Series(BUCKET, session_buckets(int(seed), ids, int(buckets), STREAM_BOOTSTRAP))

    return (
        pl.col("session")
        .map_batches(apply, return_dtype=pl.UInt32, is_elementwise=True)
        .alias(BUCKET)
    )


def with_buckets(lf: pl.LazyFrame, buckets: int, seed: int) -> pl.LazyFrame:
    """``lf`` with the bucket column when ``buckets > 0`` (else unchanged)."""
    return lf.with_columns(bucket_expr(buckets, seed)) if buckets else lf


def grouped_counts(lf: pl.LazyFrame, by: list[str], buckets: int = 0) -> pl.LazyFrame:
    """Impressions ``n`` and clicks ``c`` (Float64) per group of ``by`` (and bucket), sorted.

    ``lf`` must already carry the bucket column when ``buckets > 0``
    (:func:`with_buckets`).
    """
    keys = [*by, BUCKET] if buckets else list(by)
    return (
        lf.group_by(keys)
        .agg(n=pl.len().cast(pl.Float64), c=pl.col("click").cast(pl.Float64).sum())
        .sort(keys)
    )


def where_expr(where: Mapping[str, Any]) -> pl.Expr:
    """The conjunction ``column == value`` over ``where`` (strings compare as String)."""
    out = pl.lit(True)
    for col, value in where.items():
        c = pl.col(col)
        if isinstance(value, str):
            c = c.cast(pl.String)
        elif isinstance(value, bool):
            c = c.cast(pl.Boolean)
        out = out & (c == value)
    return out
