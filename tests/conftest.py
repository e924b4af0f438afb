"""Shared fixtures: where the real public datasets live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def shared_data_dir() -> Path:
    """``../shared/data`` next to the checkout, or ``$CLICKRANK_SHARED_DATA``."""
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = shared_data_dir()
    if not root.is_dir():
        pytest.skip(f"shared datasets not found at {root} (set CLICKRANK_SHARED_DATA)")
    return root


@pytest.fixture(scope="session")
def mq2008(shared_data: Path) -> Path:
    fold = shared_data / "letor4_mq2008" / "Fold1"
    if not (fold / "train.txt").is_file():
        pytest.skip(f"MQ2008 Fold1 not found in {fold}")
    return fold
