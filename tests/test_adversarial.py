"""Adversarial use (issue 19): inputs never overwritten, ledgers that are not clickrank's,
checks before the work, sizes refused before the work, concurrent writers refused."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from _safety import no_temp_files, one_line_error, snapshot
from click.testing import CliRunner

import clickrank as cr
from clickrank._core._io import LEDGER, LEDGER_LIMIT, atomic_write_text, check_output
from clickrank._core._validation import InputError
from clickrank.cli import cli
from clickrank.simulation import Swap


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """A LETOR file and a click log (with swaps) in a folder of their own."""
    root = tmp_path_factory.mktemp("adv_inputs")
    data = cr.synthetic(30, 10, seed=2)
    letor = cr.save_letor(data, root / "train.txt")
    log = root / "log.parquet"
    cr.simulate(data, policy=data.X[:, 0], click_model="pbm", n_sessions=2000, top_k=5,
                interventions=[Swap(0.5)], seed=1, out=log)  # fmt: skip
    return {"data": str(letor), "log": str(log), "root": str(root)}


def _copy_log(inputs, folder: Path) -> Path:
    log = folder / "log.parquet"
    log.write_bytes(Path(inputs["log"]).read_bytes())
    return log


# -- 1. an output is never an input, nor inside an input folder -----------------------------


@pytest.mark.parametrize("option", ["-o", "--plot"])
def test_fit_clicks_never_overwrites_its_log_even_with_force(tmp_path, inputs, option):
    log = _copy_log(inputs, tmp_path)
    before = snapshot(tmp_path)
    res = CliRunner().invoke(
        cli, ["fit-clicks", str(log), "--models", "pbm", option, str(log), "--force"]
    )
    msg = one_line_error(res)
    assert "is the input" in msg and option.lstrip("-")[:1] in msg
    assert snapshot(tmp_path) == before


def test_a_hard_link_to_the_input_is_the_input(tmp_path, inputs):
    log = _copy_log(inputs, tmp_path)
    link = tmp_path / "link.json"
    os.link(log, link)
    with pytest.raises(InputError, match="is the input"):
        check_output(link, force=True, inputs=[log])


def test_an_output_inside_an_input_folder_is_refused(tmp_path):
    folder = tmp_path / "logdir"
    folder.mkdir()
    with pytest.raises(InputError, match="lies inside the input"):
        check_output(folder / "theta.json", inputs=[folder])


def test_the_plot_of_interleave_is_not_its_out(tmp_path, inputs):
    out = tmp_path / "res.json"
    res = CliRunner().invoke(
        cli,
        ["interleave", "--a", inputs["data"], "--b", inputs["data"], "--data", inputs["data"],
         "--power", "-o", str(out), "--plot", str(out)],
    )  # fmt: skip
    assert "is the input" in one_line_error(res)
    assert not out.exists()


# -- 2. ledgers that are not small regular files ---------------------------------------------


def _ledger_kinds(folder: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(folder / LEDGER)
    elif kind == "folder":
        (folder / LEDGER).mkdir()
    elif kind == "symlink":
        (folder / "elsewhere.json").write_text("{}")
        (folder / LEDGER).symlink_to(folder / "elsewhere.json")
    else:  # too large
        with open(folder / LEDGER, "wb") as fh:
            fh.truncate(LEDGER_LIMIT + 1)


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink", "large"])
@pytest.mark.parametrize("force", [False, True])
def test_a_ledger_that_is_not_a_small_file_is_refused_before_the_work(tmp_path, kind, force):
    out = tmp_path / "out"
    out.mkdir()
    _ledger_kinds(out, kind)
    before = snapshot(tmp_path)
    t0 = time.perf_counter()
    res = CliRunner().invoke(
        cli,
        ["simulate", "--synthetic", "30", "--sessions", "200", "-o", str(out / "log.parquet")]
        + (["--force"] if force else []),
    )
    msg = one_line_error(res)
    assert LEDGER in msg and "neither reads nor replaces it" in msg
    assert time.perf_counter() - t0 < 10  # refused before the work, never blocked on a FIFO
    assert snapshot(tmp_path) == before and no_temp_files(tmp_path)
    assert (out / LEDGER).is_symlink() or not (out / LEDGER).is_file() or kind == "large"


def test_a_fifo_ledger_never_blocks_a_library_write(tmp_path):
    os.mkfifo(tmp_path / LEDGER)
    with pytest.raises(InputError, match="FIFO"):
        check_output(tmp_path / "x.json")
    with pytest.raises(InputError, match="FIFO"):
        atomic_write_text(tmp_path / "x.json", "{}")
    assert not (tmp_path / LEDGER).is_file() and not (tmp_path / "x.json").exists()


def test_the_ledger_is_compact_and_a_write_with_many_entries_is_fast(tmp_path):
    files = {f"f{i}": {"size": 0, "mtime_ns": 0} for i in range(20_000)}
    (tmp_path / LEDGER).write_text(
        json.dumps({"format": "clickrank.files", "version": 1, "files": files})
    )
    t0 = time.perf_counter()
    atomic_write_text(tmp_path / "x.json", "{}")
    assert time.perf_counter() - t0 < 2.0
    entries = json.loads((tmp_path / LEDGER).read_text())["files"]
    assert set(entries) == {"x.json"}  # entries of files that are gone are dropped


# -- 7. every output check before the work ---------------------------------------------------


def test_simulate_into_a_missing_folder_is_refused_before_the_work(tmp_path):
    t0 = time.perf_counter()
    res = CliRunner().invoke(
        cli, ["simulate", "--synthetic", "30", "-o", str(tmp_path / "nosuch/dir/x.parquet")]
    )
    assert "does not exist" in one_line_error(res)
    assert time.perf_counter() - t0 < 5
    assert list(tmp_path.iterdir()) == []


def test_fit_clicks_refuses_a_foreign_out_before_the_fit(tmp_path, inputs, monkeypatch):
    import clickrank.clickmodels.fitting as fitting

    def boom(*a, **k):
        raise AssertionError("the fit ran before the output check")

    monkeypatch.setattr(fitting, "compare_click_models", boom)
    out = tmp_path / "mine.json"
    out.write_text("my notes")
    res = CliRunner().invoke(
        cli, ["fit-clicks", inputs["log"], "--models", "pbm", "-o", str(out), "--force"]
    )
    assert "did not write" in one_line_error(res)
    assert out.read_text() == "my notes"


# -- 8. train into a user's folder ------------------------------------------------------------


@pytest.mark.parametrize("force", [False, True])
def test_train_never_writes_beside_a_users_files(tmp_path, inputs, force):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    res = CliRunner().invoke(
        cli,
        ["train", "--data", inputs["data"], "--target", "oracle", "--no-select", "--set",
         "n_estimators=2", "--out", str(folder)] + (["--force"] if force else []),
    )  # fmt: skip
    msg = one_line_error(res)
    assert "notes.txt" in msg and "did not write" in msg
    assert snapshot(tmp_path) == before and sorted(p.name for p in folder.iterdir()) == [
        "notes.txt"
    ]


def test_train_into_an_empty_folder_works(tmp_path, inputs):
    folder = tmp_path / "empty"
    folder.mkdir()
    res = CliRunner().invoke(
        cli,
        ["train", "--data", inputs["data"], "--target", "oracle", "--no-select", "--set",
         "n_estimators=2", "--out", str(folder)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (folder / "model.txt").is_file()


# -- 6. concurrent writers -------------------------------------------------------------------


def test_a_second_writer_of_the_same_output_is_refused(tmp_path):
    from _safety import run_cli

    from clickrank._core._io import locking

    out = tmp_path / "log.parquet"
    with locking():
        check_output(out)  # this process now writes `out`
        proc = run_cli(["simulate", "--synthetic", "20", "--sessions", "100", "-o", str(out)])
        assert proc.returncode == 1, proc.stderr
        assert f"another clickrank process (PID {os.getpid()})" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()
    proc = run_cli(["simulate", "--synthetic", "20", "--sessions", "100", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr  # released at the end of the block
    assert out.is_file()


def test_the_lock_of_a_killed_writer_is_released(tmp_path):
    import signal
    import subprocess
    import sys

    out = tmp_path / "x.json"
    code = (
        "import os, signal\n"
        "from clickrank._core._io import check_output, locking\n"
        "with locking():\n"
        f"    check_output({str(out)!r})\n"
        "    print('locked', flush=True)\n"
        "    signal.pause()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        from clickrank._core._io import locking

        with locking(), pytest.raises(InputError, match=f"PID {child.pid}"):
            check_output(out)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        with locking():
            check_output(out)  # the kernel released the dead writer's lock
    finally:
        child.kill()
        child.wait()


# -- 8. silent acceptance ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[true, false, true]", "position 1 is true; expected a number"),
        ('{"theta": [1, 1, false]}', "position 3 is false; expected a number"),
        ("[1.0, 2.5, 0.3]", "position 2 is 2.5 > theta_1 = 1"),
        ('{"theta": [1.0, 0.5, 7]}', "position 3 is 7.0 > theta_1 = 1"),
    ],
)
def test_train_refuses_boolean_or_above_one_propensities(tmp_path, inputs, text, expected):
    theta = tmp_path / "theta.json"
    theta.write_text(text)
    res = CliRunner().invoke(
        cli,
        ["train", "--data", inputs["data"], "--log", inputs["log"], "--target", "ips",
         "--propensities", str(theta), "--no-select", "--set", "n_estimators=2",
         "--out", str(tmp_path / "m")],
    )  # fmt: skip
    msg = one_line_error(res)
    assert expected in msg and "theta.json" in msg
    assert not (tmp_path / "m" / "model.txt").exists()


@pytest.mark.parametrize("kind", ["one row", "no clicks"])
def test_train_on_a_thin_log_warns_with_the_cause(tmp_path, inputs, kind):
    import polars as pl

    log = pl.read_parquet(inputs["log"])
    if kind == "one row":
        log = log.filter(pl.col("click")).head(1)
    else:
        log = log.with_columns(click=pl.lit(False))
    path = tmp_path / "thin.parquet"
    log.write_parquet(path)
    res = CliRunner().invoke(
        cli,
        ["train", "--data", inputs["data"], "--log", str(path), "--target", "naive",
         "--no-select", "--set", "n_estimators=2", "--out", str(tmp_path / "m")],
    )  # fmt: skip
    warned = [ln for ln in res.output.splitlines() if ln.startswith("warning: ")]
    cause = "only 1 session(s) (1 rows" if kind == "one row" else "has no clicks"
    assert res.exit_code in (0, 1), res.output
    assert any(cause in ln and "thin.parquet" in ln for ln in warned), res.output
    assert "Traceback" not in res.output


# -- 3. sizes refused before the work, with the estimate --------------------------------------


def _sizes(inputs) -> list[tuple[str, list[str]]]:
    d, log = inputs["data"], inputs["log"]
    return [
        ("--synthetic x --docs-per-query", ["simulate", "--synthetic", "1000000000"]),
        ("--synthetic x --docs-per-query", ["simulate", "--synthetic", "30",
                                            "--docs-per-query", "10000000"]),
        ("--bootstrap", ["propensity", log, "--bootstrap", "1000000000"]),
        ("--bootstrap", ["evaluate", "--scores", d, "--data", d, "--bootstrap", "1000000000"]),
        ("--impressions", ["interleave", "--a", d, "--b", d, "--data", d,
                           "--impressions", "1000000000000"]),
        ("--top-k", ["interleave", "--a", d, "--b", d, "--data", d, "--top-k", "100000000"]),
        ("n_estimators", ["train", "--data", d, "--target", "oracle", "--set",
                          "n_estimators=1000000000", "--no-select"]),
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(7))
def test_a_size_beyond_the_memory_is_refused_before_the_work(tmp_path, inputs, case):
    option, args = _sizes(inputs)[case]
    out = tmp_path / ("m" if args[0] == "train" else "out.json")
    args = [*args, "-o", str(out)] if args[0] != "simulate" else [*args, "-o", str(out) + ".pq"]
    before = snapshot(Path(inputs["root"]))
    t0 = time.perf_counter()
    res = CliRunner().invoke(cli, args)
    msg = one_line_error(res)
    assert msg.startswith(f"Error: {option} ") and "of memory" in msg and "available" in msg
    assert time.perf_counter() - t0 < 10
    assert list(tmp_path.iterdir()) == [] and snapshot(Path(inputs["root"])) == before


def test_check_budget_notes_long_work_and_refuses_big_work():
    from clickrank._core._budget import check_budget

    assert check_budget("--x", 5, memory=10, seconds=1, available=100) is None
    note = check_budget("--sessions", 10**12, memory=10, seconds=10**6, available=100)
    assert note.startswith("estimate: --sessions 1,000,000,000,000: at least 11.6 days")
    with pytest.raises(InputError, match=r"^--x 5: needs about 1.0 KiB of memory, but 100 bytes"):
        check_budget("--x", 5, memory=1024, available=100)


def test_simulate_prints_the_time_estimate_of_a_long_run(tmp_path, monkeypatch):
    import clickrank.cli.simulate as sim

    monkeypatch.setattr(sim, "ROW_SECONDS", 1.0)  # every row a second: 2,000 s
    res = CliRunner().invoke(
        cli, ["simulate", "--synthetic", "20", "--sessions", "200", "-o", str(tmp_path / "l.pq")]
    )
    assert res.exit_code == 0, res.output
    assert "estimate: --sessions 200: at least 33.3 minutes" in res.output


# -- 5. SIGTERM honoured within seconds, even in native code ----------------------------------


def _term_when(tmp_path: Path, args: list[str], ready: str) -> tuple[int, float, str]:
    """Start ``clickrank ARGS``, wait for ``ready`` on stderr (and 1 s), SIGTERM, time the exit."""
    import signal
    import subprocess
    import threading

    from _safety import CLI

    proc = subprocess.Popen(
        [*CLI, *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tmp_path
    )
    seen: list[str] = []
    started = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            seen.append(line)
            if ready in line:
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert started.wait(60), "".join(seen)
        time.sleep(1.0)
        assert proc.poll() is None, "".join(seen)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
        took = time.perf_counter() - t0
        reader.join(5)
        return code, took, "".join(seen)
    finally:
        proc.kill()
        proc.wait()


def test_sigterm_stops_an_endless_simulation_within_3_s(tmp_path):
    args = ["simulate", "--synthetic", "30", "--sessions", "1000000000000", "--skip-space-check",
            "-o", "log.parquet"]  # fmt: skip
    code, took, err = _term_when(tmp_path, args, "simulating")
    assert code == 143 and took < 3, (code, took, err)
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no log, no temporary file, no ledger entry left


def test_sigterm_stops_a_long_training_within_3_s(tmp_path, inputs):
    args = ["train", "--data", inputs["data"], "--target", "oracle", "--set",
            "n_estimators=1000000", "--no-select", "--out", "m"]  # fmt: skip
    code, took, err = _term_when(tmp_path, args, "estimate: n_estimators")
    assert code == 143 and took < 3, (code, took, err)
    assert "Traceback" not in err
    assert not (tmp_path / "m" / "model.txt").exists() and no_temp_files(tmp_path)


_CALLBACK = """
import ctypes, os, signal, time
from clickrank._core._signals import install
install()

