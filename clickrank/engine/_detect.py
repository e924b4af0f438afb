"""Which engine a log belongs to, found without importing pyspark."""

from __future__ import annotations

import os
import shutil
from typing import Any

from .._core._validation import InputError

__all__ = ["is_spark", "engine_of", "require_spark"]

ENGINES = ("polars", "spark")


def is_spark(obj: Any) -> bool:
    """Whether ``obj`` is a ``pyspark.sql.DataFrame`` (classic or Spark Connect).

    Looks at the class names only, so pyspark is not imported.
    """
    return any(
        cls.__name__ == "DataFrame" and cls.__module__.startswith("pyspark.sql")
        for cls in type(obj).__mro__
    )


def engine_of(obj: Any) -> str:
    """``"spark"`` for a Spark DataFrame, else ``"polars"``."""
    return "spark" if is_spark(obj) else "polars"


def require_spark() -> None:
    """Check that pyspark can be imported and a Java runtime is on the PATH.

    Raises
    ------
    InputError
        Saying what is missing and how to install it.
    """
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError("the Spark engine needs pyspark: pip install 'clickrank[spark]'") from None
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (
        java_home and os.path.exists(os.path.join(java_home, "bin", "java"))
    ):
        raise InputError(
            "the Spark engine needs a Java runtime (17 or later) on the PATH or in JAVA_HOME, "
            "e.g. apt-get install openjdk-17-jre-headless"
        )
