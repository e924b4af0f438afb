"""Logs without interventions (issue 33): the propensity source chosen from what a log holds,
regression EM, and the default learner and ``clickrank train`` on any valid log."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import t as t_dist

import clickrank as cr
from clickrank._core._validation import EstimationError, InputError
from clickrank.cli import cli
from clickrank.clickmodels import power_law
from clickrank.policies import DeterministicPolicy, MixturePolicy, PlackettLuce
from clickrank.propensity import choose_source, estimate_propensities, regression_em

TRUTH = power_law(10, 1.0)


@pytest.fixture(scope="module")
def world():
    data = cr.synthetic(300, 20, seed=0)
    ranker = cr.production_ranker(data, fraction=0.05, seed=0)
    other = cr.production_ranker(data, fraction=0.05, seed=7)

    def log(policy, n=20_000, **kw):
        return cr.simulate(data, policy=policy, click_model="pbm", n_sessions=n, top_k=10,
                           seed=1, **kw)  # fmt: skip

    return {
        "data": data,
        "ranker": ranker,
        "deterministic": log(DeterministicPolicy(ranker)),
        "plackett-luce": log(PlackettLuce(ranker)),
        "history": log(
            MixturePolicy(
                [DeterministicPolicy(ranker, name="a"), DeterministicPolicy(other, name="b")]
            )
        ),  # fmt: skip
        "swap": log(DeterministicPolicy(ranker), interventions=[cr.Swap(0.1)]),
    }


@pytest.fixture(scope="module")
def reg_em(world):
    """Regression EM on the deterministic log with its defaults (seed 0, no bootstrap: the
    sandwich intervals spanning the second smoothing), fitted once for the tests that read it."""
    return regression_em(world["deterministic"], world["data"], seed=0)


def _ctr_ratio(log) -> np.ndarray:
    ctr = log.group_by("position").agg(c=log["click"].mean()).sort("position")["c"].to_numpy()
    return ctr / ctr[0]


# -- the source ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "kind", "method"),
    [
        ("swap", "randomized", "swap"),
        ("plackett-luce", "harvested", "em"),
        ("history", "harvested", "em"),
        ("deterministic", "model", "regression-em"),
    ],
)
def test_the_source_is_the_strongest_the_log_holds(world, log, kind, method):
    src = choose_source(world[log], world["data"])
    assert (src.kind, src.method) == (kind, method)
    assert src.weak == (kind == "model")
    assert method in src.line() and src.reason in src.line()


def test_without_features_a_deterministic_log_has_no_source_and_says_why(world):
    src = choose_source(world["deterministic"])
    assert src.kind == "none" and "no features" in src.reason
    with pytest.raises(EstimationError, match="no propensity source.*no features"):
        estimate_propensities(world["deterministic"], method="auto")


def test_a_swap_log_gets_the_same_theta_from_auto_as_from_swap(world):
    a = estimate_propensities(world["swap"], method="auto")
    s = estimate_propensities(world["swap"], method="swap")
    np.testing.assert_array_equal(a.theta, s.theta)
    assert a.info["source"]["kind"] == "randomized"


def test_a_swap_log_without_its_labels_is_harvested(world):
    """The swapped documents moved: without the intervention column the same log is EM's."""
    assert choose_source(world["swap"].drop("intervention")).method == "em"


def test_swaps_that_leave_positions_unidentified_give_way_and_say_so(world):
    data = world["data"]
    swaps = [cr.Swap(0.05, k=3)]  # rank 1 with rank 3 only: position 2 never moves
    log = cr.simulate(data, policy=DeterministicPolicy(world["ranker"]), click_model="pbm",
                      n_sessions=20_000, top_k=10, seed=1, interventions=swaps)  # fmt: skip
    assert np.isnan(estimate_propensities(log, method="swap").theta[1])
    est = estimate_propensities(log, method="auto", data=data, n_boot=0)
    assert est.method == "regression-em" and np.isfinite(est.theta).all()
    reason = est.info["source"]["reason"]
    assert "do not identify every position" in reason and "swap left position(s) 2" in reason


