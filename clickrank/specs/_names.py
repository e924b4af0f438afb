"""Every allowed name of a spec, defined once (the CLI and the run config import them here)."""

from __future__ import annotations

__all__ = ["POLICY_KINDS"]

#: Logging policies by name (:func:`clickrank.specs.make_policy`).
POLICY_KINDS = ("production", "plackett-luce", "oracle", "random")
