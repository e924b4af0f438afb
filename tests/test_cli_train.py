"""``clickrank train``'s parameters: ``--set KEY=VALUE`` and ``--config FILE`` reach the
estimator's constructor unchanged, its own checks answer for them in one line, the old
options still work (hidden, one warning naming the new spelling), and ``--help`` is short."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

import clickrank as cr
from clickrank.cli import cli
from clickrank.cli._train_params import LEGACY, parse_value


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small LETOR file and a log with swaps (so the propensities are estimated)."""
    root = tmp_path_factory.mktemp("train")
    data = cr.synthetic(40, 10, seed=3)
    cr.save_letor(data, root / "train.txt")
    cr.simulate(data, policy=data.X[:, 0], click_model="pbm", n_sessions=3000, top_k=8,
                interventions=[cr.simulation.Swap(0.3)], seed=1,
                out=root / "log.parquet")  # fmt: skip
    return root, data


def _train(root, out, *extra):
    args = ["train", "--data", str(root / "train.txt"), "--log", str(root / "log.parquet")]
    return CliRunner().invoke(cli, [*args, *extra, "--out", str(out)])


def _errors(res) -> list[str]:
    return [ln for ln in res.output.splitlines() if ln.startswith("Error")]


def _library(root, out, **params):
    """What the CLI should write: ``ClickRanker(**params)`` fitted on the same files."""
    data, log = cr.load_letor(root / "train.txt"), cr.read_log(root / "log.parquet")
    cr.ClickRanker(**params).fit(data, log).save(out)
    return (out / "model.txt").read_bytes()


# -- --help --------------------------------------------------------------------------------------


def test_train_help_is_short_and_grouped():
    command = cli.commands["train"]
    shown = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    assert len(shown) + 1 <= 18  # and --help
    text = CliRunner().invoke(cli, ["train", "--help"]).output
    for title in ("Inputs:", "Learner:", "Output:", "Where it runs:"):
        assert title in text
    for item in LEGACY:  # every old spelling is hidden
        for opt in item.decls[0].split("/"):
            assert f"{opt} " not in text and f"{opt}," not in text, opt
    for keep in ("--data", "--log", "-o, --out", "--propensities", "--logging-model", "--seed",
                 "--jobs", "--engine", "--set", "--config", "--target"):  # fmt: skip
        assert keep in text


# -- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.3", 0.3), ("5", 5), ("true", True), ('"x"', "x"), ("ips", "ips"), ("none", None),
     ("[4, 8]", [4, 8]), ("[naive, dr]", ["naive", "dr"]), ("[]", []),
     ("[{num_leaves=4, max_depth=2}]", [{"num_leaves": 4, "max_depth": 2}]),
     ("{bagging_freq = 1}", {"bagging_freq": 1}), ("-1", -1), ("1e-3", 0.001)],
)  # fmt: skip
def test_a_value_is_a_toml_literal_or_a_word(text, value):
    assert parse_value(text) == value and type(parse_value(text)) is type(value)


# -- --set and --config reach the estimator ------------------------------------------------------


def test_set_gives_the_model_of_clickranker_with_that_parameter(files, tmp_path):
    root, _ = files
    params = dict(learning_rate=0.2, family=["naive", "ips-shown"], n_estimators=30, folds=2)
    res = _train(root, tmp_path / "cli", "--set", "learning_rate=0.2", "--set",
                 "family=[naive, ips-shown]", "--set", "n_estimators=30", "--set",
                 "folds=2")  # fmt: skip
    assert res.exit_code == 0, res.output
    want = _library(root, tmp_path / "lib", **params)
    assert (tmp_path / "cli" / "model.txt").read_bytes() == want
    assert json.loads((tmp_path / "cli" / "selection.json").read_text())["params"][
        "learning_rate"] == 0.2  # fmt: skip
    # the same keys from a file; --set overrides the file
    config = tmp_path / "train.toml"
    config.write_text('learning_rate = 0.5\nfamily = ["naive", "ips-shown"]\n'
                      "n_estimators = 30\nfolds = 2\n")  # fmt: skip
    res = _train(root, tmp_path / "conf", "--config", str(config), "--set", "learning_rate=0.2")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "conf" / "model.txt").read_bytes() == want
    # and the old spellings, mapped to the same keys, one warning line each
    res = _train(root, tmp_path / "old", "--learning-rate", "0.2", "--family", "naive,ips-shown",
                 "--trees", "30", "--folds", "2")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (tmp_path / "old" / "model.txt").read_bytes() == want
    warned = [ln for ln in res.output.splitlines() if "deprecated" in ln]
    assert sorted(warned) == sorted([
        "warning: --learning-rate is deprecated; use --set learning_rate=0.2",
        "warning: --family is deprecated; use --set family=[naive,ips-shown]",
        "warning: --trees is deprecated; use --set n_estimators=30",
        "warning: --folds is deprecated; use --set folds=2",
    ])  # fmt: skip


