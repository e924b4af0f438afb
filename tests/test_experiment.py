"""The experiment runner: config validation, the staged run, reruns and the CLI."""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import polars as pl
import pytest
from _safety import one_line_error, snapshot
from click.testing import CliRunner

import clickrank.cli.run  # noqa: F401  registers `run` on the root group
from clickrank import ConfigError, InputError
from clickrank.cli._root import cli
from clickrank.datasets import save_letor, synthetic
from clickrank.experiment import (
    SCHEMA,
    STAGES,
    ExperimentConfig,
    default_config_text,
    dumps_toml,
    load_config,
    run_experiment,
)

#: The run follows the machine's load, as a user's does (its numbers do not depend on the
#: threads; tests/conftest.py).
pytestmark = pytest.mark.usefixtures("follow_load")

# A run that takes a few seconds: 60 queries of 15 documents, 5k sessions, 10 trees.
TINY = {
    "data": {"n_queries": 60, "docs_per_query": 15, "train": 30, "test": 30},
    "interventions": {"swap_fraction": 0.3},
    "simulation": {"sessions": 5000, "chunk_size": 2000},
    "targets": {"clip": 0.02},
    "lambdamart": {"n_estimators": 10},
    "evaluation": {"bootstrap": 200, "permutations": 500},
    "interleaving": {"impressions": 3000},
    "learning_curve": {"sessions": [2000]},
    "report": {"figures": False},  # drawn by one test only (the slowest stage at this size)
}


def _with(**sections) -> dict:
    out = json.loads(json.dumps(TINY))
    for name, values in sections.items():
        if isinstance(values, dict):
            out.setdefault(name, {}).update(values)
        else:
            out[name] = values
    return out


def _without_timings(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "timings"}


# -- configuration -------------------------------------------------------------------------


def test_default_config_keys_are_all_in_the_schema_and_commented_keys_are_the_optional_ones():
    text = default_config_text()
    raw = tomllib.loads(text)
    for name, value in raw.items():
        if isinstance(value, dict):
            assert set(value) <= set(SCHEMA[name]), name
        else:
            assert name in SCHEMA[""]
    # every schema key either has a default or is documented as an optional, commented key
    for section, keys in SCHEMA.items():
        for key in keys:
            has_default = key in (raw if not section else raw.get(section, {}))
            assert has_default or f"# {key} = " in text, f"{section}.{key}"


def test_default_config_loads_and_round_trips_through_toml():
    cfg = load_config()
    assert cfg.origin == "<default>"
    again = tomllib.loads(cfg.to_toml())
    assert again == cfg.to_dict()
    assert load_config(again).hash() == cfg.hash()


