"""A click log checked at the boundary and joined to a data set's rows by ``(query, doc)``.

Shared by the gain targets and click preferences of :mod:`clickrank.targets` and by
regression EM (:mod:`clickrank.propensity._regression_em`): every builder validates
the log and casts its ids with :func:`prepare_log`, aggregates it per document with
:func:`per_doc` and turns the shown rows into a candidate mask with
:func:`candidate_mask`. All work is done by polars aggregations (the log may be a
DataFrame or a LazyFrame).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, LogSchemaError, check_choice
from ..datasets import RankingData
from . import _spark
from ._detect import is_spark
from ._queries import doc_counts, log_schema, position_range

__all__ = ["prepare_log", "per_doc", "scatter", "candidate_mask"]


def _lazy(log: Any) -> Any:
    if isinstance(log, pl.DataFrame):
        return log.lazy()
    if isinstance(log, pl.LazyFrame):
        return log
    if is_spark(log):  # aggregated on Spark by clickrank.engine
        return _spark.normalize(log)
    raise InputError(
        f"log must be a polars DataFrame/LazyFrame or a Spark DataFrame, got {type(log).__name__}"
    )


def _check_columns(lf: Any, needed: tuple[str, ...]) -> dict[str, pl.DataType]:
    schema = log_schema(lf)
    missing = [c for c in needed if c not in schema]
    if missing:
        raise LogSchemaError(f"click log lacks column(s) {missing}; it has {list(schema.names())}")
    click = schema["click"]
    if click != pl.Boolean and not click.is_integer():
        raise LogSchemaError(f"must be Boolean (or 0/1 integers), got {click}", column="click")
    if "position" in needed and not schema["position"].is_integer():
        raise LogSchemaError(
            f"must hold integers (1-based ranks), got {schema['position']}", column="position"
        )
    return dict(schema)


def _check_positions(lf: Any, n_theta: int | None) -> None:
    lo, hi = position_range(lf)
    if lo is None:
        raise LogSchemaError("the click log is empty")
    if lo < 1:
        raise LogSchemaError(f"positions are 1-based; found {lo}", column="position")
    if n_theta is not None and hi > n_theta:
        raise InputError(
            f"the log shows results at position {hi} but propensities cover positions 1..{n_theta}"
        )


def _id_series(values: np.ndarray) -> pl.Series:
    """Ids as Int64 (integer ids) or String (anything else)."""
    if values.dtype.kind in "iu":
        return pl.Series(values).cast(pl.Int64)
    return pl.Series(values.astype(str)).cast(pl.String)


def _keys(data: RankingData) -> pl.DataFrame:
    """(query, doc, row) of every data row, ids as Int64 or String."""
    return pl.DataFrame(
        {
            "query": _id_series(np.asarray(data.qid)[data.query_index]),
            "doc": _id_series(np.asarray(data.doc)),
            "row": np.arange(data.n_docs, dtype=np.int64),
        }
    )


def _cast_ids(lf: Any, keys: pl.DataFrame, schema: dict[str, pl.DataType]) -> Any:
    if is_spark(lf):
        return _spark.cast_ids(lf, keys.schema)
    out = []
    for col in ("query", "doc"):
        want = keys.schema[col]
        have = schema[col]
        if want == pl.String:
            out.append(pl.col(col).cast(pl.String))
        elif have.is_integer():
            out.append(pl.col(col).cast(pl.Int64))
        else:
            raise LogSchemaError(
                f"log has {have} ids but the data has integer ids; convert one to match", column=col
            )
    return lf.with_columns(out)


def _attach_rows(agg: pl.DataFrame, keys: pl.DataFrame, what: str) -> pl.DataFrame:
    """``agg`` with the row index of every (query, doc); error if any is not in the data."""
    joined = agg.join(keys, on=["query", "doc"], how="left")
    missing = joined.filter(pl.col("row").is_null())
    if missing.height:
        ex = missing.select("query", "doc").head(3).rows()
        raise LogSchemaError(
            f"{missing.height} (query, doc) pair(s) of the {what} are not in the data, e.g. {ex}"
        )
    return joined


def prepare_log(
    data: RankingData,
    log: Any,
    needed: tuple[str, ...],
    n_theta: int | None = None,
) -> tuple[Any, pl.DataFrame]:
    """Check a click log and cast its ids to the data's: ``(log, keys)``.

    ``log`` must have the columns ``needed`` and Boolean (or 0/1 integer)
    clicks; if ``"position"`` is needed, the log must be non-empty with
    1-based integer positions, at most ``n_theta`` when given (the number of
    propensities). ``keys`` holds ``(query, doc, row)`` of every data row, the
    ids as Int64 or String, and the returned log has its ids cast to match.
    A Spark DataFrame stays one (aggregated by :mod:`clickrank.engine`).
    """
    lf = _lazy(log)
    schema = _check_columns(lf, needed)
    if "position" in needed:
        _check_positions(lf, n_theta)
    keys = _keys(data)
    return _cast_ids(lf, keys, schema), keys


def per_doc(
    lf: Any,
    keys: pl.DataFrame,
    value_exprs: list[pl.Expr],
    what: str = "click log",
    by: tuple[str, ...] = (),
) -> pl.DataFrame:
    """Aggregate the log per (query, doc, *by) and attach the data row of each (query, doc).

    ``lf`` and ``keys`` come from :func:`prepare_log`.
    """
    agg = doc_counts(lf, value_exprs, by)
    return _attach_rows(agg, keys, what)


def scatter(n: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """float64 ``[n]`` zeros with ``values`` at ``rows``."""
    out = np.zeros(n)
    out[rows] = values
    return out


def candidate_mask(n: int, rows: np.ndarray, candidates: str) -> np.ndarray | None:
    """Mask of the shown ``rows`` (``candidates="shown"``) or None (``"all"``)."""
    check_choice(candidates, ("shown", "all"), name="candidates")
    if candidates == "all":
        return None
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask
