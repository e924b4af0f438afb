"""Shared fixtures: where the real public datasets live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Threads as asked, whatever the machine's load: the tests that compare n_jobs=2 with
# n_jobs=1 must run two threads while the other pytest worker keeps a core busy
# (tests/test_load.py checks the load-following threads themselves; the end-to-end runs
# follow the load, as a user's do: the fixture follow_load).
os.environ["CLICKRANK_FOLLOW_LOAD"] = "0"


@pytest.fixture
def follow_load(monkeypatch):
    """Threads that follow the load, as outside the tests (the commands a test starts
    inherit it): the end-to-end runs, whose numbers must not depend on the threads."""
    monkeypatch.setenv("CLICKRANK_FOLLOW_LOAD", "1")


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


#: The longest tests outside an xdist group, longest first (a hint, not a rule: a test not
#: listed runs all the same). Under pytest-xdist (``--dist loadgroup``: the groups are handed
#: out first, then the other tests in collection order) they are collected first, so that
#: none of them starts last and runs alone at the end. Without xdist the order is pytest's.
FIRST = (
    "tests/test_docs_blocks.py::test_the_blocks_of_a_page_run_as_written[README.md]",
    "tests/test_default_run.py::test_the_default_run_gives_the_recorded_summary",
    "tests/test_propensity_source.py::test_the_no_interventions_scenario",
    "tests/test_clickranker.py::test_members_fit_in_processes_give_the_models_of_one_thread",
    "tests/test_clickranker.py::test_small_data_fits_its_members_here_on_every_thread",
    "tests/test_clickranker.py::test_the_last_member_takes_every_core",
    "tests/test_clickranker.py::test_above_race_from_members_raced_out",
    "tests/test_default_bits.py::test_the_default_learner_fits_what_it_fitted",
    "tests/test_clickranker.py::test_large_data_averages_each_members_fold_models",
    "tests/test_docs_blocks.py::test_the_blocks_of_a_page_run_as_written",
)


def _xdist_group(item) -> str | None:
    """The xdist group of a test (pytest-xdist's rule: its xdist_group names joined by _)."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
             for m in item.iter_markers("xdist_group")}  # fmt: skip
    return "_".join(sorted(names)) or None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if config.getvalue("loadgroup"):
        # --dist loadgroup finds a test's group in the "@group" end of its node id, which
        # pytest-xdist 3.8 writes to item._nodeid, an attribute pytest 9 no longer reads: the
        # groups were ignored and their tests spread over both workers, each starting its own
        # Spark sessions and cluster. Written here where xdist's did not take.
        from _pytest.nodeid import coerce_node_id

        for item in items:
            group = _xdist_group(item)
            if group and not item.nodeid.endswith(f"@{group}"):
                item._id = coerce_node_id(f"{item.nodeid}@{group}")

    def rank(item) -> int:
        return next(
            (i for i, prefix in enumerate(FIRST) if item.nodeid.startswith(prefix)), len(FIRST)
        )

    items.sort(key=rank)  # stable: the others keep their order
