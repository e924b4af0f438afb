"""Files of a results folder: input fingerprints, folder names, .npy and JSON helpers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._core._io import atomic_write


def _fingerprint(path: str | None) -> dict | None:
    if path is None:
        return None
    st = Path(path).stat()
    return {"path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _folder(name: str) -> str:
    """A file-system-safe folder name for a target (``pairs:a+b`` -> ``pairs_a_b``)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _save_npy(path: Path, arr: np.ndarray) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, arr)

    atomic_write(path, write)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def _clean(obj: Any) -> Any:
    """JSON-ready copy: numpy to Python, NaN/inf to None, tuples to lists."""
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)
