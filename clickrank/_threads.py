"""numba's thread count for a block of work, the caller's restored afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba


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
