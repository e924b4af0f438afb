"""A catalogue of bad inputs, walked through every command.

Each case runs one command on a prepared workspace and must end in one
``Error:`` line (exit 1; 2 for usage errors that click reports), with the
expected words, and leave every file of the workspace as it was.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from _safety import one_line_error, snapshot
from click.testing import CliRunner

import clickrank as cr
from clickrank.cli import cli
from clickrank.lambdamart import LambdaMART
from clickrank.simulation import Randomize, Swap


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """Inputs good and bad: LETOR files, a 6-deep click log, models, JSON and TOML files."""
    root = tmp_path_factory.mktemp("workspace")
    data = cr.synthetic(30, 10, seed=2)
    cr.save_letor(data, root / "data.txt")
    d4 = cr.synthetic(10, 10, seed=3)
    cr.save_letor(cr.RankingData(d4.X[:, :4], d4.y, d4.qptr, d4.qid, d4.doc), root / "four.txt")
    cr.simulate(
        data,
        policy=data.X[:, 0],
        click_model="pbm",
        n_sessions=4000,
        top_k=6,
        interventions=[Swap(0.3), Randomize(0.3)],
        seed=1,
        out=root / "log.parquet",
    )
    cr.simulate(
        data,
        policy=data.X[:, 0],
        click_model="pbm",
        n_sessions=500,
        top_k=6,
        seed=1,
        out=root / "noswap.parquet",
    )
    model = LambdaMART(n_estimators=3, num_leaves=4, seed=0).fit(data).save(root / "model")
    bad = root / "badmodel"
    bad.mkdir()
    (bad / "meta.json").write_text((model / "meta.json").read_text())
    (bad / "model.txt").write_text(
        (model / "model.txt").read_text().replace("num_leaves=", "num_leaves=99999", 1)
    )
    pkl = root / "pklmodel"
    pkl.mkdir()
    (pkl / "meta.json").write_text((model / "meta.json").read_text())
    (pkl / "model.txt").write_bytes(pickle.dumps(LambdaMART()))
    (root / "huge_index.txt").write_text("1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.1 1000000000:1\n")
    (root / "dup_index.txt").write_text("1 qid:1 1:0.5 2:0.1\n0 qid:1 2:0.1 2:0.3\n")
    (root / "utf16.txt").write_text("1 qid:1 1:0.5\n", encoding="utf-16")
    (root / "theta_utf16.json").write_text('{"theta": [1, 0.5]}', encoding="utf-16")
    (root / "theta_half.json").write_text('{"theta": [0.5, 0.25, 0.1, 0.1, 0.1, 0.1]}')
    (root / "theta_big.json").write_text(
        json.dumps({"theta": [1.0, 1.5, 0.3, 0.2, 0.2, 0.1], "absolute": True})
    )
    (root / "scores_short.txt").write_text("0.1\n0.2\n")
    (root / "cfg_utf16.toml").write_text("[simulation]\nsessions = 100\n", encoding="utf-16")
    (root / "cfg_huge.toml").write_text(f"[simulation]\nsessions = {10**13}\n")
    (root / "cfg_typo.toml").write_text("[simulation]\nsesions = 100\n")
    (root / "sim_utf16.toml").write_text("sessions = 100\n", encoding="utf-16")
    (root / "sim_typo.toml").write_text("sesions = 100\n")
    (root / "notalog.csv").write_text("a,b\n1,2\n")
    (root / "a_file").write_text("not a folder")
    (root / "emptydir").mkdir()
    (root / "zero.parquet").write_bytes(b"")
    return root


# (id, command line with {ws} for the workspace, expected words, exit code)
CASES = [
    # simulate
    (
        "simulate sessions 0",
        "simulate --synthetic 20 --sessions 0 --out {ws}/o.parquet",
        "--sessions must be >= 1",
        1,
    ),
    (
        "simulate sessions 1e13",
        "simulate --synthetic 20 --sessions 10000000000000 --out {ws}/o.parquet",
        "needs about",
        1,
    ),
    (
        "simulate absurd feature index",
        "simulate --data {ws}/huge_index.txt --out {ws}/o.parquet",
        "huge_index.txt:2: feature index in '1000000000:1' is implausible",
        1,
    ),
    (
        "simulate repeated feature index",
        "simulate --data {ws}/dup_index.txt --out {ws}/o.parquet",
        "dup_index.txt:2: feature index in '2:0.3' appears twice",
        1,
    ),
    (
        "simulate utf-16 letor",
        "simulate --data {ws}/utf16.txt --out {ws}/o.parquet",
        "not UTF-8 text",
        1,
    ),
    (
        "simulate eps 2",
        "simulate --synthetic 20 --eps 2 --out {ws}/o.parquet",
        "--eps must be a probability in [0, 1]",
        1,
    ),
    (
        "simulate top-k beyond the data",
        "simulate --data {ws}/data.txt --top-k 50 --sessions 10 --out {ws}/o.parquet",
        "top_k=50 is larger than the longest query",
        1,
    ),
    (
        "simulate out inside a file",
        "simulate --synthetic 20 --sessions 10 --out {ws}/a_file/o.parquet",
        "is not a folder",
        1,
    ),
    ("simulate no data", "simulate --out {ws}/o.parquet", "exactly one of --data", 2),
    (
        "simulate utf-16 config",
        "simulate --config {ws}/sim_utf16.toml --synthetic 20 --out {ws}/o.parquet",
        "UTF-16-encoded",
        2,
    ),
    (
        "simulate config typo",
        "simulate --config {ws}/sim_typo.toml --synthetic 20 --out {ws}/o.parquet",
        "unknown key 'sesions'",
        1,
    ),
    # propensity
    (
        "propensity K beyond the log",
        "propensity {ws}/log.parquet --top-k 1000 --out {ws}/t.json",
        "K=1000 exceeds the deepest position in the data it uses (6)",
        1,
    ),
    (
        "propensity randomized K beyond",
        "propensity {ws}/log.parquet --method randomized --top-k 1000 --out {ws}/t.json",
        "K=1000 exceeds the deepest position",
        1,
    ),
    (
        "propensity alpha 0",
        "propensity {ws}/log.parquet --alpha 0 --out {ws}/t.json",
        "--alpha must be in (0, 1)",
        1,
    ),
    (
        "propensity alpha 1.5",
        "propensity {ws}/log.parquet --alpha 1.5 --out {ws}/t.json",
        "--alpha must be in (0, 1)",
        1,
    ),
    (
        "propensity swap without swaps",
        "propensity {ws}/noswap.parquet --method swap --out {ws}/t.json",
        "the log has no swap sessions",
        1,
    ),
    (
        "propensity auto with no source and no --data",
        "propensity {ws}/noswap.parquet --out {ws}/t.json",
        "pass --data (the documents' features)",
        1,
    ),
    (
        "propensity not a log",
        "propensity {ws}/notalog.csv --out {ws}/t.json",
        "missing required column(s)",
        1,
    ),
    (
        "propensity empty folder",
        "propensity {ws}/emptydir --out {ws}/t.json",
        "is a folder without *.parquet files",
        1,
    ),
    (
        "propensity zero-byte parquet",
        "propensity {ws}/zero.parquet --out {ws}/t.json",
        "cannot read a click log",
        1,
    ),
    (
        "propensity out is the log",
        "propensity {ws}/log.parquet --out {ws}/log.parquet -f",
        "is the input",
        1,
    ),
    (
        "propensity out is clickrank's, no force",
        "propensity {ws}/log.parquet --out {ws}/noswap.parquet",
        "pass --force to replace it",
        1,
    ),
    # train
    (
        "train utf-16 propensities",
        "train --data {ws}/data.txt --log {ws}/log.parquet "
        "--target ips --propensities {ws}/theta_utf16.json --out {ws}/m",
        "UTF-16-encoded",
        1,
    ),
    (
        "train theta_1 not 1",
        "train --data {ws}/data.txt --log {ws}/log.parquet --target ips "
        "--propensities {ws}/theta_half.json --out {ws}/m",
        "theta at position 1 is 0.5",
        1,
    ),
    (
        "train absolute theta above 1",
        "train --data {ws}/data.txt --log {ws}/log.parquet "
        "--target ips --propensities {ws}/theta_big.json --out {ws}/m",
        "theta at position 2 is 1.5 > 1",
        1,
    ),
    (
        "train ips without propensities",
        "train --data {ws}/data.txt --log {ws}/log.parquet --target ips --out {ws}/m",
        "--propensities is required",
        2,
    ),
    (
        "train prs-pairs without propensities",
        "train --data {ws}/data.txt --log {ws}/log.parquet --target prs-pairs --out {ws}/m",
        "--propensities is required",
        2,
    ),
    (
        "fit-clicks unknown model",
        "fit-clicks {ws}/log.parquet --models foo",
        "unknown model(s) foo",
        1,
    ),
    (
        "train truncation -1",
        "train --data {ws}/data.txt --target oracle --set truncation_level=-1 --out {ws}/m",
        "truncation_level must be > 0, got -1",
        1,
    ),
    (
        "train truncation beyond any list",
        "train --data {ws}/data.txt --target oracle --set truncation_level=9223372036854775807 "
        "--out {ws}/m",
        "truncation_level must be at most 65535",
        1,
    ),
    (
        "train out is a file",
        "train --data {ws}/data.txt --target oracle --out {ws}/a_file",
        "a_file' is a file",
        2,
    ),
    (
        "train over clickrank's model",
        "train --data {ws}/data.txt --target oracle --out {ws}/model",
        "already holds a model (written by clickrank); pass --force",
        1,
    ),
    (
        "train over a user's model.txt",
        "train --data {ws}/data.txt --target oracle --out {ws}/badmodel --force",
        "clickrank did not write",
        1,
    ),
    # evaluate
    (
        "evaluate corrupted model",
        "evaluate --model {ws}/badmodel --data {ws}/data.txt",
        "does not match the size and SHA-256 digest recorded",
        1,
    ),
    (
        "evaluate pickled model",
        "evaluate --model {ws}/pklmodel --data {ws}/data.txt",
        "binary data, e.g. a pickle",
        1,
    ),
    (
        "evaluate other feature count",
        "evaluate --model {ws}/model --data {ws}/four.txt",
        "was trained on 6 features but data 'four.txt' has 4 features",
        1,
    ),
    (
        "evaluate alpha 0",
        "evaluate --model {ws}/model --data {ws}/data.txt --alpha 0",
        "--alpha must be in (0, 1)",
        1,
    ),
    (
        "evaluate short scores",
        "evaluate --scores {ws}/scores_short.txt --data {ws}/data.txt",
        "has 2 scores but the data has 300 rows",
        1,
    ),
    (
        "evaluate utf-16 scores",
        "evaluate --scores {ws}/utf16.txt --data {ws}/data.txt",
        "UTF-16-encoded",
        1,
    ),
    (
        "evaluate bad metric",
        "evaluate --model {ws}/model --data {ws}/data.txt --metric ndcg@x",
        "ndcg@x",
        1,
    ),
    # interleave
    (
        "interleave alpha 0",
        "interleave --a {ws}/model --b {ws}/model --data {ws}/data.txt --alpha 0",
        "--alpha must be in (0, 1)",
        1,
    ),
    (
        "interleave other feature count",
        "interleave --a {ws}/model --b {ws}/model --data {ws}/four.txt --impressions 100",
        "trained on 6 features but data 'four.txt'",
        1,
    ),
    (
        "interleave corrupted model",
        "interleave --a {ws}/badmodel --b {ws}/model --data {ws}/data.txt",
        "does not match the size and SHA-256 digest",
        1,
    ),
    (
        "evaluate negative seed",
        "evaluate --model {ws}/model --data {ws}/data.txt --seed -1",
        "-1 is not in the range x>=0",
        2,
    ),
    (
        "interleave negative seed",
        "interleave --a {ws}/model --b {ws}/model --data {ws}/data.txt --seed -1",
        "-1 is not in the range x>=0",
        2,
    ),
    (
        "propensity negative seed",
        "propensity {ws}/log.parquet --bootstrap 3 --seed -1 --out {ws}/t.json",
        "-1 is not in the range x>=0",
        2,
    ),
    ("tour negative seed", "tour --seed -1", "-1 is not in the range x>=0", 2),
    ("demo (old name of tour) negative seed", "demo --seed -1", "-1 is not in the range x>=0", 2),
    # fit-clicks
    (
        "fit-clicks unknown model",
        "fit-clicks {ws}/log.parquet --models pbm,foo",
        "--models: unknown model(s) foo",
        1,
    ),
    ("fit-clicks not a log", "fit-clicks {ws}/notalog.csv", "missing required column(s)", 1),
    (
        "fit-clicks test fraction 1",
        "fit-clicks {ws}/log.parquet --test-fraction 1",
        "--test-fraction must be in [0, 1)",
        1,
    ),
    # run
    ("run utf-16 config", "run {ws}/cfg_utf16.toml --out {ws}/r", "UTF-16-encoded", 1),
    ("run config typo", "run {ws}/cfg_typo.toml --out {ws}/r", "unknown key 'sesions'", 1),
    ("run sessions 1e13", "run {ws}/cfg_huge.toml --out {ws}/r", "needs about", 1),
    ("run out is a file", "run --out {ws}/a_file", "a_file' is a file", 2),
    ("run into the workspace", "run --out {ws}", "not a clickrank results folder", 1),
]


def test_every_command_is_in_the_catalogue():
    covered = {case[1].split()[0] for case in CASES}
    assert covered >= set(cli.commands)


@pytest.mark.parametrize("case, line, expected, code", CASES, ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_line_and_touches_nothing(ws, case, line, expected, code):
    before = snapshot(ws)
    args = line.format(ws=ws).split()
    res = CliRunner().invoke(cli, args)
    msg = one_line_error(res, code)
    assert expected in msg, msg
    assert snapshot(ws) == before
    assert not (ws / "o.parquet").exists() and not (ws / "t.json").exists()
