"""Threads under load: ``"auto"`` takes the cores other processes leave free, and OpenMP
waits asleep, so a run next to another CPU-bound process shares the cores instead of
spinning on them."""

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
    """free_cpus measured anew (no measure held from another test)."""
    monkeypatch.setattr(_validation, "_free_cpus", None)


@LINUX
@pytest.mark.skipif(available_cpus() < 2, reason="needs two CPUs to leave one free")
def test_free_cpus_leaves_out_the_cores_other_processes_keep_busy(fresh):
    """One busy process per CPU but one: at most one CPU is free; busy processes on every
    CPU: one thread still (never zero)."""
    cpus = available_cpus()
    ctx = multiprocessing.get_context("spawn")
    for busy, most in ((cpus - 1, 1), (cpus, 1)):
        procs = [ctx.Process(target=_spin, args=(time.monotonic() + 20,)) for _ in range(busy)]
        for p in procs:
            p.start()
        try:
            time.sleep(1.0)  # the spawned processes start spinning
            _validation._free_cpus = None
            got = free_cpus(window=0.3)
        finally:
            for p in procs:
                p.terminate()
                p.join()
        assert 1 <= got <= most, (busy, got)


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


def test_openmp_waits_asleep_unless_the_user_said_otherwise():
    """Importing clickrank sets OMP_WAIT_POLICY=PASSIVE before LightGBM loads OpenMP; a
    value already set is kept."""
    code = "import os, clickrank, lightgbm; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    assert out == "PASSIVE"
    out = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_WAIT_POLICY": "ACTIVE"},
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert out == "ACTIVE"