def test_auto_on_a_stochastic_log_recovers_theta_within_its_intervals(world):
    est = estimate_propensities(world["plackett-luce"], method="auto", n_boot=40, seed=0)
    ci = est.conf_int().select("lower", "upper").to_numpy()
    inside = (ci[:, 0] <= TRUTH) & (TRUTH <= ci[:, 1])
    assert inside[1:].sum() >= 8  # 95% intervals: at most one of nine misses is plausible


# -- regression EM ------------------------------------------------------------------------------


def test_regression_em_removes_most_of_the_bias_of_click_rates(world, reg_em):
    """A deterministic logger puts the relevant documents on top, so raw click-through
    rates fall faster than θ; regression EM must be much closer to the truth."""
    log = world["deterministic"]
    est = reg_em  # regression_em(log, data, n_boot=0): the defaults
    err = np.abs(np.log(est.theta[1:]) - np.log(TRUTH[1:]))
    naive = np.abs(np.log(_ctr_ratio(log)[1:]) - np.log(TRUTH[1:]))
    assert err.mean() < 0.5 * naive.mean()
    assert est.method == "regression-em" and "weaker guarantee" in est.warnings[0]


def test_regression_em_is_reproducible_and_its_query_bootstrap_gives_intervals(world):
    log, data = world["deterministic"], world["data"]
    a = regression_em(log, data, n_boot=5, seed=3)
    b = regression_em(log, data, n_boot=5, seed=3)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.se, b.se)
    assert a.replicates.shape == (5, 10) and np.all(a.se[1:] > 0)
    assert "bootstrap SE" in a.summary()


def test_the_orthogonal_correction_removes_bias_left_by_the_relevance_model(world):
    """Regression EM's relevance model is shrunk towards a constant along the logger's
    ranking, so its θ keeps part of the relevance decline (too steep); the orthogonal
    moments must be closer to the truth on each of three logs, and much closer on average."""
    data, ranker = world["data"], world["ranker"]
    errors = {"none": [], "orthogonal": []}
    for r in range(3):
        log = cr.simulate(data, policy=DeterministicPolicy(ranker), click_model="pbm",
                          n_sessions=20_000, first_session=20_000 * (r + 1), top_k=10,
                          seed=1)  # fmt: skip
        for correction, errs in errors.items():
            est = regression_em(log, data, correction=correction, seed=r)
            errs.append(np.abs(np.log(est.theta[1:] / TRUTH[1:])).mean())
    plain, fixed = np.array(errors["none"]), np.array(errors["orthogonal"])
    assert np.all(fixed < plain)
    assert fixed.mean() < 0.8 * plain.mean()


def test_the_orthogonal_moments_ignore_an_error_in_the_relevance_model():
    """Cells with a known placement: with the true π the moments recover θ although log γ is
    off by a function of x (first-order insensitivity), where θ given that γ is biased."""
    from clickrank.propensity._regression_em import _Cells, _orthogonal, _theta_given

    rng = np.random.default_rng(5)
    n_docs, K = 6000, 5
    x = rng.standard_normal(n_docs)
    logits = -np.outer(x, np.arange(K)) * 0.8  # higher x: nearer the top
    pi = np.exp(logits - logits.max(1, keepdims=True))
    pi /= pi.sum(1, keepdims=True)
    pos = (rng.random(n_docs)[:, None] > np.cumsum(pi, 1)).sum(1)
    theta = 1.0 / (1.0 + np.arange(K))
    gamma = 1 / (1 + np.exp(-(x - 0.5)))
    n = np.full(n_docs, 400.0)
    c = rng.binomial(400, theta[pos] * gamma).astype(float)
    query = np.arange(n_docs) // 10
    cells = _Cells(np.arange(n_docs), pos, c, n, x[:, None].astype(np.float32), query,
                   query % 2, K, 400 * 600)  # fmt: skip
    wrong = x - 0.5 - 0.6 * x  # log-odds shrunk towards a constant, as a regularized model
    est, se = _orthogonal(cells, wrong, np.ones(K), pi)
    z = np.log(est[1:] / theta[1:]) / se[1:]
    assert np.all(np.abs(z) < 3.5), z
    plain = _theta_given(cells, 1 / (1 + np.exp(-wrong)), np.ones(K), steps=50)
    assert np.all(np.abs(np.log(plain[2:] / theta[2:])) > 10 * se[2:])