def inside():  # a native library calling back into Python (llvmlite writing numba's cache)
    {body}
    sum(range(10_000))  # the Python handler runs here, inside the callback

ctypes.CFUNCTYPE(None)(inside)()
time.sleep(10)
"""


@pytest.mark.parametrize("body", ["os.kill(os.getpid(), signal.SIGTERM)", "raise ValueError(7)"])
def test_a_signal_inside_a_native_callback_ends_quietly(body):
    import subprocess
    import sys

    script = _CALLBACK.format(body=body)
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    took = time.perf_counter() - t0
    if "SIGTERM" in body:  # the watchdog ends it; no traceback from the swallowed exception
        assert run.returncode == 143 and took < 8, (run.returncode, took, run.stderr)
        assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr
    else:  # other unraisable exceptions are still reported by the previous hook
        assert run.returncode == 0 and "ValueError: 7" in run.stderr, run.stderr


# -- 4. readers check their bounds, naming the line --------------------------------------------


def test_a_yandex_record_with_100000_documents_is_one_line(tmp_path):
    f = tmp_path / "sample.txt"
    docs = ",".join(str(i) for i in range(100_000))
    f.write_text(f"q1\t1,2,3 : 1 ;\nq2\t{docs} : 5 ;\n")
    res = CliRunner().invoke(cli, ["fit-clicks", str(f), "--format", "yandex", "--models", "pbm"])
    msg = one_line_error(res)
    assert "sample.txt:2" in msg and "more than 65,535 documents" in msg


def test_a_trec_impression_with_70000_documents_names_its_line(tmp_path):
    from clickrank import DataFormatError
    from clickrank.publiclogs import load_trec_session

    n = 70_000
    lst = "[" + ",".join("0" for _ in range(n)) + "]"
    docs = "[" + ",".join(str(i) for i in range(n)) + "]"
    f = tmp_path / "trec.txt"
    f.write_text(f"1\t2\t[1,2]\t[0,0]\t[0,1]\n1\t3\t{docs}\t{lst}\t{lst}\n")
    with pytest.raises(DataFormatError, match=r"trec.txt:2, column 'doc': an impression lists"):
        load_trec_session(f)


# -- 9. the LETOR reader streams blocks: same data whatever the block size ---------------------


@pytest.mark.parametrize("block", [7, 100, 4096])
def test_load_letor_is_the_same_for_any_block_size(tmp_path, monkeypatch, block):
    import numpy as np

    import clickrank.datasets as ds

    data = cr.synthetic(12, 7, seed=4)
    f = cr.save_letor(data, tmp_path / "d.txt")
    whole = ds.load_letor(f)
    monkeypatch.setattr(ds, "LETOR_BLOCK_BYTES", block)  # lines longer than a block included
    parts = ds.load_letor(f)
    for a, b in ((whole.X, parts.X), (whole.y, parts.y), (whole.qptr, parts.qptr)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(whole.qid, parts.qid)
    text = f.read_text().splitlines()
    text[50] = "zz " + text[50]  # line 51: a label that is not a number
    (tmp_path / "bad.txt").write_text("\n".join(text) + "\n")
    with pytest.raises(cr.DataFormatError, match=r"bad.txt:51: label 'zz'"):
        ds.load_letor(tmp_path / "bad.txt")


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_fit_clicks_refuses_a_shrinkage_that_is_not_a_finite_non_negative_number(inputs, value):
    res = CliRunner().invoke(
        cli, ["fit-clicks", inputs["log"], "--models", "pbm", "--shrinkage", value]
    )
    assert "--shrinkage must be a finite number >= 0" in one_line_error(res)


def test_a_second_run_into_the_same_results_folder_is_refused(tmp_path):
    from _safety import run_cli

    from clickrank._core._io import locking

    out = tmp_path / "results"
    with locking():
        check_output(out)  # this process now writes `out`
        proc = run_cli(["run", "--out", str(out)])
    assert proc.returncode == 1, proc.stderr
    assert "another clickrank process" in proc.stderr and not out.exists()


# -- issue 35: nothing escapes the edge ---------------------------------------------------------


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, args)


def test_a_parts_folder_with_a_part_missing_a_column_names_the_part(tmp_path, inputs):
    """Item 1: one schema check for every reader of a parts folder (read_log, its metadata)."""
    import polars as pl

    parts = tmp_path / "parts"
    parts.mkdir()
    log = pl.read_parquet(inputs["log"])
    log.filter(pl.col("session") < 1000).write_parquet(parts / "a.parquet")
    log.filter(pl.col("session") >= 1000).drop("intervention").write_parquet(parts / "b.parquet")
    before = snapshot(tmp_path)
    msg = one_line_error(_invoke(["propensity", str(parts), "-o", str(tmp_path / "t.json")]))
    assert "b.parquet" in msg and "lacks column(s) 'intervention'" in msg
    with pytest.raises(cr.LogSchemaError, match=r"b.parquet: this part lacks"):
        cr.read_log_metadata(str(parts / "*.parquet"))
    log.with_columns(pl.col("position").cast(pl.Int64)).write_parquet(parts / "b.parquet")
    with pytest.raises(cr.LogSchemaError, match=r"b.parquet: this part column 'position' is Int64"):
        cr.read_log(parts)
    assert not (tmp_path / "t.json").exists()
    assert snapshot(tmp_path).keys() == before.keys()  # nothing written beside the parts


@pytest.mark.parametrize("command", ["train", "simulate", "run"])
def test_jobs_beyond_the_cpus_is_one_line_before_the_work(tmp_path, inputs, command):
    """Item 2: --jobs 100000 segfaulted after the target summary; now refused first."""
    from clickrank._core._validation import available_cpus

    jobs = str(available_cpus() + 1)
    if command == "train":
        args = ["train", "--data", inputs["data"], "--log", inputs["log"], "--target", "naive",
                "--no-select", "--set", "n_estimators=2", "--jobs", "100000",
                "--out", str(tmp_path / "m")]  # fmt: skip
    elif command == "simulate":
        args = ["simulate", "--synthetic", "20", "--jobs", jobs, "-o", str(tmp_path / "l.pq")]
    else:
        config = tmp_path / "run.toml"
        config.write_text(f"[lambdamart]\nn_jobs = {jobs}\n")
        args = ["run", str(config), "--out", str(tmp_path / "res")]
    t0 = time.perf_counter()
    res = _invoke(args)
    msg = one_line_error(res)
    assert "CPU(s) available" in msg and ("--jobs" in msg or "n_jobs" in msg)
    assert "summary" not in res.output and time.perf_counter() - t0 < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == (["run.toml"] if command == "run" else [])


def test_n_jobs_beyond_the_cpus_is_refused_by_every_estimator(inputs):
    from clickrank._core._validation import available_cpus
    from clickrank.selection import LambdaMARTCV

    data = cr.load_letor(inputs["data"])
    too_many = available_cpus() + 1
    for est in (cr.LambdaMART(n_jobs=too_many), LambdaMARTCV(n_jobs=too_many)):
        with pytest.raises(InputError, match="n_jobs must be at most"):
            est.fit(data)
    with pytest.raises(InputError, match="n_jobs must be at most"):
        cr.ClickRanker(n_jobs=too_many).fit(data, cr.read_log(inputs["log"]))
    with pytest.raises(InputError, match="n_jobs must be at most"):
        cr.simulate(data, policy=data.X[:, 0], click_model="pbm", n_sessions=10, n_jobs=too_many)


@pytest.mark.parametrize(
    ("theta", "expected"),
    [
        ("[1, -0.0, 0.3, 0.2, 0.1]", "position 2 is -0.0"),
        ("[1, 0, 0.3, 0.2, 0.1]", "position 2 is 0.0"),
    ],
)
@pytest.mark.parametrize("clip", [None, "0.1"])
def test_a_zero_theta_is_refused_whatever_the_clipping(tmp_path, inputs, theta, expected, clip):
    """Item 3."""
    path = tmp_path / "theta.json"
    path.write_text(theta)
    res = _invoke(
        ["train", "--data", inputs["data"], "--log", inputs["log"], "--target", "ips",
         "--propensities", str(path), "--no-select", "--set", "n_estimators=2",
         "--out", str(tmp_path / "m")]
        + ([] if clip is None else ["--set", f"clip={clip}"])
    )  # fmt: skip
    msg = one_line_error(res)
    assert expected in msg and "theta.json" in msg and not (tmp_path / "m").exists()


@pytest.mark.parametrize("intervals", [False, True])
def test_a_theta_rising_with_position_warns_in_one_line(tmp_path, inputs, intervals):
    """Item 3: a rise beyond the file's intervals (or with none) is one warning line."""
    from clickrank.targets import read_theta

    obj: object = [1.0, 0.3, 0.6, 0.2, 0.1]
    if intervals:
        obj = {"theta": obj, "lower": [1, 0.2, 0.5, 0.1, 0.05], "upper": [1, 0.4, 0.7, 0.3, 0.2]}
    path = tmp_path / "theta.json"
    path.write_text(json.dumps(obj))
    with pytest.warns(cr.clicklog.ClickRankWarning, match="theta rises with position") as rec:
        read_theta(path)
    assert len(rec) == 1 and "theta_3 = 0.6 > theta_2 = 0.3" in str(rec[0].message)
    # inside the intervals: noise, no warning
    path.write_text(json.dumps({"theta": [1, 0.3, 0.35], "lower": [1, 0.2, 0.25],
                                "upper": [1, 0.4, 0.45]}))  # fmt: skip
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_theta(path)


