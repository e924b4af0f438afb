"""Independent tasks as Spark tasks: one function over a list of pickled inputs.

The default learner fits its members as Spark tasks
(:class:`clickrank.training.backends.SparkBackend`): what every task needs (the training
data, the folds, the targets) is broadcast once as a payload, and each task gets its own
small input. :class:`SparkTasks` is that pattern, and only the pattern: bytes in, bytes
out, so nothing here depends on what the tasks compute.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SparkTasks"]


class SparkTasks:
    """Run ``fn(payload, item)`` as one Spark task per item, the payload broadcast once.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose executors run the tasks.
    payload : bytes
        What every task reads (broadcast until :meth:`close`).

    Examples
    --------
    >>> tasks = SparkTasks(spark, pickle.dumps(job))  # doctest: +SKIP
    >>> outputs = tasks.map(fit_one, [pickle.dumps(t) for t in items])  # doctest: +SKIP
    """

    def __init__(self, spark: Any, payload: bytes) -> None:
        self.sc = spark.sparkContext
        self.payload = self.sc.broadcast(payload)

    def map(self, fn: Callable[[bytes, bytes], bytes], items: list[bytes]) -> list[bytes]:
        """``fn(payload, item)`` for every item, one Spark task each, in the items' order.

        ``fn`` must be importable on the executors (a module-level function).
        """
        payload = self.payload
        return (self.sc.parallelize(items, len(items))
                .map(lambda item: fn(payload.value, item))
                .collect())  # fmt: skip

    def close(self) -> None:
        """Drop the broadcast payload."""
        self.payload.destroy()
