"""Simulation on Spark executors: session ranges per partition, the same rows as one machine.

:func:`clickrank.simulation.simulate` draws everything about session ``s``
from counter-based streams keyed by ``(seed, s)`` (:mod:`clickrank._core._random`),
so the sessions ``lo..hi-1`` simulated alone (``first_session=lo``) are the
rows of those sessions in the whole log. :func:`simulate_spark` hands one
such range to each Spark partition (``mapInArrow``) and writes the parts as
a parquet folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._core._validation import InputError, check_positive
from ._session import spark_ready, spark_session

__all__ = ["simulate_spark"]


def simulate_spark(
    data: Any,
    *,
    n_sessions: int,
    out: str | os.PathLike,
    spark: Any = None,
    partitions: int | None = None,
    first_session: int = 0,
    **kwargs: Any,
) -> Any:
    """Simulate a click log on Spark and write it as a parquet folder.

    Parameters
    ----------
    data : RankingData
    n_sessions : int
        Sessions in the log.
    out : path
        The parquet folder Spark writes (one part file per partition, sessions
        in order inside each part); a local path or any URI Spark can write.
        It must not exist: nothing is ever replaced (Spark commits the folder
        when every task has finished).
    spark : SparkSession, optional
        Default: :func:`clickrank.engine.spark_session`.
    partitions : int, optional
        Session ranges (one Spark task each); default one per
        :data:`clickrank.simulation.PART_SESSIONS` sessions.
    first_session : int
        Index of the first session.
    **kwargs
        The other arguments of :func:`clickrank.simulation.simulate`
        (``policy``, ``click_model``, ``interventions``, ``top_k``, ``seed``,
        ``query_frequency``, ``chunk_size``).

    Returns
    -------
    pyspark.sql.DataFrame
        The written log, read back (:func:`clickrank.engine.read_spark_log`).

    Notes
    -----
    The rows equal those of ``simulate(data, n_sessions=..., seed=...)`` for
    any number of partitions; ``session`` and ``position`` are stored as
    signed integers and the categories as strings (Spark has no unsigned or
    categorical types).
    """
    from ..simulation import PART_SESSIONS, simulate
    from ._session import read_spark_log

    if bad := {"progress", "check_space", "metadata", "overwrite"} & set(kwargs):
        raise InputError(f"simulate_spark does not take {', '.join(sorted(bad))}")
    n_sessions = int(check_positive(n_sessions, name="n_sessions", integer=True))
    first_session = int(first_session)
    if first_session < 0:
        raise InputError(f"first_session must be >= 0, got {first_session}")
    parts = -(-n_sessions // PART_SESSIONS) if partitions is None else partitions
    partitions = min(int(check_positive(parts, name="partitions", integer=True)), n_sessions)
    target = str(out)
    if "://" not in target and Path(target).exists():
        raise InputError(f"{target} exists; simulate_spark writes a new folder")
    bounds = first_session + (np.arange(partitions + 1, dtype=np.int64) * n_sessions) // partitions
    # the schema from one session simulated here (ids, optional columns)
    sample = spark_ready(simulate(data, n_sessions=1, first_session=first_session, **kwargs))
    spark = spark if spark is not None else spark_session()
    schema = spark.createDataFrame(sample.head(0).to_arrow()).schema

    def generate(batches):  # runs on the executors, one range per id
        for batch in batches:
            for i in batch.column("id").to_numpy():
                lo, hi = int(bounds[i]), int(bounds[i + 1])
                frame = simulate(data, n_sessions=hi - lo, first_session=lo, **kwargs)
                yield from spark_ready(frame).to_arrow().to_batches()

    ranges = spark.range(0, partitions, 1, numPartitions=partitions)
    ranges.mapInArrow(generate, schema).write.mode("errorifexists").parquet(target)
    return read_spark_log(target, spark)
