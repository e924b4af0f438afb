"""Deprecated: ``clickrank.deployment`` moved to :mod:`clickrank.training.deployment`.

This module re-exports it and warns once (a DeprecationWarning naming the new place).
"""

from __future__ import annotations

import warnings as _warnings

from .training import deployment as _new
from .training.deployment import *  # noqa: F403


def __getattr__(attr: str):
    return getattr(_new, attr)


# stacklevel 2: the importer (the warnings module skips the import machinery's frames)
_warnings.warn(
    "clickrank.deployment moved to clickrank.training.deployment; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