@pytest.fixture(scope="module")
def models(inputs, tmp_path_factory) -> dict[str, str]:
    """A model on 10 features (the data has 6), and a truncated copy of a good one."""
    root = tmp_path_factory.mktemp("adv_models")
    wide = cr.synthetic(20, 8, n_features=10, seed=3)
    cr.LambdaMART(n_estimators=2, num_leaves=4, seed=0).fit(wide).save(root / "wide")
    data = cr.load_letor(inputs["data"])
    good = cr.LambdaMART(n_estimators=2, num_leaves=4, seed=0).fit(data).save(root / "good")
    cut = root / "cut"
    cut.mkdir()
    (cut / "meta.json").write_bytes((good / "meta.json").read_bytes())
    (cut / "model.txt").write_bytes((good / "model.txt").read_bytes()[:300])
    return {"wide": str(root / "wide"), "cut": str(cut), "good": str(good)}


@pytest.mark.parametrize("model", ["wide", "cut"])
@pytest.mark.parametrize("target", ["auto", "naive", "ips"])
def test_the_logging_model_is_checked_or_refused_for_every_target(tmp_path, inputs, models,
                                                                   model, target):  # fmt: skip
    """Item 4: --logging-model was read only by --target auto; now checked there, refused
    elsewhere (where it has no effect), always before the work."""
    theta = tmp_path / "theta.json"
    theta.write_text("[1, 0.6, 0.4, 0.3, 0.2]")
    args = ["train", "--data", inputs["data"], "--log", inputs["log"], "--target", target,
            "--logging-model", models[model], "--set", "n_estimators=2", "--set", "folds=2",
            "--propensities", str(theta), "--out", str(tmp_path / "m")]  # fmt: skip
    res = _invoke(args)
    if target == "auto":
        msg = one_line_error(res)
        assert ("10 features" in msg) if model == "wide" else ("truncated" in msg)
    else:
        msg = one_line_error(res, 2)
        assert f"--target {target} does not use it" in msg
    assert not (tmp_path / "m").exists()