def test_regression_em_gives_sandwich_intervals_without_a_bootstrap(reg_em):
    est = reg_em  # regression_em(world["deterministic"], world["data"], seed=0)
    assert est.info["correction"] == "orthogonal" and est.ci_method == "t"
    assert np.all(np.isfinite(est.se[1:])) and np.all(est.se[1:] > 0)
    assert "cluster SE" in est.summary()
    ci = est.conf_int(0.05).select("lower", "upper").to_numpy()
    assert np.all(ci[1:, 0] < est.theta[1:]) and np.all(est.theta[1:] < ci[1:, 1])


def test_regression_em_intervals_span_the_relevance_model_at_a_second_smoothing(world, reg_em):
    """The interval is the hull of the sandwich intervals around θ̂ (relevance model at its
    best round) and around θ from the same moments at 3x that round: θ̂ is unchanged, the
    interval holds both, and without the second smoothing it is the sandwich's alone."""
    from dataclasses import replace

    log, data = world["deterministic"], world["data"]
    wide = reg_em  # regression_em(log, data, seed=0)
    plain = regression_em(log, data, seed=0, sensitivity=0)
    np.testing.assert_array_equal(wide.theta, plain.theta)
    np.testing.assert_array_equal(wide.se, plain.se)
    assert plain.sensitivity is None and "sensitivity" not in plain.info
    info = wide.info["sensitivity"]
    assert info["relevance_trees"] == 3 * wide.info["trees"]
    other = np.array(info["theta"], dtype=float)
    assert np.all(other[1:] != wide.theta[1:])  # another model, another θ
    ci, ci0 = (e.conf_int(0.05).select("lower", "upper").to_numpy() for e in (wide, plain))
    assert np.all(ci[:, 0] <= ci0[:, 0]) and np.all(ci[:, 1] >= ci0[:, 1])
    assert np.any(ci[1:, 0] < ci0[1:, 0]) or np.any(ci[1:, 1] > ci0[1:, 1])
    # the hull, recomputed: the same t interval around the second θ on its own SE
    q = t_dist.isf(0.025, wide.df[1:])
    shift, se2 = wide.sensitivity[1:, 0], wide.sensitivity[1:, 1]
    np.testing.assert_allclose(shift, np.log(other[1:] / wide.theta[1:]))
    lo = np.minimum(np.log(ci0[1:, 0]), np.log(other[1:]) - q * se2)
    hi = np.maximum(np.log(ci0[1:, 1]), np.log(other[1:]) + q * se2)
    np.testing.assert_allclose(np.log(ci[1:]), np.column_stack([lo, hi]), rtol=1e-12)
    assert "spanning a second smoothing" in wide.summary()
    assert "3x" in wide.info["interval"]
    back = type(wide).from_dict(wide.to_dict())
    np.testing.assert_array_equal(back.sensitivity, wide.sensitivity)
    np.testing.assert_array_equal(back.conf_int().to_numpy(), wide.conf_int().to_numpy())
    with pytest.raises(InputError, match="sensitivity must have shape"):
        replace(plain, sensitivity=np.zeros((3, 2)))
    with pytest.raises(InputError, match="'normal' and 't' intervals only"):
        replace(plain, ci_method="score", ci_counts=np.ones((10, 4)),
                sensitivity=wide.sensitivity)  # fmt: skip
    with pytest.raises(InputError, match="sensitivity must be 0 or an integer >= 2"):
        regression_em(log, data, sensitivity=1)


def test_regression_em_refuses_what_it_cannot_use(world):
    with pytest.raises(InputError, match="needs the documents' features"):
        estimate_propensities(world["deterministic"], method="regression-em")
    with pytest.raises(InputError, match="folds"):
        regression_em(world["deterministic"], world["data"], folds=1)
    with pytest.raises(InputError, match="correction must be 'orthogonal' or 'none'"):
        regression_em(world["deterministic"], world["data"], correction="dml")
    few = world["deterministic"].filter(world["deterministic"]["query"] < 3)
    with pytest.raises(EstimationError, match="queries"):
        regression_em(few, world["data"], n_boot=0)


