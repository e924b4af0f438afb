#!/usr/bin/env python3
"""Developer tasks that need nothing but Python: ``python3 tasks.py demo|test|bench|docs``.

Each task creates ``.venv`` (if missing), installs clickrank with what the task
needs, and runs it. Only the standard library is used here, so this works on a
fresh machine with Python >= 3.11 and access to the package registry. The install
is skipped when ``.venv`` already holds it for the same ``pyproject.toml`` and
extras (a stamp file in ``.venv``), so a second run starts at once.

``python3 tasks.py test`` is what CI runs (``.ci/run``): ruff, the strict docs
build and every test, on two processes (pytest-xdist). ``python3 tasks.py test
--quick`` is for day-to-day work: ruff and the tests not marked ``slow``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def setup(extras: str = "test") -> None:
    """Create .venv and install clickrank (editable) with ``extras``, unless already done."""
    if sys.version_info < (3, 11):  # noqa: UP036 - tasks.py may run on an older python3
        sys.exit(f"clickrank needs Python >= 3.11, this is {sys.version.split()[0]}")
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    # the install is editable: only pyproject.toml (dependencies, extras) can make it stale
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    stamp = VENV / ".clickrank-installed"  # "<key> <extra>,<extra>,..."
    wanted = set(extras.split(","))
    done: set[str] = set()
    if stamp.is_file():
        got_key, _, got = stamp.read_text().strip().partition(" ")
        done = set(got.split(",")) if got_key == key else set()
    if wanted <= done:
        print(f"{VENV}: clickrank[{extras}] already installed (pyproject.toml unchanged)")
        return
    run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    run(PY, "-m", "pip", "install", "--quiet", "-e", f".[{extras}]")
    stamp.write_text(f"{key} {','.join(sorted(wanted | done))}\n")


def demo() -> None:
    """Set up, then run the main job: the default experiment into results/default/."""
    setup("test")
    run(BIN / "clickrank", "run", "--out", "results/default", *sys.argv[2:])


def test() -> None:
    """Set up, then run ruff (lint and format), a strict docs build and the whole test suite
    (with pyspark: where Java is installed, tests/test_spark.py runs Spark in local mode and on a
    standalone cluster of its own, a master and two workers on this machine).

    ``--quick``: ruff and the tests not marked slow (no docs build), for day-to-day work.
    Other arguments go to pytest; ``-n 0`` runs the tests in one process.
    """
    args = sys.argv[2:]
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    setup("test,docs,spark")
    sources = ("clickrank", "tests", "benchmarks", "simulations", "tasks.py", "docs/_ext")
    run(PY, "-m", "ruff", "check", *sources)
    run(PY, "-m", "ruff", "format", "--check", *sources)
    if not quick:
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        with tempfile.TemporaryDirectory() as site:  # fails on a broken link, anchor or docstring
            run(PY, "-m", "mkdocs", "build", "--strict", "-d", site, env=env)
    # loadgroup: the tests of an xdist_group share one worker (Spark's: the local session's
    # tests on one, the standalone cluster's on the other, one session per process at a
    # time); the largest groups start first and the other tests are spread as usual
    parallel = (
        []
        if any(a == "-n" or a.startswith("-n") for a in args)
        else ["-n", "2", "--dist", "loadgroup"]
    )
    selection = ["-m", "not slow"] if quick else []
    run(PY, "-m", "pytest", *parallel, *selection, "--doctest-modules", "clickrank", "tests", *args)


def bench() -> None:
    """Set up, then write the performance record and check it against the targets.

    ``bench`` runs the quick benchmarks (``benchmarks/perf_record.py``: one JSON of
    ratios, ``benchmarks/perf_record.json``; extra arguments go to it) and prints the
    table of ``benchmarks/check_perf.py``; ``bench --all`` runs every benchmark script
    in full instead.
    """
    setup("test,bench,spark")
    if sys.argv[2:3] == ["--all"]:
        for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            run(PY, script)
        return
    run(PY, ROOT / "benchmarks" / "perf_record.py", *sys.argv[2:])
    run(PY, ROOT / "benchmarks" / "check_perf.py")


def docs() -> None:
    """Set up with the docs extra, then build the site into site/ (strict), or `docs serve`."""
    setup("docs")
    if sys.argv[2:3] == ["serve"]:
        run(PY, "-m", "mkdocs", "serve")
    else:
        run(PY, "-m", "mkdocs", "build", "--strict", "-d", ROOT / "site")


TASKS = {"demo": demo, "test": test, "bench": bench, "docs": docs}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in TASKS:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(TASKS)}}} [pytest args]")
    try:
        TASKS[sys.argv[1]]()
    except subprocess.CalledProcessError as err:
        sys.exit(err.returncode)
