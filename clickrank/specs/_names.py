"""Compatibility alias of :mod:`clickrank.specs.names` for the modules not yet moved to it."""

from .names import *  # noqa: F403