# -- the default learner ------------------------------------------------------------------------

_SMALL = {"grid": [{"num_leaves": 8, "max_depth": 3}], "folds": 3, "repeats": 1,
          "n_estimators": 60}  # fmt: skip


def test_the_default_learner_trains_on_a_log_without_interventions(world, reg_em):
    r = cr.ClickRanker(seed=0, **_SMALL).fit(world["data"], world["deterministic"],
                                              logging_model=world["ranker"])  # fmt: skip
    assert r.propensity_source_.kind == "model"
    assert "ips-shown" in r.members_  # propensities were found: the IPS members ran
    assert "regression-em" in r.summary() and "weaker guarantee" in r.reason_
    record = r.to_dict()["propensities"]
    assert record["method"] == "regression-em" and len(record["theta"]) == 10
    # it uses θ̂ alone: no trees for the intervals' second smoothing, the same θ̂
    assert r.propensities_.sensitivity is None
    np.testing.assert_array_equal(r.propensities_.theta, reg_em.theta)  # regression_em(seed=0)


def test_without_a_source_the_default_learner_trains_what_needs_none(world):
    data = world["data"]
    one = cr.simulate(data, policy=DeterministicPolicy(world["ranker"]), click_model="pbm",
                      n_sessions=3000, top_k=1, seed=2)  # fmt: skip
    r = cr.ClickRanker(seed=0, **_SMALL).fit(data, one)
    assert r.propensity_source_.kind == "none"
    assert set(r.members_) == {"naive", "unbiased-lambdamart"}


@pytest.mark.parametrize("n_queries", [1, 6])
def test_a_log_of_a_few_of_the_datas_queries_trains(world, n_queries):
    """A log that shows a handful of the data's queries: some folds hold none of them (their
    members learn nothing there instead of failing for want of rows), and regression EM's
    cross-fitted halves hold fewer cells than LightGBM can split (every feature kept in the
    bins instead of LightGBM's fatal check). Both failed before."""
    data = world["data"].subset(np.arange(60))
    log = world["deterministic"]
    queries = log["query"].unique().sort()[:n_queries].to_list()
    few = log.filter(log["query"].is_in(queries))
    r = cr.ClickRanker(seed=0, **_SMALL).fit(data, few)
    assert r.choice_ in {*r.members_, "average", "naive"}
    assert r.propensity_source_.kind == ("none" if n_queries == 1 else "model")
    for m, cv in r.members_.items():  # a fold with nothing logged: a model of one flat tree
        assert cv.model_.booster_.current_iteration() >= 1, m


def test_lambdamart_fits_fewer_rows_than_it_can_split():
    """Fewer training rows than two leaves of min_data_in_leaf: a stump, not LightGBM's fatal
    check on a set its pre-filter left without features."""
    data = cr.synthetic(3, 5, seed=1)
    model = cr.LambdaMART(n_estimators=5, seed=0).fit(data)
    assert np.all(model.predict(data.X) == model.predict(data.X)[0])


# -- the command line ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory, world):
    root = tmp_path_factory.mktemp("nointerventions")
    data = cr.save_letor(world["data"].subset(np.arange(120)), root / "train.txt")
    world["deterministic"].filter(world["deterministic"]["query"] < 120).write_parquet(
        root / "log.parquet")  # fmt: skip
    return root, str(data), str(root / "log.parquet")


