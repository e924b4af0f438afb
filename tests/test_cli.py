"""The root command: help, version, one-line errors, and a flow through the commands."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import clickrank as cr
from clickrank.cli import cli


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def test_help_lists_every_command(runner):
    res = runner.invoke(cli, ["--help"])
    assert res.exit_code == 0
    for name in ("simulate", "propensity", "train", "evaluate", "interleave", "tour"):
        assert name in res.output
    for name in cli.commands:
        sub = runner.invoke(cli, [name, "--help"])
        assert sub.exit_code == 0, (name, sub.output)
        assert "Usage:" in sub.output


def test_version(runner):
    res = runner.invoke(cli, ["--version"])
    assert res.exit_code == 0 and cr.__version__ in res.output


def test_a_bad_letor_file_gives_one_line_and_exit_1(runner, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n0 qid:2 1:0.1\n2 qid:1 1:0.3\n")
    res = runner.invoke(
        cli, ["train", "--data", str(bad), "--target", "oracle", "--out", str(tmp_path / "m")]
    )
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines == [
        f"Error: {bad}:3: rows of qid 1 are not contiguous: the query started "
        "earlier in the file and reappears here (sort the file by query)"
    ]
    assert not (tmp_path / "m").exists()


def test_debug_flag_shows_the_traceback(runner, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1:0.5\n")
    res = runner.invoke(
        cli,
        [
            "--debug",
            "train",
            "--data",
            str(bad),
            "--target",
            "oracle",
            "--out",
            str(tmp_path / "m"),
        ],
    )
    assert isinstance(res.exception, cr.DataFormatError)


def test_simulate_train_evaluate_with_fairpairs_preferences(runner, tmp_path):
    data = cr.synthetic(40, 12, seed=1)
    path = cr.save_letor(data, tmp_path / "train.txt")
    log = tmp_path / "log.parquet"
    res = runner.invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--sessions",
            "4000",
            "--fairpairs-fraction",
            "1",
            "--production-fraction",
            "0.25",
            "--seed",
            "3",
            "--out",
            str(log),
        ],
    )
    assert res.exit_code == 0, res.output
    assert set(cr.read_log(log, lazy=False)["intervention"].unique()) <= {"fairpairs", "none"}
    model = tmp_path / "model"
    res = runner.invoke(
        cli,
        [
            "train",
            "--data",
            str(path),
            "--log",
            str(log),
            "--target",
            "pairs:fairpairs",
            "--set",
            "n_estimators=5",
            "--out",
            str(model),
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((model / "meta.json").read_text())
    assert "fairpairs" in json.dumps(meta)
    res = runner.invoke(
        cli,
        [
            "evaluate",
            "--model",
            str(model),
            "--data",
            str(path),
            "--metric",
            "ndcg@10",
            "--bootstrap",
            "50",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "ndcg@10" in res.output


@pytest.mark.parametrize("target", ["unbiased-lambdamart", "prs-pairs", "ips-pairs"])
def test_train_with_the_debiased_pairwise_targets(runner, tmp_path, target):
    data = cr.synthetic(40, 12, seed=1)
    path = cr.save_letor(data, tmp_path / "train.txt")
    log = tmp_path / "log.parquet"
    cr.simulate(
        data, policy=data.X[:, 0], click_model="pbm", n_sessions=3000, top_k=6, seed=2, out=log
    )
    theta = tmp_path / "theta.json"
    theta.write_text(json.dumps({"theta": [1 / k for k in range(1, 7)]}))
    extra = [] if target == "unbiased-lambdamart" else ["--propensities", str(theta)]
    model = tmp_path / "model"
    res = runner.invoke(
        cli,
        [
            "train",
            "--data",
            str(path),
            "--log",
            str(log),
            "--target",
            target,
            "--set",
            "n_estimators=5",
            "--set",
            "grid=[{num_leaves=4, max_depth=-1}]",
            "--out",
            str(model),
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((model / "meta.json").read_text())
    assert meta["target"] == target
    assert (meta["position_bias"] is not None) == (target == "unbiased-lambdamart")
    if target == "unbiased-lambdamart":
        assert len(meta["position_bias"]["t_plus"]) == 6
        assert "position bias t_plus" in res.output


def test_tour_prints_the_worked_example(runner):
    res = runner.invoke(cli, ["tour"])
    assert res.exit_code == 0, res.output
    assert "ndcg@6   0.647" in res.output and "map      0.589" in res.output
    # the old name still works, says the new one, and is not confused with tasks.py demo
    old = runner.invoke(cli, ["demo"])
    assert old.exit_code == 0 and "ndcg@6   0.647" in old.output
    assert "`clickrank demo` is now `clickrank tour`" in old.output
    assert "demo" not in runner.invoke(cli, ["--help"]).output


def test_interleave_and_propensity_name_what_they_compared_and_wrote(runner, tmp_path):
    import numpy as np

    from clickrank.datasets import save_letor, synthetic

    data = synthetic(30, 10, seed=0)
    save_letor(data, tmp_path / "test.txt")
    for name, col in (("a.txt", 0), ("b.txt", 1)):  # scores files: one number per line
        np.savetxt(tmp_path / name, data.X[:, col])
    args = ["--a", str(tmp_path / "a.txt"), "--b", str(tmp_path / "b.txt")]
    args += ["--data", str(tmp_path / "test.txt"), "--impressions", "2000"]
    res = runner.invoke(cli, ["interleave", *args, "--out", str(tmp_path / "il.json")])
    assert res.exit_code == 0, res.output
    assert f"A = {tmp_path / 'a.txt'}, B = {tmp_path / 'b.txt'}" in res.output
    assert (
        "preferred: A (" in res.output
        or "preferred: B (" in res.output
        or ("preferred: none (no significant difference)" in res.output)
    )
    assert f"wrote {tmp_path / 'il.json'}" in res.output


def test_a_bad_config_fails_before_the_heavy_stack_is_loaded(tmp_path):
    """The CLI reports a config error before numba/LightGBM are imported (lazy package)."""
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text("[simulation]\nsesions = 10\n")
    code = (
        "import sys\nfrom clickrank.cli import main\nsys.argv = ['clickrank', 'run', "
        f"{str(bad)!r}, '--out', {str(tmp_path / 'out')!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('heavy', any(m in sys.modules for m in ('numba', 'lightgbm')))\n"
        "sys.exit(code)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 1
    assert "unknown key 'sesions' in [simulation]; did you mean 'sessions'?" in res.stderr
    assert res.stdout.strip() == "heavy False"
    assert not (tmp_path / "out").exists()  # (~0.2 s wall; timing itself is not asserted)


def test_interleave_with_a_user_population_prefers_the_true_labels(runner, tmp_path):
    data = cr.synthetic(60, 15, seed=2)
    path = cr.save_letor(data, tmp_path / "test.txt")
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("\n".join(map(str, data.y)) + "\n")
    bad.write_text("\n".join(map(str, -data.y)) + "\n")  # the reversed ranking
    out = tmp_path / "res.json"
    res = runner.invoke(
        cli,
        [
            "interleave",
            "--a",
            str(good),
            "--b",
            str(bad),
            "--data",
            str(path),
            "--click-model",
            "web-population",
            "--impressions",
            "3000",
            "--no-ab",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    delta = json.loads(out.read_text())["interleaving"]
    assert delta["wins"] > delta["losses"]


def test_interleave_with_dbn_scales_satisfaction_to_the_labels(runner, tmp_path):
    data = cr.synthetic(40, 12, seed=2)
    data = data.with_labels(np.minimum(data.y, 2))  # MQ2008-like grades 0..2
    path = cr.save_letor(data, tmp_path / "test.txt")
    good = tmp_path / "good.txt"
    good.write_text("\n".join(map(str, data.y)) + "\n")
    res = runner.invoke(
        cli,
        [
            "interleave",
            "--a",
            str(good),
            "--b",
            str(good),
            "--data",
            str(path),
            "--click-model",
            "dbn",
            "--impressions",
            "500",
            "--no-ab",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (
        "relevance: graded, P(click | examined) from 0.1 at label 0 to 1 at label 2 "
        "(labels 0..2; the top grade is the largest label); satisfaction (2^y - 1)/2^2 "
        "(ERR)"
    ) in res.output


def test_propensity_repeats_what_a_simulated_log_says_about_itself(runner, tmp_path):
    data = cr.synthetic(60, 12, seed=2)
    path = cr.save_letor(data, tmp_path / "train.txt")
    log = tmp_path / "log.parquet"
    res = runner.invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--sessions",
            "3000",
            "--swap-fraction",
            "0.5",
            "--out",
            str(log),
        ],
    )
    assert res.exit_code == 0, res.output
    printed = [ln for ln in res.output.splitlines() if ln.startswith(("relevance", "production"))]
    res = runner.invoke(cli, ["propensity", str(log), "--out", str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    assert [f"log: {ln}" for ln in printed] == [
        ln for ln in res.output.splitlines() if ln.startswith("log: ") and "sessions" not in ln
    ]
    assert "log: 3,000 sessions simulated by clickrank" in res.output
    # a log written by another tool: nothing to repeat
    cr.read_log(log, lazy=False).write_parquet(tmp_path / "plain.parquet")
    res = runner.invoke(
        cli, ["propensity", str(tmp_path / "plain.parquet"), "--out", str(tmp_path / "t2.json")]
    )
    assert res.exit_code == 0 and "log: " not in res.output


@pytest.fixture()
def logged(runner, tmp_path):
    """A small LETOR file, a simulated log with swaps and swap propensities."""
    data = cr.synthetic(60, 14, seed=2)
    path = cr.save_letor(data, tmp_path / "train.txt")
    log, theta = tmp_path / "log.parquet", tmp_path / "theta.json"
    res = runner.invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--sessions",
            "20000",
            "--swap-fraction",
            "0.3",
            "--seed",
            "1",
            "--out",
            str(log),
        ],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["propensity", str(log), "--method", "swap", "--out", str(theta)])
    assert res.exit_code == 0, res.output
    return path, log, theta


def test_train_chooses_the_target_from_clicks_by_default(runner, tmp_path, logged):
    """--target auto: ClickRanker fits the family, prints one table and the safety check,
    estimates the propensities from the swaps when none are given."""
    path, log, _ = logged
    out = tmp_path / "auto"
    res = runner.invoke(
        cli,
        ["train", "--data", str(path), "--log", str(log), "--set", "family=[naive,ips-shown]",
         "--set", "folds=3", "--set", "n_estimators=60", "--set", "grid=[{num_leaves=4}]",
         "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "propensities: swap (the log has" in res.output and "randomization" in res.output
    assert res.output.count("ClickRanker: 2 targets and their average x 3-fold CV by query") == 1
    assert "ips-dcg@10 (shown documents)" in res.output and "choice:" in res.output
    sel = json.loads((out / "selection.json").read_text())
    meta = json.loads((out / "meta.json").read_text())
    assert [r["member"] for r in sel["table"]] == ["naive", "ips-shown", "average"]
    # every member is its fold models' average (no refit on all queries)
    assert [sel["members"][m]["refit"] for m in ("naive", "ips-shown")] == [False, False]
    # no early_stopping_rounds, no learning_rate set: the default learner's own
    keys = ("early_stopping_rounds", "early_stopping_fraction", "racing", "learning_rate")
    assert tuple(sel["params"][k] for k in keys) == (20, 0.25, 0.5, 0.5)
    trees = {m: sel["members"][m]["best_params"]["n_estimators"] for m in ("naive", "ips-shown")}
    # a member's model holds its fold models (folds x repeats) cut at its number of trees
    folds = {m: max(len(r["fold_scores"]) for r in sel["members"][m]["cv_results"])
             for m in trees}  # fmt: skip
    if sel["choice"] == "average":  # one model of both members' trees
        most = sum(folds[m] * trees[m] for m in trees)
        assert max(trees.values()) < meta["best_iteration"] <= most
        assert meta["target"].startswith("average of")
    else:
        m = sel["choice"]
        assert m in trees and trees[m] < meta["best_iteration"] <= folds[m] * trees[m]
    config = tmp_path / "select.toml"
    config.write_text('family = ["naive", "ips-shown"]\nfolds = 3\nn_estimators = 60\n'
                      'grid = [{num_leaves = 4}]\ncombine = "select"\n')  # fmt: skip
    res = runner.invoke(cli, ["train", "--data", str(path), "--log", str(log), "--config",
                              str(config), "--set", "early_stopping_fraction=0.5",
                              "--out", str(tmp_path / "sel")])  # fmt: skip
    assert res.exit_code == 0, res.output
    sel = json.loads((tmp_path / "sel" / "selection.json").read_text())
    assert sel["params"]["early_stopping_fraction"] == 0.5  # given: the members' growth
    assert sel["choice"] in ("naive", "ips-shown") and len(sel["table"]) == 2
    assert sel["safety"]["safe"] == "naive"
    res = runner.invoke(
        cli, ["train", "--data", str(path), "--log", str(log), "--set", "family=[naive,nope]",
              "--out", str(tmp_path / "y")],
    )  # fmt: skip
    assert res.exit_code == 1 and "family must name members of" in res.output


def test_train_with_the_logging_model_keeps_it_when_nothing_beats_it(runner, tmp_path, logged):
    """--logging-model is the safe ranker: the oracle logger cannot be beaten from 200
    sessions, so it is kept and written to --out."""
    path, _, theta = logged
    oracle_dir, log = tmp_path / "oracle", tmp_path / "small.parquet"
    res = runner.invoke(cli, ["train", "--data", str(path), "--target", "oracle", "--no-select",
                              "--set", "n_estimators=30", "--out", str(oracle_dir)])  # fmt: skip
    assert res.exit_code == 0, res.output
    oracle = cr.LambdaMART.load(oracle_dir)
    data = cr.load_letor(path)
    cr.simulate(data, policy=oracle, click_model="pbm", n_sessions=200, top_k=10, seed=4,
                out=log)  # fmt: skip
    out = tmp_path / "safe"
    res = runner.invoke(
        cli,
        ["train", "--data", str(path), "--log", str(log), "--propensities", str(theta),
         "--set", "family=[naive,ips-shown]", "--set", "folds=3", "--set", "n_estimators=30",
         "--set", "grid=[{num_leaves=4}]", "--logging-model", str(oracle_dir),
         "--set", "fallback=safe", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "choice: logging" in res.output and "logging kept" in res.output
    assert json.loads((out / "selection.json").read_text())["choice"] == "logging"
    kept = cr.LambdaMART.load(out)
    np.testing.assert_array_equal(kept.predict(data.X), oracle.predict(data.X))
    # the default fallback: the members retrained with exposure-based CRM around the logger,
    # their average written to --out (alpha from the log's 200 sessions, in the reason)
    crm = tmp_path / "crm"
    res = runner.invoke(
        cli,
        ["train", "--data", str(path), "--log", str(log), "--propensities", str(theta),
         "--set", "family=[naive,ips-shown]", "--set", "folds=3", "--set", "n_estimators=30",
         "--set", "grid=[{num_leaves=4}]", "--logging-model", str(oracle_dir), "--out", str(crm)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads((crm / "selection.json").read_text())["choice"] == "average+crm"
    assert "CRM" in res.output and "200 sessions" in res.output
    offered = cr.LambdaMART.load(crm)
    assert not np.array_equal(offered.predict(data.X), oracle.predict(data.X))


def test_train_an_explicit_target_reports_its_selection(runner, tmp_path, logged):
    path, log, theta = logged
    out = tmp_path / "ips"
    res = runner.invoke(
        cli,
        ["train", "--data", str(path), "--log", str(log), "--propensities", str(theta),
         "--target", "ips", "--set", "folds=3", "--set", "n_estimators=60", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "candidates: " in res.output and "-> shown" in res.output and "ips-dcg@10" in res.output
    assert res.output.count("candidates: ") == 1  # the candidate set said once
    sel = json.loads((out / "selection.json").read_text())
    meta = json.loads((out / "meta.json").read_text())
    assert sel["choice"] == "ips" and len(sel["members"]["ips"]["cv_results"]) == 3
    # one target keeps LambdaMARTCV's selection (its models unchanged by the default's cut)
    keys = ("early_stopping_rounds", "early_stopping_fraction", "racing", "learning_rate")
    assert tuple(sel["params"][k] for k in keys) == (50, 0.0, 0.99, 0.1)
    assert meta["best_iteration"] == sel["members"]["ips"]["best_params"]["n_estimators"] <= 60
    assert sel["members"]["ips"]["refit"] is True
    # refit=false: the chosen shape's fold models (folds x repeats), averaged, are the model
    res = runner.invoke(
        cli,
        ["train", "--data", str(path), "--log", str(log), "--propensities", str(theta),
         "--target", "ips", "--set", "folds=3", "--set", "n_estimators=60", "--set",
         "refit=false", "--out", str(tmp_path / "bagged")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    bagged = json.loads((tmp_path / "bagged" / "selection.json").read_text())
    assert bagged["members"]["ips"]["refit"] is False
    assert bagged["members"]["ips"]["best_params"] == sel["members"]["ips"]["best_params"]
    trees = json.loads((tmp_path / "bagged" / "meta.json").read_text())["best_iteration"]
    fold_models = max(len(r["fold_scores"]) for r in bagged["members"]["ips"]["cv_results"])
    assert fold_models >= 3 and meta["best_iteration"] < trees <= fold_models * meta[
        "best_iteration"]  # fmt: skip


def test_train_fixed_shape_dr_and_option_errors(runner, tmp_path, logged):
    path, log, theta = logged
    res = runner.invoke(
        cli,
        [
            "train",
            "--data",
            str(path),
            "--log",
            str(log),
            "--propensities",
            str(theta),
            "--target",
            "dr",
            "--no-select",
            "--set",
            "n_estimators=7",
            "--out",
            str(tmp_path / "dr"),
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "dr" / "meta.json").read_text())
    assert meta["best_iteration"] == 7 and meta["params"]["num_leaves"] == 8
    assert not (tmp_path / "dr" / "selection.json").exists()
    base = ["train", "--data", str(path), "--log", str(log), "--out", str(tmp_path / "x")]
    for extra, msg in (  # the estimators' own messages, one line each
        (["--propensities", str(theta), "--set", "clip=2"], "clip is a minimum propensity in"),
        (["--propensities", str(theta), "--set", "clip=often"], "clip is a minimum propensity"),
        (["--propensities", str(theta), "--set", "folds=1"], "folds must be >= 2, got 1"),
        (["--set", "early_stopping_fraction=-0.5"], "early_stopping_fraction must be finite"),
    ):
        res = runner.invoke(cli, base + extra)
        errors = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
        assert res.exit_code == 1 and len(errors) == 1, (extra, res.output)
        assert errors[0].startswith(f"Error: {msg}"), (extra, res.output)
    assert not (tmp_path / "x").exists()
    res = runner.invoke(
        cli,
        [
            "train",
            "--data",
            str(path),
            "--log",
            str(log),
            "--target",
            "naive",
            "--set",
            "folds=2",
            "--set",
            "n_estimators=20",
            "--out",
            str(tmp_path / "naive"),
        ],
    )
    assert res.exit_code == 0 and "clicks-dcg@10" in res.output, res.output


def test_train_with_a_model_aware_target_fits_the_click_model(runner, tmp_path, logged):
    path, log, _ = logged
    res = runner.invoke(
        cli,
        [
            "train",
            "--data",
            str(path),
            "--log",
            str(log),
            "--target",
            "affine",
            "--no-select",
            "--set",
            "n_estimators=5",
            "--out",
            str(tmp_path / "affine"),
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "affine" / "meta.json").read_text())
    assert meta["target"] == "affine" and meta["best_iteration"] == 5


# -- one spelling per option; the old ones are hidden aliases with a warning ------------------


def _options(command):
    from clickrank.cli import cli

    return {o for p in cli.commands[command].params for o in getattr(p, "opts", [])}


@pytest.mark.parametrize("command", ["simulate", "propensity", "fit-clicks", "train", "evaluate",
                                     "interleave", "run"])  # fmt: skip
def test_every_command_writes_to_dash_o_or_dash_dash_out(command):
    assert {"-o", "--out"} <= _options(command)
    assert "--output" not in _options(command)


@pytest.mark.parametrize("command", ["simulate", "propensity", "interleave"])
def test_every_list_length_is_top_k(command):
    opts = _options(command)
    assert "--top-k" in opts and not opts & {"--k", "-K", "--positions"}


@pytest.mark.parametrize(
    ("command", "old"),
    [("evaluate", "--output"), ("interleave", "--output"), ("interleave", "--k"),
     ("propensity", "-K"), ("propensity", "--positions")],
)  # fmt: skip
def test_old_spellings_are_hidden_from_help(command, old):
    from click.testing import CliRunner

    from clickrank.cli import cli

    text = CliRunner().invoke(cli, [command, "--help"]).output
    assert f"{old} " not in text and f"{old}," not in text


def test_old_and_new_spellings_give_the_same_result(tmp_path):
    from click.testing import CliRunner

    from clickrank.cli import cli

    runner = CliRunner()
    log = tmp_path / "log.parquet"
    res = runner.invoke(cli, ["simulate", "--synthetic", "30", "--sessions", "3000", "--top-k",
                              "5", "--swap-fraction", "0.5", "-o", str(log)])  # fmt: skip
    assert res.exit_code == 0, res.output
    outs = {}
    for spelling in (["--top-k", "4", "--out"], ["-K", "4", "-o"], ["--positions", "4", "--out"]):
        out = tmp_path / f"t{len(outs)}.json"
        res = runner.invoke(cli, ["propensity", str(log), *spelling[:2], spelling[2], str(out)])
        assert res.exit_code == 0, res.output
        warned = [ln for ln in res.stderr.splitlines() if "deprecated" in ln]
        if spelling[0] == "--top-k":
            assert warned == []
        else:
            assert warned == [f"warning: {spelling[0]} is deprecated; use --top-k"]
        outs[spelling[0]] = json.loads(out.read_text())["theta"]
    assert outs["--top-k"] == outs["-K"] == outs["--positions"]
    assert len(outs["--top-k"]) == 4


def test_dash_dash_output_still_works_with_one_warning_line(tmp_path):
    from click.testing import CliRunner

    from clickrank.cli import cli

    runner = CliRunner()
    data = tmp_path / "d.txt"
    from clickrank.datasets import save_letor, synthetic

    save_letor(synthetic(20, 5, seed=0), data)
    scores = tmp_path / "s.txt"
    scores.write_text("\n".join(str(i % 7) for i in range(100)) + "\n")
    for opt, name in (("--out", "new.json"), ("--output", "old.json")):
        res = runner.invoke(cli, ["evaluate", "--scores", str(scores), "--data", str(data),
                                  "--bootstrap", "10", opt, str(tmp_path / name)])  # fmt: skip
        assert res.exit_code == 0, res.output
        lines = [ln for ln in res.stderr.splitlines() if "deprecated" in ln]
        assert lines == ([] if opt == "--out" else ["warning: --output is deprecated; use --out"])
    new, old = (json.loads((tmp_path / n).read_text()) for n in ("new.json", "old.json"))
    assert new == old


def test_train_option_combinations_are_checked_before_any_work(runner, tmp_path, logged):
    """What no estimator sees (which files go together) is a usage error before the work;
    the learner's values are its own checks (one line, before fitting)."""
    path, log, theta = logged
    base = ["train", "--data", str(path), "--log", str(log), "--out", str(tmp_path / "x")]
    for extra, code, msg in (
        (["--set", "proximal=0.2"], 1, "proximal (PRPO) needs the logging_model"),
        (["--set", "proximal=-1", "--logging-model", str(tmp_path)], 1, "proximal must be > 0"),
        (["--target", "ips", "--propensities", str(theta), "--set", "click_model=ubm"], 1,
         "unknown key 'click_model' (--set) for one target's ClickRanker"),
        (["--set", "fallback=maybe"], 1, "fallback must be 'crm', 'proximal' or 'safe'"),
        (["--no-select"], 2, "--no-select and --valid train one target: add --target NAME"),
        (["--target", "naive", "--logging-model", str(tmp_path)], 2,
         "--logging-model is the default learner's safe ranker"),
        (["--target", "naive", "--no-select", "--set", "refit=false"], 1,
         "unknown key 'refit' (--set) for LambdaMART"),
    ):  # fmt: skip
        res = runner.invoke(cli, base + extra)
        errors = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
        assert res.exit_code == code and len(errors) == 1 and msg in errors[0], (extra, res.output)
    res = runner.invoke(cli, ["train", "--data", str(path), "--target", "oracle", "--set",
                              "refit=sometimes", "--out", str(tmp_path / "x")])  # fmt: skip
    assert res.exit_code == 1 and "Error: refit takes bool, got 'sometimes' (--set)" in res.output
    assert not (tmp_path / "x").exists()


def test_train_a_model_aware_target_with_the_click_model_fit_clicks_chose(runner, tmp_path, logged):
    path, log, _ = logged
    out = tmp_path / "ubm"
    res = runner.invoke(cli, ["train", "--data", str(path), "--log", str(log), "--target",
                              "cascade-ips", "--set", "click_model=ubm", "--no-select", "--set",
                              "n_estimators=5", "--out", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads((out / "meta.json").read_text())["target"] == "cascade-ips"
    assert "model: ubm" in res.output  # the target's summary: the UBM, not the default DBN