def test_no_options_give_the_model_of_clickranker_with_its_defaults(files, tmp_path):
    """The defaults live in the library: ``train --data --log --out`` is ``ClickRanker()``."""
    root, _ = files
    res = _train(root, tmp_path / "cli")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cli" / "model.txt").read_bytes() == _library(root, tmp_path / "lib")


def test_one_target_takes_its_target_keys_and_its_learners(files, tmp_path):
    root, _ = files
    res = _train(root, tmp_path / "m", "--target", "naive", "--set", "candidates=all", "--set",
                 "n_estimators=20", "--set", "learning_rate=0.2", "--set", "folds=2")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "candidates: all documents" in res.output
    sel = json.loads((tmp_path / "m" / "selection.json").read_text())
    # the one-target selection's own settings, but what was set
    assert (sel["params"]["learning_rate"], sel["params"]["folds"]) == (0.2, 2)
    assert sel["params"]["early_stopping_rounds"] == 50 and sel["params"]["safe"] is False
    res = _train(root, tmp_path / "f", "--target", "naive", "--no-select", "--set",
                 "n_estimators=7", "--set", "num_leaves=4")  # fmt: skip
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "f" / "meta.json").read_text())
    assert meta["best_iteration"] == 7 and meta["params"]["num_leaves"] == 4


# -- one line for a bad key or value -------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--set", "learnig_rate=0.2"], "Error: unknown key 'learnig_rate' (--set) for "
         "clickrank.ClickRanker (clickrank train); valid keys: clip, combine, confidence,"),
        (["--target", "naive", "--set", "family=[naive]"],
         "Error: unknown key 'family' (--set) for one target's ClickRanker"),
        (["--target", "naive", "--no-select", "--set", "folds=3"],
         "Error: unknown key 'folds' (--set) for LambdaMART"),
        (["--set", "learning_rate=-1"], "Error: learning_rate must be > 0, got -1"),
        (["--set", "num_leaves=1"], "Error: num_leaves must be >= 2, got 1"),
        (["--set", "learning_rate=fast"], "Error: learning_rate takes float, got 'fast' (--set)"),
        (["--set", "folds=1"], "Error: folds must be >= 2, got 1"),
        (["--set", "grid=[1]"], "Error: grid takes tuple[dict[str, Any], ...] | list[dict"),
        (["--set", "grid=[{seed=1}]"], "Error: grid entries may not set ['seed']"),
        (["--seed", "-1"], "Error: seed must be an integer >= 0, got -1 (--seed)"),
        (["--set", "combine=best"], "Error: combine must be 'average' or 'select', got 'best'"),
        (["--set", "learning_rate"], "Error: --set takes KEY=VALUE"),
        (["--jobs", "100000"], "Error: n_jobs must be at most the"),
        (["--trees", "0"], "Error: n_estimators must be > 0, got 0"),
        (["--target", "naive", "--strategy", "fairpairs"],
         "Error: --strategy is now --target pairs:fairpairs"),
        (["--target", "naive", "--ips-weighted"],
         "Error: --ips-weighted is now --target skip-above-ips"),
    ],
)  # fmt: skip
def test_a_bad_key_or_value_is_one_line(files, tmp_path, extra, message):
    root, _ = files
    res = _train(root, tmp_path / "m", *extra)
    assert res.exit_code == 1 and "Traceback" not in res.output
    errors = _errors(res)
    assert len(errors) == 1 and errors[0].startswith(message), res.output
    assert not (tmp_path / "m").exists()


