"""Thread counts: numba's for a block of work, and a member process's share of the cores."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numba

from ._validation import follows_load, free_cpus

#: In a member process of ``ClickRanker(n_jobs=k)`` (:func:`share_cores`): the k cores and
#: the shared count of members not yet fitted; None elsewhere.
_SHARE: tuple[int, Any] | None = None


@contextmanager
def numba_threads(threads: int) -> Iterator[None]:
    """Run numba's parallel kernels in this block on ``threads`` threads.

    numba's count belongs to the calling thread; setting it without restoring it
    would change the threads of every later kernel the caller runs.
    """
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def share_cores(cores: int, left: Any) -> None:
    """Let this process's fits share ``cores`` with the other member processes; ``left``
    (a ``multiprocessing.Value``) counts the members not yet fitted, the queued ones too."""
    global _SHARE
    _SHARE = (int(cores), left)


def sharing_cores() -> bool:
    """Whether this is a member process sharing the cores (:func:`share_cores`)."""
    return _SHARE is not None


def fit_threads(given: int) -> int:
    """The threads of a fit starting now: ``given``, at most the cores other processes
    leave free (:func:`~clickrank._core._validation.free_cpus`; every thread asked for with
    ``CLICKRANK_FOLLOW_LOAD=0``), or in a member process
    its share of the cores -- one while the members left keep every core busy, more once
    fewer are left than cores (the last member alone gets them all). The threads never
    change a model (LightGBM's column-wise histograms and the lambda kernels sum in an
    order of their own), only how soon it is done."""
    if _SHARE is None:
        threads = int(given)
    else:
        cores, left = _SHARE
        threads = max(1, cores // max(1, min(int(left.value), cores)))
    return min(threads, free_cpus()) if threads > 1 and follows_load() else threads