def test_a_format_1_model_warns_that_its_integrity_is_not_checked(tmp_path, models, inputs):
    """Item 5: meta.json rewritten to format_version 1 (no digest) no longer loads silently."""
    import shutil

    folder = tmp_path / "old"
    shutil.copytree(models["good"], folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["format_version"] = 1
    del meta["model_sha256"], meta["model_bytes"]
    (folder / "meta.json").write_text(json.dumps(meta))
    res = _invoke(["evaluate", "--model", str(folder), "--data", inputs["data"],
                   "--bootstrap", "5"])  # fmt: skip
    warned = [ln for ln in res.output.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 1 and "format_version 1 records no SHA-256 digest" in warned[0]


def test_evaluate_on_data_without_relevant_documents_says_so_once(tmp_path, models, inputs):
    """Item 6: a NaN table and three numpy RuntimeWarnings before; one sentence now."""
    lines = Path(inputs["data"]).read_text().splitlines()
    zero = tmp_path / "zero.txt"
    zero.write_text("\n".join("0" + ln[ln.index(" ") :] for ln in lines) + "\n")
    before = snapshot(tmp_path)
    res = _invoke(["evaluate", "--model", models["good"], "--data", str(zero), "--bootstrap", "5",
                   "-o", str(tmp_path / "e.json")])  # fmt: skip
    msg = one_line_error(res)
    assert "no query of zero.txt has a relevant document" in msg and "--empty" in msg
    assert "RuntimeWarning" not in res.output and snapshot(tmp_path) == before


def _special(tmp_path: Path, kind: str) -> str:
    if kind == "device":
        return "/dev/zero"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return str(fifo)


@pytest.mark.parametrize("kind", ["device", "fifo"])
@pytest.mark.parametrize("where", ["--data", "config", "--log", "--propensities", "config file"])
def test_a_special_file_is_not_a_regular_file(tmp_path, inputs, kind, where):
    """Item 7: /dev/zero or a FIFO is named as such (never 'does not exist'), never opened."""
    special = _special(tmp_path, kind)
    out = tmp_path / "out"
    if where == "--data":
        args = ["simulate", "--data", special, "--sessions", "10", "-o", str(out)]
    elif where == "config":
        config = tmp_path / "run.toml"
        config.write_text(f'[data]\nsource = "letor"\npath = "{special}"\n')
        args = ["run", str(config), "--out", str(out)]
    elif where == "--log":
        args = ["propensity", special, "-o", str(out)]
    elif where == "--propensities":
        args = ["train", "--data", inputs["data"], "--log", inputs["log"], "--target", "ips",
                "--propensities", special, "--no-select", "--set", "n_estimators=2",
                "--out", str(out)]  # fmt: skip
    else:
        args = ["run", special, "--out", str(out)]
    t0 = time.perf_counter()
    msg = one_line_error(_invoke(args))
    assert "not a regular file" in msg and ("character device" in msg or "FIFO" in msg), msg
    assert time.perf_counter() - t0 < 10 and not out.exists()


def test_a_yandex_file_cut_mid_record_names_the_line(tmp_path):
    """Item 8: the cut was hidden in another warning and the command exited 0."""
    f = tmp_path / "sample.txt"
    f.write_text("q1\t1,2,3 : 1 ;\nq2\t4,5,6 : 4 ; q2\t4,5")
    res = _invoke(["fit-clicks", str(f), "--format", "yandex", "--models", "pbm"])
    msg = one_line_error(res)
    assert "sample.txt:2" in msg and "ends inside a record" in msg and "'q2\\t4,5'" in msg


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--swap-k", "0", "--swap-fraction", "0.1"], "--swap-k must be in 2..--top-k (10), got 0"),
        (["--randomize-k", "0", "--randomize-fraction", "0.1"], "--randomize-k must be in 2.."),
    ],
)
def test_intervention_ks_are_named_as_options(tmp_path, args, expected):
    """Item 9: 'Swap.k must be > 0' named the class, not the option."""
    msg = one_line_error(_invoke(["simulate", "--synthetic", "20", *args,
                                  "-o", str(tmp_path / "l.pq")]))  # fmt: skip
    assert expected in msg and "Swap.k" not in msg and "Randomize.k" not in msg
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("doc", [["A", "A"], [1, 1]])
def test_duplicate_doc_ids_are_printed_as_plain_values(doc):
    """Item 9: np.str_('A') / np.int64(1) in the message before."""
    import polars as pl

    frame = pl.DataFrame({"query": [7, 7], "doc": doc, "label": [1.0, 0.0], "f1": [0.1, 0.2]})
    with pytest.raises(cr.DataFormatError) as err:
        cr.from_frame(frame)
    assert str(err.value) == f"document id {doc[0]!r} appears twice in query 7"


