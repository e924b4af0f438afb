"""Deprecated: ``clickrank.online.interleave`` moved to :mod:`clickrank.interleaving.experiment`.

This module re-exports it and warns once (a DeprecationWarning naming the new place).
"""

# kept for the users of the old path; remove it with the deprecation

from __future__ import annotations

import warnings as _warnings

from ..interleaving import experiment as _new
from ..interleaving.experiment import *  # noqa: F403


def __getattr__(attr: str):
    return getattr(_new, attr)


# stacklevel 2: the importer (the warnings module skips the import machinery's frames)
_warnings.warn(
    "clickrank.online.interleave moved to clickrank.interleaving.experiment; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
