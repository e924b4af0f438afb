"""Nothing lost: --force replaces only clickrank's own outputs, writes are checked before the
work, killed writes leave nothing, unwritable and full folders are one line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from _safety import (
    CLI,
    no_temp_files,
    one_line_error,
    one_line_error_of,
    run_cli,
    snapshot,
)
from click.testing import CliRunner

import clickrank as cr
from clickrank._core._io import atomic_write_json, check_output, clean_stale, is_owned
from clickrank.cli import cli
from clickrank.lambdamart import LambdaMART
from clickrank.simulation import Swap


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """A LETOR file, a click log with swaps and a saved model, outside each test's folder."""
    root = tmp_path_factory.mktemp("inputs")
    data = cr.synthetic(30, 10, seed=2)
    letor = cr.save_letor(data, root / "train.txt")
    log = root / "log.parquet"
    cr.simulate(
        data,
        policy=data.X[:, 0],
        click_model="pbm",
        n_sessions=3000,
        top_k=5,
        interventions=[Swap(0.5)],
        seed=1,
        out=log,
    )
    model = LambdaMART(n_estimators=3, num_leaves=4, seed=0).fit(data).save(root / "model")
    return {"data": str(letor), "log": str(log), "model": str(model)}


# -- --force ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["results", "x.parquet"])
def test_simulate_force_never_deletes_a_folder_clickrank_did_not_write(
    runner, tmp_path, inputs, name
):
    out = tmp_path / name
    (out / "sub").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    (out / "sub" / "data.csv").write_text("1,2\n")
    before = snapshot(tmp_path)
    res = runner.invoke(
        cli,
        ["simulate", "--data", inputs["data"], "--sessions", "100", "--out", str(out), "--force"],
    )
    msg = one_line_error(res)
    assert "clickrank did not write" in msg and "--force" not in msg
    assert snapshot(tmp_path) == before and no_temp_files(tmp_path)


@pytest.mark.parametrize("name", ["log.parquet", "logdir"])
def test_force_replaces_clickranks_own_log_but_not_once_a_user_file_is_in_it(
    runner, tmp_path, inputs, name
):
    out = tmp_path / name
    args = ["simulate", "--data", inputs["data"], "--sessions", "200", "--out", str(out)]
    assert runner.invoke(cli, args).exit_code == 0
    msg = one_line_error(runner.invoke(cli, args))  # no --force: refused, --force suggested
    assert "exists (a" in msg and "clickrank wrote); pass --force" in msg
    res = runner.invoke(cli, [*args, "--seed", "5", "--force"])
    assert res.exit_code == 0, res.output
    assert is_owned(out)
    if out.is_dir():
        (out / "notes.txt").write_text("mine")
        before = snapshot(tmp_path)
        msg = one_line_error(runner.invoke(cli, [*args, "--force"]))
        assert "notes.txt was not written by clickrank" in msg and "--force" not in msg
        assert snapshot(tmp_path) == before
    assert no_temp_files(tmp_path)


def _user_file_cases(inputs: dict, tmp: Path) -> dict[str, tuple[list[str], Path]]:
    user = tmp / "mine.json"
    png = tmp / "mine.png"
    model = tmp / "mymodel"
    return {
        "propensity --out": (["propensity", inputs["log"], "--out", str(user)], user),
        "propensity --plot": (
            ["propensity", inputs["log"], "--out", str(tmp / "t.json"), "--plot", str(png)],
            png,
        ),
        "evaluate --out": (
            [
                "evaluate",
                "--model",
                inputs["model"],
                "--data",
                inputs["data"],
                "--bootstrap",
                "10",
                "--out",
                str(user),
            ],
            user,
        ),
        "interleave --out": (
            [
                "interleave",
                "--a",
                inputs["model"],
                "--b",
                inputs["model"],
                "--data",
                inputs["data"],
                "--impressions",
                "100",
                "--no-ab",
                "--out",
                str(user),
            ],
            user,
        ),
        "train --out": (
            [
                "train",
                "--data",
                inputs["data"],
                "--target",
                "oracle",
                "--set",
                "n_estimators=2",
                "--out",
                str(model),
            ],
            model / "model.txt",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "propensity --out",
        "propensity --plot",
        "evaluate --out",
        "interleave --out",
        "train --out",
    ],
)
def test_force_does_not_replace_a_users_file(runner, tmp_path, inputs, case):
    args, target = _user_file_cases(inputs, tmp_path)[case]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("the user's own file\n")
    before = snapshot(tmp_path)
    t0 = time.perf_counter()
    msg = one_line_error(runner.invoke(cli, [*args, "--force"]))
    assert f"{target}" in msg and "clickrank did not write" in msg and "--force" not in msg
    assert time.perf_counter() - t0 < 5  # refused before the work
    assert snapshot(tmp_path) == before and no_temp_files(tmp_path)


