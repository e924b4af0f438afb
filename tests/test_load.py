"""Threads under load: ``"auto"`` takes the cores other processes leave free, so a run
next to another CPU-bound process shares the cores instead of spinning OpenMP threads that
wait for a thread the other process holds off its core."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time

import pytest

from clickrank._core import _validation
from clickrank._core._validation import available_cpus, free_cpus

LINUX = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc/stat (Linux)")


def _spin(until: float) -> None:
    while time.monotonic() < until:
        pass


@pytest.fixture
def fresh(monkeypatch):
    """free_cpus measured anew (no measure held from another test), following the load
    (tests/conftest.py turns that off for the other tests)."""
    monkeypatch.setattr(_validation, "_free_cpus", None)
    monkeypatch.setenv("CLICKRANK_FOLLOW_LOAD", "1")


def _busy_processes(n: int) -> list:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_spin, args=(time.monotonic() + 20,)) for _ in range(n)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # the spawned processes start spinning
    return procs


def _stop(procs: list) -> None:
    for p in procs:
        p.terminate()
        p.join()


@LINUX
@pytest.mark.skipif(available_cpus() < 2, reason="needs two CPUs to leave one free")
def test_free_cpus_leaves_out_the_cores_other_processes_keep_busy(fresh):
    """One busy process per CPU but one: at most one CPU is free; busy processes on every
    CPU: one thread still (never zero)."""
    cpus = available_cpus()
    for busy, most in ((cpus - 1, 1), (cpus, 1)):
        procs = _busy_processes(busy)
        try:
            _validation._free_cpus = None
            got = free_cpus(window=0.3)
        finally:
            _stop(procs)
        assert 1 <= got <= most, (busy, got)


@LINUX
@pytest.mark.skipif(available_cpus() < 2, reason="needs two CPUs to leave one free")
def test_a_fits_threads_are_at_most_the_free_cores_unless_told_to_ignore_the_load(
    fresh, monkeypatch
):
    """``n_jobs=2`` next to a busy process on every CPU but one: its fits take one thread
    (the models are those of any thread count); with CLICKRANK_FOLLOW_LOAD=0, two."""
    from clickrank._core._threads import fit_threads

    procs = _busy_processes(available_cpus() - 1)
    try:
        _validation._free_cpus = None
        assert fit_threads(2) == 1
        assert fit_threads(1) == 1
        monkeypatch.setenv("CLICKRANK_FOLLOW_LOAD", "0")
        assert fit_threads(2) == 2
    finally:
        _stop(procs)


@LINUX
def test_free_cpus_does_not_count_this_process_as_a_load(fresh):
    """This process's own busy threads are not another process's load: spinning here while
    measuring leaves at least one more CPU free than a spinning child does."""
    import threading

    stop = time.monotonic() + 1.0
    spinner = threading.Thread(target=_spin, args=(stop,))
    spinner.start()
    got = free_cpus(window=0.3)
    spinner.join()
    # the other tests of a parallel run may load the machine: only this process's own
    # load is checked here, against a busy child measured the same way
    spin = "import time\nt = time.monotonic() + 3\nwhile time.monotonic() < t: pass"
    child = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.5)
        _validation._free_cpus = None
        with_child = free_cpus(window=0.3)
    finally:
        child.kill()
        child.wait()
    assert got >= with_child and (got > with_child or with_child == 1), (got, with_child)


def test_a_measure_is_held_so_auto_costs_one_window_per_run(fresh):
    t = time.monotonic()
    first = free_cpus(window=0.2)
    again = [free_cpus(window=0.2) for _ in range(5)]
    assert again == [first] * 5
    assert time.monotonic() - t < 0.2 * 3  # one window, not six