def test_a_user_config_overrides_only_the_keys_it_sets(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("seed = 7\n[simulation]\nsessions = 1234\n")
    cfg = load_config(path)
    default = load_config()
    assert cfg["simulation"]["sessions"] == 1234
    assert cfg["seed"] == 7
    assert cfg["simulation"]["top_k"] == default["simulation"]["top_k"]
    assert cfg["click_model"] == default["click_model"]
    assert cfg.origin == str(path)


def test_stage_seeds_derive_from_the_master_seed_unless_a_section_sets_its_own():
    a, b = load_config({"seed": 1}), load_config({"seed": 2})
    assert a.seed("simulation") != b.seed("simulation")
    assert a.seed("simulation") != a.seed("production")
    assert load_config({"seed": 1}).seed("simulation") == a.seed("simulation")
    own = load_config({"seed": 1, "simulation": {"seed": 42}})
    assert own.seed("simulation") == 42
    assert own.seed("production") == a.seed("production")


BAD = [
    (
        {"simulation": {"sesions": 5}},
        r"unknown key 'sesions' in \[simulation\]; did you mean "
        r"'sessions'\?",
    ),
    (
        {"simulaton": {"sessions": 5}},
        r"unknown section or key 'simulaton'; did you mean "
        r"\[simulation\]\?",
    ),
    ({"simulation": {"sessions": -5}}, r"\[simulation\] sessions must be >= 1, got -5"),
    ({"simulation": {"sessions": "many"}}, r"\[simulation\] sessions must be an integer"),
    ({"click_model": {"eta": -0.5}}, r"\[click_model\] eta .*must be >= 0, got -0.5"),
    ({"click_model": {"eps": 1.5}}, r"\[click_model\] eps must be in \[0, 1\], got 1.5"),
    (
        {"interventions": {"swap_fraction": -0.1}},
        r"\[interventions\] swap_fraction must be in \[0, 1\]",
    ),
    (
        {
            "interventions": {
                "swap_fraction": 0.7,
                "randomize_fraction": 0.5,
                "fairpairs_fraction": 0,
            }
        },
        r"\[interventions\] fractions must sum to at most 1, got 1.2",
    ),
    ({"production": {"fraction": 0}}, r"\[production\] fraction must be in \(0, 1\]"),
    (
        {"data": {"source": "letor", "path": "no/such/train.txt"}},
        r"\[data\] path does not exist: .*no/such/train.txt",
    ),
    ({"data": {"source": "letor"}}, r"\[data\] path is required"),
    ({"data": {"train": 300, "test": 0.5}}, r"all be counts .* or all fractions"),
    (
        {"propensity": {"methods": ["randomized"]}},
        r"\[propensity\] methods method 'randomized' needs \[interventions\] randomize_fraction",
    ),
    ({"propensity": {"methods": ["swapp"]}}, r"unknown method 'swapp'.*did you mean 'swap'\?"),
    ({"targets": {"names": ["naive", "ipss"]}}, r"unknown target 'ipss'.*did you mean 'ips'\?"),
    ({"evaluation": {"compare": [["ips", "lambdamart"]]}}, r"names 'lambdamart', which is not"),
    ({"evaluation": {"metrics": ["ndcg@x"]}}, r"\[evaluation\] metrics has a bad metric"),
    ({"interleaving": {"method": "team_draft"}}, r"did you mean 'team-draft'\?"),
    ({"click_model": {"name": "cascade", "eta": 2.0}}, r"eta applies to pbm, trust, ubm"),
    ({"simulation": {"top_k": 40}}, r"top_k = 40 exceeds \[data\] docs_per_query = 30"),
    ({"lambdamart": {"select": False, "early_stopping_rounds": 10}}, r"needs validation queries"),
    (
        {"lambdamart": {"grid": [{"num_leaves": 8, "n_estimators": 5}]}},
        r"\[lambdamart\] grid entries may set",
    ),
    ({"lambdamart": {"validation": "ipss"}}, r"did you mean 'ips'\?"),
    ({"targets": {"candidates": "hybird"}}, r"did you mean 'hybrid'\?"),
    ({"targets": {"clip": "sometimes"}}, r"\[targets\] clip must be"),
    ({"evaluation": {"alpha": 1.5}}, r"\[evaluation\] alpha must be in \(0, 1\)"),
    (
        {
            "interventions": {"fairpairs_fraction": 0},
            "targets": {"names": ["pairs:fairpairs"]},
            "evaluation": {"compare": []},
        },
        r"needs \[interventions\] fairpairs_fraction",
    ),
    ({"targets": {"names": ["pairs:skip-sideways"]}}, r"bad target 'pairs:skip-sideways'"),
]


@pytest.mark.parametrize(("config", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_configs_fail_fast_with_one_line_naming_the_key_and_write_nothing(
    tmp_path, config, message
):
    out = tmp_path / "results" / "x"
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=message) as info:
        run_experiment(config, out, progress=False)
    assert time.perf_counter() - t0 < 1.0
    assert "\n" not in str(info.value)
    assert not (tmp_path / "results").exists()


def test_config_file_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[simulation\nsessions = 3\n")
    with pytest.raises(ConfigError, match=r"bad.toml: not valid TOML"):
        load_config(bad)
    bad.write_text("[simulation]\nsesions = 3\n")
    with pytest.raises(ConfigError, match=r"bad.toml: unknown key 'sesions'"):
        load_config(bad)


def test_letor_paths_are_resolved_relative_to_the_config_file(tmp_path):
    folder = tmp_path / "fold"
    folder.mkdir()
    save_letor(synthetic(8, 5, seed=1), folder / "train.txt")
    save_letor(synthetic(6, 5, seed=2), folder / "test.txt")
    conf = tmp_path / "conf"
    conf.mkdir()
    path = conf / "run.toml"
    path.write_text(
        '[data]\nsource = "letor"\npath = "../fold/train.txt"\n'
        'test_path = "../fold/test.txt"\n[simulation]\ntop_k = 5\n'
    )
    cfg = load_config(path)
    assert Path(cfg["data"]["path"]) == (folder / "train.txt").resolve()
    assert Path(cfg["data"]["test_path"]) == (folder / "test.txt").resolve()
    path.write_text(
        '[data]\nsource = "letor"\npath = "../fold/train.txt"\n'
        'test_path = "../fold/test.txt"\ntrain = 0.5\n'
    )
    with pytest.raises(ConfigError, match=r"\[data\] train splits the data only without"):
        load_config(path)
    path.write_text('[data]\nsource = "letor"\npath = "../fold/train.txt"\nn_queries = 5\n')
    with pytest.raises(ConfigError, match=r"\[data\] n_queries applies to source = \"synthetic\""):
        load_config(path)


def test_dumps_toml_writes_inline_tables_and_skips_missing_values():
    text = dumps_toml(
        {
            "seed": 3,
            "click_model": {"name": "dbn", "params": {"gamma": 0.9}, "max_label": None},
            "evaluation": {"compare": [["ips", "naive"]]},
        }
    )
    assert tomllib.loads(text) == {
        "seed": 3,
        "click_model": {"name": "dbn", "params": {"gamma": 0.9}},
        "evaluation": {"compare": [["ips", "naive"]]},
    }


# -- the run -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp") / "tiny"
    result = run_experiment(TINY, out, progress=False)
    return result


def _copy_of(run, dest: Path) -> Path:
    """A copy of a run's results folder (modification times kept: still clickrank's files),
    the state of a folder that ``run_experiment`` wrote there, without running it again."""
    import shutil

    shutil.copytree(run.out_dir, dest, symlinks=True)
    return dest


def test_a_tiny_run_writes_the_report_summary_figures_and_artefacts(tiny_run, tmp_path):
    cfg = _with(report={"figures": True})
    # from a copy of the tiny run (the same config without figures): the figures are drawn
    # from the stages' files, the report and summary rewritten
    run = run_experiment(cfg, _copy_of(tiny_run, tmp_path / "tiny"), progress=False)
    out = run.out_dir
    assert run.report_path == out / "report.md"
    summary = json.loads(run.summary_path.read_text())
    assert summary == json.loads(json.dumps(run.results))
    for name in (
        "config.toml",
        "manifest.json",
        "log.parquet",
        "log_stats.json",
        "propensities/swap.json",
        "propensities/truth.json",
        "evaluation.json",
        "interleaving.json",
        "learning_curve.json",
        "data/split.json",
    ):
        assert (out / name).is_file(), name
    for target in ("naive", "ips", "ips-true", "skip-above", "oracle"):
        assert (out / "models" / target / "model.txt").is_file()
    assert set(summary["figures"]) == {
        "ctr_by_position",
        "propensities",
        "click_heatmap",
        "skip_above_bias",
        "learning_curve",
        "forces",
    }
    report = run.report_path.read_text()
    for rel in summary["figures"].values():
        png = out / rel
        assert png.stat().st_size > 1000
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({rel})" in report  # relative link, renders on GitHub
    assert "```toml" in report and "## Rankers" in report
    # the effective config is saved and reproduces the same configuration
    assert load_config(out / "config.toml").hash() == load_config(cfg).hash()
    # no temporary files left behind
    assert not [p for p in out.rglob("*") if p.name.startswith(".") and "tmp" in p.name]


def test_the_summary_holds_metrics_with_cis_tests_interleaving_and_versions(tiny_run):
    s = tiny_run.results
    ev = s["evaluation"]
    assert ev["rankers"] == [
        "production",
        "naive",
        "ips",
        "ips-true",
        "skip-above",
        "pairs:fairpairs",
        "oracle",
        "default",
    ]
    # the default learner, as `clickrank train` fits it: its choice, safety record and the
    # propensities it used (the run's swap estimate)
    default = s["models"]["default"]
    assert default["choice"] and default["reason"]
    assert default["propensities"]["method"] == "swap"
    assert "The default's propensities: swap" in tiny_run.report_path.read_text()
    assert ("default", "naive", "ndcg@10") in {
        (c["a"], c["b"], c["metric"]) for c in ev["comparisons"]
    }
    for row in ev["table"]:
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    pairs = {(c["a"], c["b"], c["metric"]) for c in ev["comparisons"]}
    assert ("ips", "naive", "ndcg@10") in pairs
    (il,) = s["interleaving"]
    assert (il["a"], il["b"]) == ("ips", "naive")
    assert il["wins"] + il["losses"] + il["ties"] == il["n"] == 3000
    assert s["propensities"]["truth"][0] == 1.0
    log = pl.read_parquet(tiny_run.out_dir / "log.parquet")
    swap_design = log.filter(pl.col("intervention").is_in(["none", "swap"]))["session"].n_unique()
    assert s["propensities"]["estimates"]["swap"]["n_sessions"] == swap_design < 5000
    assert s["log"]["sessions"] == 5000
    assert s["versions"]["clickrank"] and s["versions"]["lightgbm"]
    assert set(s["timings"]["stages"]) == set(STAGES)
    assert tiny_run.metric("ips")["metric"] == "ndcg@10"
    assert "report:" in tiny_run.summary()


def test_the_run_states_the_logger_quality_and_the_relevance_map(tiny_run):
    from clickrank.clicklog import read_log_metadata

    s = tiny_run.results
    prod = s["production"]
    q = prod["quality"]
    # 1% of the 30 training queries would be 0 (then 1): the floor of 20 queries applies
    assert prod["trained_on_queries"] == q["trained_on"] == 20 and prod["min_queries"] == 20
    assert q["n_queries"] == 30 and q["held_out"]["queries"] == 10
    assert 0 < q["held_out"]["mean"] <= 1 and 0 < q["all"]["mean"] <= 1
    meta = read_log_metadata(tiny_run.out_dir / "log.parquet")
    assert meta["logger_quality"] == {"production": q}
    line = (
        "relevance: graded, P(click | examined) from 0.1 at label 0 to 1 at label 4 "
        "(labels 0..4; the top grade is the largest label)"
    )
    assert s["log"]["relevance"] == meta["relevance"] == line
    report = tiny_run.report_path.read_text()
    assert (
        f"trained on 20 of the 30 training queries (NDCG@10 {q['held_out']['mean']:.3f} on "
        f"the other 10"
    ) in report
    assert "Relevance: graded, P(click | examined) from 0.1" in report


def test_a_config_sets_the_floor_of_the_production_ranker_and_a_binarized_map(tmp_path):
    cfg = _with(
        production={"min_queries": 3, "fraction": 0.1},
        click_model={"relevance": "binarized"},
        learning_curve={"sessions": []},
    )
    res = run_experiment(cfg, tmp_path / "r", progress=False)
    assert res.results["production"]["trained_on_queries"] == 3
    assert res.results["log"]["relevance"].startswith(
        "relevance: binarized at label >= 3 (labels 0..4; the default"
    )
    assert "threshold=3.0" in res.results["log"]["click_model"]
    with pytest.raises(ConfigError, match=r"\[production\] min_queries must be >= 1"):
        load_config(_with(production={"min_queries": 0}))
    with pytest.raises(ConfigError, match=r"\[click_model\] max_label applies to relevance"):
        load_config(_with(click_model={"relevance": "binarized", "max_label": 2}))
    # dbn: max_label sets the satisfaction's top grade even with binarized attractiveness
    load_config(_with(click_model={"name": "dbn", "relevance": "binarized", "max_label": 2}))


def test_the_reading_follows_the_numbers_of_the_run(tiny_run):
    s = tiny_run.results
    rows = {(r["ranker"], r["metric"]): r["mean"] for r in s["evaluation"]["table"]}
    naive, ips, oracle = (rows[(r, "ndcg@10")] for r in ("naive", "ips", "oracle"))
    text = " ".join(s["reading"])
    if oracle > naive and naive < ips < oracle:
        assert f"IPS closes {100 * (ips - naive) / (oracle - naive):.0f}% of the gap" in text
    elif oracle > naive and ips <= naive:
        assert "does not improve on naive" in text
    ctr = s["log"]["ctr_by_position"]
    assert f"{ctr[0]['ctr'] / ctr[-1]['ctr']:.1f}× lower" in text


def test_a_rerun_reuses_every_stage_and_gives_identical_numbers(tiny_run):
    out = tiny_run.out_dir
    mtime = (out / "log.parquet").stat().st_mtime_ns
    again = run_experiment(TINY, out, progress=False)
    reused = {k for k, v in again.timings.items() if v["reused"]}
    assert reused == set(STAGES) - {"data", "report"}
    assert (out / "log.parquet").stat().st_mtime_ns == mtime
    assert _without_timings(again.results) == _without_timings(tiny_run.results)


def test_changing_one_section_recomputes_only_the_stages_that_read_it(tiny_run, tmp_path):
    changed = _with(interleaving={"impressions": 2000})
    res = run_experiment(changed, tiny_run.out_dir, progress=False)
    recomputed = {k for k, v in res.timings.items() if not v["reused"]}
    assert recomputed == {"data", "interleaving", "figures", "report"}  # figures: off, cheap
    assert res.results["evaluation"] == tiny_run.results["evaluation"]
    assert res.results["interleaving"][0]["n"] == 2000
    # and back: the original config reproduces the original numbers
    back = run_experiment(TINY, tiny_run.out_dir, progress=False)
    assert _without_timings(back.results) == _without_timings(tiny_run.results)


def test_force_recomputes_everything_with_the_same_numbers(tiny_run):
    res = run_experiment(TINY, tiny_run.out_dir, progress=False, force=True)
    assert not any(v["reused"] for v in res.timings.values())
    assert _without_timings(res.results) == _without_timings(tiny_run.results)


@pytest.mark.parametrize("force", [False, True])
def test_a_folder_that_is_not_a_results_folder_is_refused_even_with_force(tmp_path, force):
    for sub in ("models", "figures", "propensities"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "mine.txt").write_text("the user's")
    (tmp_path / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    res = CliRunner().invoke(cli, ["run", "--out", str(tmp_path), *(["-f"] if force else [])])
    msg = one_line_error(res)
    assert "not a clickrank results folder" in msg and "--force" not in msg
    assert snapshot(tmp_path) == before
    with pytest.raises(InputError, match="not a clickrank results folder"):
        run_experiment(TINY, tmp_path, progress=False, force=force)
    assert snapshot(tmp_path) == before


def test_a_forced_rerun_keeps_the_files_the_user_added_to_a_results_folder(tiny_run, tmp_path):
    out = _copy_of(tiny_run, tmp_path / "run")  # a folder that run_experiment(TINY) wrote
    mine = [
        out / "notes.txt",
        out / "models" / "mine.txt",
        out / "figures" / "sketch.txt",
        out / "propensities" / "old.json",
    ]
    for p in mine:
        p.parent.mkdir(exist_ok=True)
        p.write_text("the user's")
    (out / "report.md").write_text("edited by the user")  # no longer clickrank's
    with pytest.raises(InputError, match="report.md is not as clickrank wrote it"):
        run_experiment(TINY, out, progress=False, force=True)
    (out / "report.md").unlink()
    res = run_experiment(TINY, out, progress=False, force=True)
    assert not any(v["reused"] for v in res.timings.values())
    assert all(p.read_text() == "the user's" for p in mine)
    assert (out / "models" / "naive" / "model.txt").is_file() and res.report_path.is_file()


def test_progress_lines_name_each_stage_with_its_timing(tmp_path, capsys):
    cfg = _with(learning_curve={"sessions": []})
    res = run_experiment(cfg, tmp_path / "p", progress=True)
    err = capsys.readouterr().err
    for stage in STAGES:
        assert f"] {stage} ..." in err
    assert " s; " in err and "report:" in err
    assert res.results["figures"] == {}
    assert res.results["learning_curve"]["rows"] == []


def test_a_click_model_without_true_propensities_skips_ips_true_with_a_note(tmp_path):
    cfg = _with(
        click_model={"name": "dbn"},
        learning_curve={"sessions": []},
        report={"figures": False},
        interleaving={"ab": False},
    )
    res = run_experiment(cfg, tmp_path / "dbn", progress=False)
    assert "ips-true" not in res.results["models"]
    assert res.results["propensities"]["truth"] is None
    assert any("ips-true skipped" in n for n in res.results["notes"])
    assert any("cannot be checked" in s for s in res.results["reading"])


# -- the command line ------------------------------------------------------------------------


def test_cli_runs_a_config_and_prints_where_the_report_is(tmp_path):
    conf = tmp_path / "tiny.toml"
    conf.write_text(dumps_toml(_with(learning_curve={"sessions": []})))
    out = tmp_path / "res"
    runner = CliRunner()
    res = runner.invoke(cli, ["run", str(conf), "--out", str(out), "--quiet"], obj={})
    assert res.exit_code == 0, res.output
    assert f"report: {out / 'report.md'}" in res.output
    assert (out / "summary.json").is_file()


def test_cli_prints_the_default_config(tmp_path):
    res = CliRunner().invoke(cli, ["run", "--print-default-config"], obj={})
    assert res.exit_code == 0
    assert res.output == default_config_text()
    assert isinstance(load_config(tomllib.loads(res.output)), ExperimentConfig)


def test_cli_reports_a_bad_config_in_one_line_and_writes_nothing(tmp_path):
    conf = tmp_path / "bad.toml"
    conf.write_text("[click_model]\neta = -1\n")
    res = CliRunner().invoke(cli, ["run", str(conf), "--out", str(tmp_path / "out")], obj={})
    assert res.exit_code == 1
    assert res.output.strip().count("\n") == 0
    assert "[click_model] eta" in res.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_letor_run_on_mq2008_with_its_own_test_and_validation_files(mq2008, tmp_path):
    cfg = _with(
        data={
            "source": "letor",
            "path": str(mq2008 / "train.txt"),
            "test_path": str(mq2008 / "test.txt"),
            "valid_path": str(mq2008 / "vali.txt"),
        },
        learning_curve={"sessions": []},
        report={"figures": False},
        lambdamart={"early_stopping_rounds": 5},
    )
    cfg["data"] = {
        k: v
        for k, v in cfg["data"].items()
        if k not in ("n_queries", "docs_per_query", "train", "test")
    }
    res = run_experiment(cfg, tmp_path / "mq", progress=False)
    parts = res.results["data"]["parts"]
    assert set(parts) == {"train", "valid", "test"}
    assert set(parts["train"]["labels"]) <= {"0.0", "1.0", "2.0"}
    # MQ2008 grades are 0..2: the graded click model scales to the top label found
    assert "max_label=2.0" in res.results["log"]["click_model"]
    assert "(labels 0..2; the top grade is the largest label)" in res.results["log"]["relevance"]
    assert res.results["evaluation"]["n_queries"] == parts["test"]["queries"]


def test_every_config_key_is_documented_in_its_section_of_docs_experiment_md():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "experiment.md").read_text()
    for section, keys in SCHEMA.items():
        start = docs.index(f"### `[{section}]`") if section else docs.index("### Top level")
        end = docs.find("\n### ", start + 1)
        block = docs[start:end]
        for key in keys:
            assert f"| `{key}` |" in block, f"[{section}] {key} is not documented"


def test_changing_the_evaluation_reruns_evaluation_and_learning_curve_not_training(tiny_run):
    changed = _with(evaluation={"bootstrap": 150})
    res = run_experiment(changed, tiny_run.out_dir, progress=False)
    recomputed = {k for k, v in res.timings.items() if not v["reused"]}
    assert recomputed == {"data", "evaluate", "learning_curve", "figures", "report"}
    assert res.results["evaluation"]["n_bootstrap"] == 150
    reused = res.timings["train"]
    assert reused["reused"] and reused["computed_seconds"] > 0
    run_experiment(TINY, tiny_run.out_dir, progress=False)  # restore for the other tests


def test_a_stage_that_fails_is_not_reused_and_the_error_names_the_stage(
    tiny_run, tmp_path, monkeypatch
):
    out = _copy_of(tiny_run, tmp_path / "fail")  # every stage computed and in the manifest
    from clickrank import evaluation

    def broken(*args, **kwargs):
        raise InputError("boom")

    monkeypatch.setattr(evaluation, "evaluate", broken)
    changed = _with(learning_curve={"sessions": []}, evaluation={"bootstrap": 120})
    with pytest.raises(InputError, match=r"^evaluate stage: boom$"):
        run_experiment(changed, out, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "evaluate" not in manifest["stages"] and "train" in manifest["stages"]
    monkeypatch.undo()
    res = run_experiment(changed, out, progress=False)
    assert not res.timings["evaluate"]["reused"] and res.timings["train"]["reused"]


def test_preference_strategy_targets_are_trained_and_saved_under_a_safe_folder(tmp_path):
    cfg = _with(
        interventions={"swap_fraction": 0.3, "fairpairs_fraction": 0.3},
        targets={"names": ["ips", "pairs:fairpairs", "pairs:skip-above+skip-next"], "clip": 0.02},
        evaluation={"compare": [["pairs:fairpairs", "ips"]]},
        interleaving={"pairs": [["pairs:fairpairs", "ips"]], "ab": False},
        learning_curve={"sessions": [], "targets": []},
    )
    res = run_experiment(cfg, tmp_path / "pairs", progress=False)
    models = res.results["models"]
    assert models["pairs:fairpairs"]["kind"] == "pairs"
    assert models["pairs:skip-above+skip-next"]["path"] == "models/pairs_skip-above_skip-next"
    assert (tmp_path / "pairs" / "models" / "pairs_fairpairs" / "model.txt").is_file()
    assert res.results["log"]["sessions_by_intervention"]["fairpairs"] > 0
    assert res.results["interleaving"][0]["a"] == "pairs:fairpairs"
    again = run_experiment(cfg, tmp_path / "pairs", progress=False)  # loads the saved models
    assert _without_timings(again.results) == _without_timings(res.results)


def test_the_debiased_pairwise_targets_run_with_the_learning_curve(tmp_path):
    cfg = _with(
        targets={"names": ["unbiased-lambdamart", "prs-pairs", "ips-pairs"], "clip": 0.02},
        evaluation={"compare": [["unbiased-lambdamart", "prs-pairs"]]},
        interleaving={"pairs": [], "ab": False},
        learning_curve={"sessions": [2000], "targets": ["unbiased-lambdamart"]},
    )
    res = run_experiment(cfg, tmp_path / "debiased", progress=False)
    models = res.results["models"]
    assert models["unbiased-lambdamart"]["kind"] == "sessions"
    assert models["prs-pairs"]["kind"] == models["ips-pairs"]["kind"] == "pairs"
    assert models["prs-pairs"]["metadata"]["clip"] == 0.02
    meta = json.loads(
        (tmp_path / "debiased" / "models" / "unbiased-lambdamart" / "meta.json").read_text()
    )
    assert len(meta["position_bias"]["t_plus"]) == 10
    curve = res.results["learning_curve"]
    assert any(
        r["method"] == "unbiased-lambdamart" and r["sessions"] == 2000 for r in curve["rows"]
    ), curve


# -- the value rules: one per key, declared once ---------------------------------------------


def test_every_value_rule_belongs_to_a_key_of_the_schema():
    from clickrank.experiment._checks import RULES

    for section, rules in RULES.items():
        assert set(rules) <= set(SCHEMA[section]), section
    seeds = [s for s, keys in SCHEMA.items() if "seed" in keys]
    assert all("seed" in RULES[s] for s in seeds)
    from clickrank.experiment._checks import _ORDER

    assert sorted(_ORDER) == sorted(SCHEMA)  # every section checked, once


def _bad_value(rule):
    """A value the rule refuses (the value the message then quotes)."""
    if rule.choices is not None:
        return "no-such-name"
    if rule.high is not None:
        return rule.high + 1
    return rule.low - 1 if not rule.open_low else rule.low


@pytest.mark.parametrize(
    ("section", "key"),
    [(s, k) for s, rules in __import__("clickrank.experiment._checks", fromlist=["RULES"])
     .RULES.items() for k in rules],
)  # fmt: skip
def test_each_rule_refuses_a_bad_value_in_one_line_naming_the_key(section, key):
    from clickrank.experiment._checks import RULES

    rule = RULES[section][key]
    bad = _bad_value(rule)
    config = {key: bad} if not section else {section: {key: bad}}
    if section == "data" and key in ("n_queries", "docs_per_query", "n_features", "noise"):
        config["data"]["source"] = "synthetic"
    if section == "targets" and key == "clip":
        bad = 1.5
        config = {"targets": {"clip": bad}}
    where = key if not section else f"[{section}] {key}"
    with pytest.raises(ConfigError) as info:
        load_config(config)
    message = str(info.value)
    assert "\n" not in message
    assert f"{where} " in message and repr(bad) in message, message


def test_full_is_one_flag_away_and_a_config_keeps_its_own_keys():
    from clickrank.experiment import FULL

    light = load_config()["learning_curve"]["sessions"]
    full = load_config(full=True)["learning_curve"]["sessions"]
    assert len(light) == 2 and full == FULL["learning_curve"]["sessions"] == [
        10_000, 30_000, 100_000, 300_000
    ]  # fmt: skip
    mine = load_config({"learning_curve": {"sessions": [5000]}}, full=True)
    assert mine["learning_curve"]["sessions"] == [5000]
    assert "--full" in CliRunner().invoke(cli, ["run", "--help"]).output


@pytest.fixture(scope="module")
def default_target_run(tmp_path_factory):
    """A tiny run of the default target beside naive (read, never changed, by its tests)."""
    cfg = _with(
        targets={"names": ["default", "naive"], "clip": 0.02},
        evaluation={"compare": [["default", "naive"]]},
        interleaving={"pairs": [], "ab": False},
        learning_curve={"sessions": [], "targets": []},
    )
    return run_experiment(cfg, tmp_path_factory.mktemp("exp") / "default", progress=False)


def test_the_default_target_is_the_click_ranker_with_its_choice_and_safety_record(
    default_target_run,
):
    """``default`` in [targets] names fits ClickRanker's family; the summary records what it
    chose, why, and every click model's counterfactual gain over the production ranker."""
    res = default_target_run
    models = res.results["models"]
    d = models["default"]
    assert d["choice"] in ("naive", "ips-shown", "ips-hybrid", "ips-all", "dr",
                           "unbiased-lambdamart") and d["reason"]  # fmt: skip
    assert d["vs_logged"]["b"] == "logged ranking"
    assert models["naive"]["vs_safe"]["b"] == "logging"  # the production ranker's scores
    sel = json.loads((res.out_dir / "models" / "default" / "selection.json").read_text())
    assert sel["choice"] == d["choice"] and len(sel["table"]) >= 5
    assert "default" in res.results["evaluation"]["rankers"]


def test_the_report_shows_the_safety_check_of_every_click_model(default_target_run):
    from clickrank.report import render_report

    res = default_target_run
    text = (res.out_dir / "report.md").read_text()
    assert "### Safety check before deployment" in text
    safety = text.split("### Safety check before deployment", 1)[1]
    line = next(x for x in safety.splitlines() if x.startswith("| naive |"))
    gain = res.results["models"]["naive"]["vs_safe"]["gain"]
    assert f"{gain:+.4f}" in line and "logging" in line
    assert render_report  # the report module renders from the summary alone


# -- a context -------------------------------------------------------------------------------


def test_a_run_with_a_context_estimates_and_reports_theta_per_value(tmp_path):
    """``[context]``: the log gets the column, every method estimates a curve per value
    next to the true curves, the report says whether one curve is enough, and ips-true (no
    one true curve) is skipped; without the section the configuration is the one it was."""
    ctx = {"column": "device", "shares": {"phone": 0.3, "desktop": 0.7},
           "eta": {"phone": 2.0, "desktop": 0.5}}  # fmt: skip
    cfg = _with(context=ctx, propensity={"methods": ["swap", "harvest-allpairs"]},
                targets={"names": ["naive", "ips", "ips-true"]}, interleaving={"pairs": []},
                learning_curve={"sessions": []}, evaluation={"compare": []},
                simulation={"sessions": 20_000})  # fmt: skip
    res = run_experiment(cfg, tmp_path / "ctx", progress=False)
    log = pl.read_parquet(tmp_path / "ctx" / "log.parquet")
    assert set(log["device"].cast(pl.String).unique()) == {"phone", "desktop"}
    prop = res.results["propensities"]
    assert set(prop["truth_contexts"]) == {"phone", "desktop"}
    for method in ("swap", "harvest-allpairs"):
        curves = prop["estimates"][method]["contexts"]
        assert curves["columns"] == ["device"]
    report = (tmp_path / "ctx" / "report.md").read_text()
    assert "### θ by device (swap)" in report
    assert "one curve is not enough" in report
    assert any("ips-true skipped" in n for n in res.results["notes"])
    # concentration: each query its own mix, in the log's description
    mixed = _with(context={**ctx, "concentration": 1.0}, propensity={"methods": ["swap"]},
                  targets={"names": ["naive", "ips"]}, interleaving={"pairs": []},
                  learning_curve={"sessions": []}, evaluation={"compare": []},
                  simulation={"sessions": 20_000})  # fmt: skip
    run_experiment(mixed, tmp_path / "mixed", progress=False)
    from clickrank.clicklog import read_log_metadata

    meta = read_log_metadata(tmp_path / "mixed" / "log.parquet")["context"][0]
    assert meta["query_concentration"] == 1.0

    def phone_share(frame):  # each query's share of phone sessions
        first = frame.filter(pl.col("position") == 1)
        return first.group_by("query").agg(phone=(pl.col("device") == "phone").mean())["phone"]

    mixed_log = pl.read_parquet(tmp_path / "mixed" / "log.parquet")
    # Beta(0.3, 0.7) per query against the binomial noise alone
    assert phone_share(mixed_log).std() > 2 * phone_share(log).std()
    # the configuration without [context] is the one without the section (same hash)
    assert "context" not in load_config(TINY).values
    assert load_config(TINY).hash() == load_config({**TINY, "context": {}}).hash()


@pytest.mark.parametrize("ctx, message", [
    ({"shares": {"a": 0.5, "b": 0.5}}, r"\[context\] shares needs \[context\] column"),
    ({"column": "device", "shares": {"a": 0.4, "b": 0.5}, "eta": {"a": 1, "b": 2}},
     r"\[context\] shares must sum to 1"),
    ({"column": "device", "shares": {"a": 0.5, "b": 0.5}, "eta": {"a": 1}},
     r"\[context\] eta must give each value of shares its η"),
    ({"column": "device", "shares": {"a": 0.5, "b": 0.5}, "eta": {"a": 1, "b": 2},
      "concentration": 0}, r"\[context\] concentration must be a number > 0, got 0"),
    ({"concentration": 1.0}, r"\[context\] concentration needs \[context\] column"),
])  # fmt: skip
def test_a_bad_context_section_is_one_line(ctx, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_with(context=ctx))