def test_an_output_is_never_one_of_the_inputs(runner, tmp_path, inputs):
    log = tmp_path / "log.parquet"
    shutil.copy(inputs["log"], log)
    before = snapshot(tmp_path)
    msg = one_line_error(runner.invoke(cli, ["propensity", str(log), "--out", str(log), "-f"]))
    assert "is the input" in msg and "never overwrites its inputs" in msg
    assert snapshot(tmp_path) == before


def test_an_output_edited_by_the_user_is_no_longer_clickranks(runner, tmp_path, inputs):
    out = tmp_path / "theta.json"
    args = ["propensity", inputs["log"], "--out", str(out)]
    assert runner.invoke(cli, args).exit_code == 0
    assert runner.invoke(cli, [*args, "-f"]).exit_code == 0  # still clickrank's
    out.write_text(out.read_text() + "\n")  # the user edits it
    before = snapshot(tmp_path)
    msg = one_line_error(runner.invoke(cli, [*args, "-f"]))
    assert "clickrank did not write" in msg
    assert snapshot(tmp_path) == before


def test_a_copied_results_folder_keeps_its_ownership_by_content(tmp_path):
    atomic_write_json(tmp_path / "a" / "x.json", {"a": 1})
    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copy)  # new mtimes
    assert is_owned(tmp_path / "b" / "x.json") and is_owned(tmp_path / "b")
    (tmp_path / "b" / "x.json").write_text('{"a": 2}\n')
    assert not is_owned(tmp_path / "b" / "x.json") and not is_owned(tmp_path / "b")
    with pytest.raises(cr.InputError, match="did not write"):
        atomic_write_json(tmp_path / "b" / "x.json", {"a": 3})
    assert json.loads((tmp_path / "b" / "x.json").read_text()) == {"a": 2}


def test_library_writers_refuse_to_replace_a_users_file(tmp_path):
    data = cr.synthetic(5, 4, seed=0)
    path = tmp_path / "data.txt"
    path.write_text("mine\n")
    with pytest.raises(cr.InputError, match="clickrank did not write"):
        cr.save_letor(data, path)
    assert path.read_text() == "mine\n"
    with pytest.raises(cr.InputError, match="clickrank did not write"):
        check_output(tmp_path, force=True)


# -- temporary files -------------------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_of_killed_writes_are_removed_on_the_next_write(tmp_path):
    pid = _dead_pid()
    stale = tmp_path / f".theta.json.clickrank-{pid}-abc12345.tmp"
    stale.write_bytes(b"x" * 1000)
    stale_dir = tmp_path / f".log.clickrank-{pid}-q1w2e3r4.tmp"
    stale_dir.mkdir()
    (stale_dir / "part-00000.parquet").write_bytes(b"y")
    live = tmp_path / f".other.json.clickrank-{os.getpid()}-zzzzzzzz.tmp"  # a write in progress
    live.write_bytes(b"z")
    users = [
        tmp_path / ".theta.json.backup.tmp",
        tmp_path / ".x.clickrank-notapid-1.tmp",
        tmp_path / "notes.tmp",
    ]
    for u in users:
        u.write_text("mine")
    atomic_write_json(tmp_path / "theta.json", {"theta": [1.0]})
    assert not stale.exists() and not stale_dir.exists()
    assert live.exists() and all(u.read_text() == "mine" for u in users)
    assert clean_stale(tmp_path) == []


