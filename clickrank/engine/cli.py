"""The ``--engine`` and ``--spark-master`` options of ``clickrank propensity`` and ``train``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ._session import TABLE_PREFIX

__all__ = ["engine_options", "check_log_source", "open_log", "is_table", "local_path"]


def engine_options(f: Callable) -> Callable:
    """Add ``--engine polars|spark`` and ``--spark-master`` to a command."""
    f = click.option(
        "--spark-master",
        default="local[*]",
        show_default=True,
        help="Spark master of --engine spark (local[2], yarn, spark://host:7077, ...); "
        "under spark-submit, the master spark-submit was given.",
    )(f)
    return click.option(
        "--engine",
        type=click.Choice(["polars", "spark"]),
        default="polars",
        show_default=True,
        help="Where the log is aggregated: polars on this machine (streaming), or a Spark "
        "cluster (pip install 'clickrank[spark]'; a path Spark reads, or table:db.name for "
        "a Hive/metastore table). The small fits run here either way, except the default "
        "learner's members (clickrank train), one Spark task each (docs/scale.md).",
    )(f)


def check_log_source(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A log path that exists, or ``table:db.name`` / a URI (checked by Spark)."""
    if value is None or str(value).startswith(TABLE_PREFIX) or "://" in str(value):
        return value
    return click.Path(exists=True).convert(value, param, ctx)


def open_log(source: str, master: str) -> Any:
    """The log at ``source`` as a Spark DataFrame on a session of ``master``."""
    from ._session import read_spark_log, spark_session

    return read_spark_log(source, spark_session(master))


def is_table(source: str | None) -> bool:
    """Whether ``source`` names a table or a URI rather than a local path."""
    return source is not None and (source.startswith(TABLE_PREFIX) or "://" in source)


def local_path(source: str | None) -> Path | None:
    """``source`` as a local path (None for tables and URIs)."""
    return None if source is None or is_table(source) else Path(source)
