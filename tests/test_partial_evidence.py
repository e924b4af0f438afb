"""Logs that carry only part of the evidence for position bias.

The automatic source (``method="auto"``) takes a source only when it identifies every
position the log shows, by one definition (:func:`clickrank.propensity.identified`: a
finite estimate at a position with a click somewhere in the log), and hands over to the
next source otherwise; the command line and the learner go through it. A log none of the
sources can use trains without propensities, or fails with one line that says why.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from _safety import one_line_error
from click.testing import CliRunner

from clickrank._core._validation import EstimationError, InputError
from clickrank.cli import cli
from clickrank.clickmodels import make_click_model, relevance_for_labels
from clickrank.datasets import save_letor, synthetic
from clickrank.policies import DeterministicPolicy, PlackettLuce, UniformRandom
from clickrank.policies.production import production_ranker
from clickrank.propensity import estimate_propensities, identified
from clickrank.simulation import RandPair, Swap, simulate
from clickrank.targets import make_target


@pytest.fixture(scope="module")
def data():
    return synthetic(60, 12, seed=3)


@pytest.fixture(scope="module")
def prod(data):
    return production_ranker(data, 0.1, seed=0)


def _log(data, policy, *, sessions=3000, interventions=(), eta=1.0, seed=0, top_k=10):
    params, _ = relevance_for_labels("pbm", data.y, relevance="binarized", eps=0.1)
    pbm = make_click_model("pbm", **{**params, "eta": eta})
    return simulate(data, policy=policy, click_model=pbm, n_sessions=sessions,
                    interventions=list(interventions), top_k=top_k, seed=seed)  # fmt: skip


def _top1_only(log: pl.DataFrame) -> pl.DataFrame:
    return log.with_columns(
        pl.when(pl.col("position") == 1).then(pl.col("click")).otherwise(0)
        .cast(log.schema["click"]).alias("click")
    )  # fmt: skip


def test_identified_is_a_finite_estimate_at_a_clicked_position():
    theta = np.array([1.0, 0.5, np.nan, 0.0, 0.2])
    clicks = np.array([10, 3, 2, 0, 4])
    np.testing.assert_array_equal(identified(theta, clicks), [True, True, False, False, True])
    # positions the log does not reach identify nothing
    np.testing.assert_array_equal(identified(theta, clicks[:3]), [True, True, False, False, False])


def test_swaps_with_rank_two_alone_give_way_to_a_source_that_covers_every_position(data, prod):
    log = _log(data, DeterministicPolicy(prod), interventions=[Swap(0.3, k=2)])
    swap = estimate_propensities(log, method="swap")
    assert swap.K == 2  # the design covers positions 1-2 only
    got = estimate_propensities(log, method="auto", data=data, n_boot=0, sensitivity=0)
    src = got.info["source"]
    assert got.K == 10 and identified(got.theta, np.ones(10)).all()
    assert src["method"] != "swap" and "swap left position(s) 3-10 uncovered" in src["reason"]
    # the learner's targets take it: every shown position has a propensity
    make_target("ips", data, log, got)


def test_a_log_with_clicks_only_at_the_top_identifies_no_propensity(data, prod):
    for policy in (DeterministicPolicy(prod), PlackettLuce(prod)):
        log = _top1_only(_log(data, policy))
        with pytest.raises(EstimationError) as err:
            estimate_propensities(log, method="auto", data=data, n_boot=0, sensitivity=0)
        msg = str(err.value)
        assert "\n" not in msg and "no click at this position anywhere in the log" in msg
        # the estimators that read every impression say the same (not a θ of 0)
        for method, kw in (("em", {"n_boot": 0}), ("regression-em", {"data": data})):
            with pytest.raises(EstimationError, match="not identified"):
                estimate_propensities(log, method=method, **kw)


def test_a_single_randomized_session_gives_way_to_regression_em_with_the_data(
    tmp_path, data, prod
):  # fmt: skip
    log = _log(data, DeterministicPolicy(prod), sessions=2000)
    one = _log(data, DeterministicPolicy(prod), sessions=1, interventions=[RandPair(1.0)], seed=9)
    log = pl.concat([log, one.with_columns(pl.col("session") + 10_000)], how="vertical_relaxed")
    log.write_parquet(tmp_path / "log.parquet")
    save_letor(data, tmp_path / "data.txt")
    args = ["propensity", str(tmp_path / "log.parquet"), "--data", str(tmp_path / "data.txt")]
    res = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    assert "propensities: regression-em" in res.output
    assert "no features given" not in res.output


def test_the_command_line_on_partial_evidence(tmp_path, data, prod):
    """``propensity`` writes θ for every shown position or one line; ``train`` trains."""
    save_letor(data, tmp_path / "data.txt")
    k2 = _log(data, DeterministicPolicy(prod), interventions=[Swap(0.3, k=2)])
    k2.write_parquet(tmp_path / "k2.parquet")
    top = _top1_only(_log(data, DeterministicPolicy(prod)))
    top.write_parquet(tmp_path / "top.parquet")
    run = CliRunner().invoke
    d = ["--data", str(tmp_path / "data.txt")]
    res = run(cli, ["propensity", str(tmp_path / "k2.parquet"), *d, "-o", str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "t.json").read_text())
    assert len(saved["theta"]) == 10 and all(t is not None and t > 0 for t in saved["theta"])
    res = run(
        cli, ["propensity", str(tmp_path / "top.parquet"), *d, "-o", str(tmp_path / "u.json")]
    )
    assert res.exit_code == 1 and not (tmp_path / "u").exists()
    assert "anywhere in the log" in one_line_error(res)
    assert not (tmp_path / "u").exists()
    for name in ("k2", "top"):
        res = run(cli, ["train", *d, "--log", str(tmp_path / f"{name}.parquet"), "--out",
                        str(tmp_path / f"model-{name}")])  # fmt: skip
        assert res.exit_code == 0, res.output
        assert (tmp_path / f"model-{name}" / "model.txt").is_file()
        first = res.output.splitlines()[0]
        assert first.startswith("propensities: ")
        assert ("no propensities" in first) == (name == "top")


def _random_log(rng: np.random.Generator, data, prod) -> tuple[pl.DataFrame, bool]:
    """A random valid log: logger, interventions, depth, sparsity; and whether features go."""
    policy = [DeterministicPolicy(prod), PlackettLuce(prod), UniformRandom()][rng.integers(3)]
    top_k = int(rng.integers(2, 11))
    design = rng.integers(5)
    frac = float(rng.uniform(0.01, 0.5))
    interventions = [
        [],
        [Swap(frac)],
        [Swap(frac, k=int(rng.integers(2, top_k + 1)))],
        [RandPair(frac)],
        [Swap(frac, k=2), RandPair(frac / 2)],
    ][design] if top_k >= 2 else []  # fmt: skip
    sessions, eta, seed = int(rng.integers(20, 1500)), rng.uniform(0.3, 3.0), rng.integers(1 << 30)
    log = _log(data, policy, sessions=sessions, interventions=interventions, eta=float(eta),
               seed=int(seed), top_k=top_k)  # fmt: skip
    if rng.random() < 0.15:
        log = _top1_only(log)
    return log, bool(rng.random() < 0.7)


def test_every_valid_log_gives_propensities_for_every_shown_position_or_one_line(data, prod):
    """Property: over random valid logs (loggers, interventions, depths, sparsity, with and
    without features), the learner's propensity step either gives θ identified at every
    position the log shows, which the targets accept, or fails with one line."""
    rng = np.random.default_rng(2026)
    outcomes = {"theta": 0, "none": 0}
    for _ in range(200):
        log, with_data = _random_log(rng, data, prod)
        clicks = log.group_by("position").agg(pl.col("click").sum()).sort("position")
        shown = np.zeros(int(log["position"].max()))
        shown[clicks["position"].to_numpy() - 1] = clicks["click"].to_numpy()
        try:
            theta = estimate_propensities(log, method="auto", data=data if with_data else None,
                                          n_boot=0, sensitivity=0)  # fmt: skip
        except EstimationError as err:
            assert "\n" not in str(err) and str(err).startswith("auto: no propensity source: ")
            outcomes["none"] += 1
            continue
        assert theta.K >= shown.size and identified(theta.theta[: shown.size], shown).all()
        try:
            make_target("ips", data, log, theta)
        except InputError as err:  # pragma: no cover - the failure this test guards against
            pytest.fail(f"the targets refuse auto's propensities: {err}")
        outcomes["theta"] += 1
    assert outcomes["theta"] > 50 and outcomes["none"] > 10, outcomes