@pytest.mark.slow
@pytest.mark.slow  # four CLI processes, each killed in the middle of a long write
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, 1)])
@pytest.mark.parametrize("name", ["x.parquet", "xdir"])
def test_a_write_killed_by_a_signal_leaves_no_temporary_file(tmp_path, sig, code, name):
    out = tmp_path / name
    proc = subprocess.Popen(
        [
            *CLI,
            "simulate",
            "--synthetic",
            "50",
            "--sessions",
            "20000000",
            "--chunk-size",
            "20000",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while (
            time.time() < deadline
            and proc.poll() is None
            and not list(tmp_path.glob(f".{name}.clickrank-*.tmp"))
        ):
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        assert list(tmp_path.glob(f".{name}.clickrank-*.tmp")), "the write never started"
        time.sleep(0.5)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert no_temp_files(tmp_path) and not out.exists(), (list(tmp_path.rglob("*")), err)


_SIGNAL_AT_PUBLISH = """
import os, signal, sys
from clickrank.cli import main

out, when, sig = sys.argv[1], sys.argv[2], getattr(signal, sys.argv[3])
real = os.replace


def replace(src, dst):  # the signal arrives just before or just after the output's rename
    last = os.path.abspath(dst) == os.path.abspath(out)
    if last and when == "before":
        os.kill(os.getpid(), sig)
    real(src, dst)
    if last and when == "after":
        os.kill(os.getpid(), sig)


os.replace = replace
sys.argv = ["clickrank", "simulate", "--synthetic", "30", "--sessions", "300", "--out", out]
main()
"""


@pytest.mark.parametrize("sig, when", [("SIGTERM", "before"), ("SIGINT", "after")])
def test_the_exit_code_and_the_ledger_agree_when_a_signal_meets_the_publish(tmp_path, sig, when):
    """A signal that meets the rename publishing the command's only output: the rename and
    the ledger entry are one step that the signal waits for, and after it the command has
    completed, so it exits 0 with its log in the ledger (a signal during the write itself
    leaves nothing: the test above)."""
    out = tmp_path / "x.parquet"
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_AT_PUBLISH, str(out), when, sig],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert is_owned(out) and pl.read_parquet(out).height > 0
    assert no_temp_files(tmp_path), list(tmp_path.rglob("*"))


# -- read-only folders, full disks, absurd sizes -----------------------------------------------


def _commands(inputs: dict, folder: Path) -> dict[str, list[str]]:
    return {
        "simulate": [
            "simulate",
            "--data",
            inputs["data"],
            "--sessions",
            "1000",
            "--out",
            str(folder / "log.parquet"),
        ],
        "propensity": ["propensity", inputs["log"], "--out", str(folder / "t.json")],
        "train": [
            "train",
            "--data",
            inputs["data"],
            "--target",
            "oracle",
            "--set",
            "n_estimators=2",
            "--out",
            str(folder / "model"),
        ],
        "evaluate": [
            "evaluate",
            "--model",
            inputs["model"],
            "--data",
            inputs["data"],
            "--out",
            str(folder / "e.json"),
        ],
        "interleave": [
            "interleave",
            "--a",
            inputs["model"],
            "--b",
            inputs["model"],
            "--data",
            inputs["data"],
            "--impressions",
            "1000",
            "--out",
            str(folder / "i.json"),
        ],
        "run": ["run", "--out", str(folder / "results")],
    }


@pytest.mark.parametrize(
    "command", ["simulate", "propensity", "train", "evaluate", "interleave", "run"]
)
def test_a_read_only_output_folder_is_one_line_before_any_work(tmp_path, inputs, command):
    folder = tmp_path / "ro"
    folder.mkdir()
    proc = run_cli(_commands(inputs, folder)[command], mount=("ro", folder))
    msg = one_line_error_of(proc)
    assert f"cannot write in {folder}" in msg and "Read-only file system" in msg
    assert proc.stderr.strip().splitlines() == [msg]  # nothing ran before the check
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("command", ["simulate", "propensity", "train"])
def test_a_full_disk_is_one_line_before_any_work(tmp_path, inputs, command):
    folder = tmp_path / "full"
    folder.mkdir()
    proc = run_cli(_commands(inputs, folder)[command], mount=("full", folder))
    msg = one_line_error_of(proc)
    assert f"cannot write in {folder}" in msg and "No space left on device" in msg
    assert proc.stderr.strip().splitlines() == [msg]


def test_a_disk_that_fills_up_during_the_write_is_one_line_and_leaves_nothing(tmp_path):
    folder = tmp_path / "full"
    folder.mkdir()
    proc = run_cli(
        [
            "simulate",
            "--synthetic",
            "50",
            "--sessions",
            "200000",
            "--skip-space-check",
            "--out",
            str(folder / "log.parquet"),
        ],
        mount=("full", folder),
        size="256k",
    )
    msg = one_line_error_of(proc)
    assert msg == f"Error: cannot write {folder / 'log.parquet'}: No space left on device"
    assert list(folder.iterdir()) == []  # (the tmpfs is gone with the child anyway)


def test_a_log_larger_than_the_free_disk_is_refused_before_simulating(runner, tmp_path):
    res = runner.invoke(
        cli,
        [
            "simulate",
            "--synthetic",
            "20",
            "--sessions",
            str(10**13),
            "--out",
            str(tmp_path / "log.parquet"),
        ],
    )
    msg = one_line_error(res)
    assert "needs about" in msg and "are free on the file system" in msg
    assert list(tmp_path.iterdir()) == []


def test_a_run_config_with_absurd_sessions_is_refused_before_any_stage(runner, tmp_path):
    cfg = tmp_path / "big.toml"
    cfg.write_text(f"[simulation]\nsessions = {10**13}\n")
    res = runner.invoke(cli, ["run", str(cfg), "--out", str(tmp_path / "out")])
    msg = one_line_error(res)
    assert "needs about" in msg and not (tmp_path / "out").exists()


def test_an_in_memory_log_larger_than_the_memory_is_refused():
    data = cr.synthetic(20, 10, seed=0)
    with pytest.raises(cr.InputError, match="GiB of memory"):
        cr.simulate(data, policy=data.X[:, 0], click_model="pbm", n_sessions=10**13)