def test_a_bad_config_is_one_line_naming_the_file(files, tmp_path):
    root, _ = files
    bad = tmp_path / "bad.toml"
    bad.write_text("learning_rate = \n")
    res = _train(root, tmp_path / "m", "--config", str(bad))
    assert res.exit_code == 1 and _errors(res)[0].startswith(f"Error: --config {bad}: not valid")
    bad.write_text("learning_rat = 0.2\n")
    res = _train(root, tmp_path / "m", "--config", str(bad))
    assert _errors(res)[0].startswith(f"Error: unknown key 'learning_rat' (--config {bad})")


# -- the old spellings ---------------------------------------------------------------------------

#: A value of each old option, and the new spelling its warning names.
_OLD = {
    "--trees": ("12", "--set n_estimators=12"),
    "--learning-rate": ("0.2", "--set learning_rate=0.2"),
    "--leaves": ("4", "--set grid=[{num_leaves=4}]"),
    "--max-depth": ("2", "--set grid=[{max_depth=2}]"),
    "--min-data-in-leaf": ("5", "--set min_data_in_leaf=5"),
    "--truncation": ("10", "--set truncation_level=10"),
    "--early-stopping": ("5", "--set early_stopping_rounds=5"),
    "--early-stopping-fraction": ("0.5", "--set early_stopping_fraction=0.5"),
    "--eval-at": ("5", "--set eval_at=5"),
    "--folds": ("2", "--set folds=2"),
    "--validation": ("clicks", "--set validation=clicks"),
    "--clip": ("none", "--set clip=none"),
    "--normalize": ("query", "--set normalize=query"),
    "--candidates": ("all", "--set candidates=all"),
    "--naive-kind": ("ctr", "--set naive_kind=ctr"),
    "--click-model": ("ubm", "--set click_model=ubm"),
    "--family": ("naive,dr", "--set family=[naive,dr]"),
    "--combine": ("select", "--set combine=select"),
    "--fallback": ("safe", "--set fallback=safe"),
    "--proximal": ("0.2", "--set proximal=0.2"),
    "--safe": (None, "--set safe=true"),
    "--no-safe": (None, "--set safe=false"),
    "--refit": ("never", "--set refit=false"),
    "--workers": ("3", "--set num_workers=3"),
    "--valid-fraction": ("0.3", "--set valid_fraction=0.3"),
    "--strategy": ("skip-next", "--target pairs:skip-next"),
    "--ips-weighted": (None, "--target skip-above-ips"),
}


def test_every_old_option_is_in_the_table():
    assert set(_OLD) == {o for item in LEGACY for o in item.decls[0].split("/")}


@pytest.mark.parametrize("old", sorted(_OLD))
def test_an_old_option_still_works_and_names_its_new_spelling(files, tmp_path, old):
    """Each old option is read as its key (the unknown ``nope`` stops the command after the
    keys are read, before any work)."""
    root, _ = files
    value, new = _OLD[old]
    target = {"--strategy": "pairs", "--ips-weighted": "skip-above", "--click-model": "affine",
              "--candidates": "naive", "--naive-kind": "naive", "--normalize": "naive"}.get(
        old, "auto")  # fmt: skip
    extra = [old] + ([] if value is None else [value])
    distributed = old in ("--workers", "--valid-fraction")
    where = ["--distributed", "--engine", "spark", "--target", "naive"] if distributed else []
    if target in ("naive", "affine"):
        where += ["--target", target]
    if old in ("--strategy", "--ips-weighted"):
        where += ["--target", target, "--propensities", str(_theta(tmp_path))]
    res = _train(root, tmp_path / "m", *where, *extra, "--set", "nope=1")
    assert f"warning: {old} is deprecated; use {new}" in res.output.splitlines(), res.output
    errors = _errors(res)
    assert res.exit_code == 1 and len(errors) == 1 and "unknown key 'nope'" in errors[0], (
        res.output)  # fmt: skip
    if old == "--strategy":
        assert "pairs:skip-next" in errors[0]
    if old == "--ips-weighted":
        assert "skip-above-ips" in errors[0]


def _theta(tmp_path):
    path = tmp_path / "theta.json"
    path.write_text(json.dumps([1.0, 0.6, 0.4, 0.3, 0.25, 0.2, 0.18, 0.15]))
    return path