@pytest.mark.parametrize("kind", ["header-only csv", "0-row parquet"])
def test_an_empty_log_says_it_is_empty(tmp_path, inputs, kind):
    """Item 9: 'column session has dtype String' / 'no swap sessions' before."""
    import polars as pl

    if kind == "header-only csv":
        log = tmp_path / "log.csv"
        log.write_text("session,query,position,doc,click\n")
    else:
        log = tmp_path / "log.parquet"
        pl.read_parquet(inputs["log"]).head(0).write_parquet(log)
    msg = one_line_error(_invoke(["propensity", str(log), "-o", str(tmp_path / "t.json")]))
    assert msg == f"Error: {log}: the click log is empty (no rows)"
    assert not (tmp_path / "t.json").exists()


def test_a_metric_cut_off_beyond_any_list_is_refused(inputs, models):
    """Item 9: evaluate --metric ndcg@99999999999999999999 was accepted."""
    msg = one_line_error(_invoke(["evaluate", "--model", models["good"], "--data", inputs["data"],
                                  "--metric", "ndcg@99999999999999999999"]))  # fmt: skip
    assert "the k of metric 'ndcg@99999999999999999999' must be at most 65,535" in msg


def _estimators():
    from clickrank.policies.production import ProductionRanker
    from clickrank.selection import LambdaMARTCV
    from clickrank.training.distributed import SparkRanker

    return [cr.LambdaMART, LambdaMARTCV, cr.ClickRanker, SparkRanker, ProductionRanker]


