"""Deprecated: ``clickrank.distributed`` moved to :mod:`clickrank.training.distributed`.

This module re-exports it and warns once (a DeprecationWarning naming the new place).
"""

from __future__ import annotations

import warnings as _warnings

from .training import distributed as _new
from .training.distributed import *  # noqa: F403


def __getattr__(attr: str):
    return getattr(_new, attr)


# stacklevel 2: the importer (the warnings module skips the import machinery's frames)
_warnings.warn(
    "clickrank.distributed moved to clickrank.training.distributed; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