def test_clickrank_train_with_only_data_log_and_out_succeeds_and_says_its_source(files):
    root, data, log = files
    res = CliRunner().invoke(cli, ["train", "--data", data, "--log", log, "--out",
                                   str(root / "model"), "--set", "n_estimators=60"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "propensities: regression-em" in res.output
    sel = json.loads((root / "model" / "selection.json").read_text())
    assert sel["propensities"]["kind"] == "model"


def test_clickrank_train_on_a_log_of_one_query_succeeds(files, tmp_path):
    root, data, log = files
    import polars as pl

    one = pl.read_parquet(log)
    one.filter(pl.col("query") == one["query"][0]).write_parquet(tmp_path / "one.parquet")
    res = CliRunner().invoke(cli, ["train", "--data", data, "--log", str(tmp_path / "one.parquet"),
                                   "--out", str(tmp_path / "model"), "--set",
                                   "n_estimators=30"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "choice:" in res.output and (tmp_path / "model" / "selection.json").exists()


def test_clickrank_propensity_auto_needs_data_for_a_deterministic_log(files):
    root, data, log = files
    res = CliRunner().invoke(cli, ["propensity", log, "-o", str(root / "a.json")])
    assert res.exit_code != 0 and "pass --data" in res.output
    assert not (root / "a.json").exists()
    res = CliRunner().invoke(cli, ["propensity", log, "--data", data, "--bootstrap", "3",
                                   "-o", str(root / "b.json")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "auto: regression-em" in res.output
    saved = json.loads((root / "b.json").read_text())
    assert saved["method"] == "regression-em"
    # the file keeps the second smoothing (around it, the bootstrap SE), and so its interval
    assert len(saved["sensitivity"]) == 10 and "3x" in saved["info"]["interval"]
    back = cr.Propensities.load(root / "b.json")
    np.testing.assert_allclose(back.conf_int().select("lower", "upper").to_numpy()[1:],
                               np.array([saved["lower"], saved["upper"]]).T[1:])  # fmt: skip


def test_clickrank_propensity_auto_aggregates_the_log_once(files, monkeypatch):
    """The choice of the source and the estimate read the same cell statistics."""
    import clickrank.propensity._harvest as harvest

    root, data, log = files
    calls = []
    real = harvest.cell_statistics
    monkeypatch.setattr(
        harvest, "cell_statistics", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    res = CliRunner().invoke(cli, ["propensity", log, "--data", data, "--bootstrap", "0",
                                   "-o", str(root / "once.json")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "auto: regression-em" in res.output and len(calls) == 1
    # the same estimate as the library's auto, which aggregates the log itself
    direct = cr.estimate_propensities(log, method="auto", data=cr.load_letor(data), n_boot=0)
    saved = json.loads((root / "once.json").read_text())
    assert np.allclose(saved["theta"], direct.theta, rtol=0, atol=0)


def test_clickrank_propensity_refuses_data_where_it_is_not_read(files):
    root, data, log = files
    res = CliRunner().invoke(cli, ["propensity", log, "--method", "swap", "--data", data,
                                   "-o", str(root / "c.json")])  # fmt: skip
    assert res.exit_code != 0 and "--data is read by" in res.output


# -- the shipped scenario -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_no_interventions_scenario_runs_and_reports_the_defaults_source(tmp_path):
    """simulations/no_interventions/config.toml, smaller: no interventions in the log, θ from
    regression EM, the default learner trained and its source in summary.json and report.md."""
    import tomllib
    from pathlib import Path

    from clickrank.experiment import run_experiment

    path = Path(__file__).resolve().parents[1] / "simulations" / "no_interventions" / "config.toml"
    cfg = tomllib.loads(path.read_text())
    assert cfg["interventions"] == {"swap_fraction": 0.0, "fairpairs_fraction": 0.0}
    cfg["data"].update(n_queries=240)
    cfg["simulation"]["sessions"] = 20_000
    cfg["evaluation"]["bootstrap"] = 100
    # three folds of 20 trees: the source and its lines do not depend on the selection's
    # folds or on the size of its models
    cfg["lambdamart"] = {"grid": [{"num_leaves": 8, "max_depth": 3}], "n_estimators": 20,
                         "folds": 3}  # fmt: skip
    run_experiment(cfg, tmp_path, progress=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    source = summary["models"]["default"]["propensities"]
    assert source["kind"] == "model" and source["method"] == "regression-em"
    assert "The default's propensities: regression-em" in (tmp_path / "report.md").read_text()


def test_the_line_of_given_propensities_says_they_were_given():
    """Propensities passed as an array carry no method: the line says they were given, not
    that there were none."""
    from clickrank.propensity import PropensitySource

    given = PropensitySource("given", None, "passed to fit").line()
    assert (
        given.startswith("propensities: θ given (passed to fit;") and "no propensities" not in given
    )
    none = PropensitySource("none", None, "none given and propensity_method=None").line()
    assert none.startswith("propensities: no propensities (")