def test_every_public_estimator_is_listed():
    """Anything public with fit and predict is in the list the constructor-contract test takes."""
    import inspect

    from clickrank.policies import production
    from clickrank.training import distributed

    public = {getattr(cr, n) for n in dir(cr) if not n.startswith("_")}
    public |= {getattr(m, n) for m in (distributed, production) for n in m.__all__}
    found = {c for c in public if inspect.isclass(c) and hasattr(c, "fit")
             and hasattr(c, "predict")}  # fmt: skip
    assert found == set(_estimators())


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda c: c.__name__)
def test_every_public_estimator_keeps_the_constructor_contract(estimator):
    """Item 10: sklearn.base.clone(ClickRanker()) raised; every estimator clones now, and
    get_params/set_params round-trip the parameters as given."""
    sklearn_base = pytest.importorskip("sklearn.base")
    est = estimator()
    params = est.get_params()
    twin = sklearn_base.clone(est)
    assert type(twin) is estimator and twin.get_params().keys() == params.keys()
    for k, v in params.items():
        assert twin.get_params()[k] == v, k
    name, value = next((k, v) for k, v in params.items() if isinstance(v, int | float)
                       and not isinstance(v, bool))  # fmt: skip
    new = value + 1
    assert est.set_params(**{name: new}) is est and est.get_params()[name] == new
    assert estimator(**est.get_params()).get_params() == est.get_params()
    with pytest.raises(InputError, match="unknown parameter") if "params" not in vars(est) \
            else _nothing():  # fmt: skip
        est.set_params(no_such_parameter=1)


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def test_a_click_ranker_with_a_list_family_clones():
    sklearn_base = pytest.importorskip("sklearn.base")
    est = cr.ClickRanker(family=["naive", "ips-shown"], grid=[{"num_leaves": 4}],
                         min_data_in_leaf=3)  # fmt: skip
    twin = sklearn_base.clone(est)
    assert twin.family == ["naive", "ips-shown"] and twin.params == {"min_data_in_leaf": 3}
