"""Click-model fitting: sessions, parameter recovery within the standard errors, held-out
comparison, evaluation formulas, sampling, and the model-aware targets."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import clickrank as cr
from clickrank import LogSchemaError, targets
from clickrank.clickmodels import (
    DBN,
    DCM,
    PBM,
    SDBN,
    UBM,
    Cascade,
    PowerLaw,
    TrustBias,
    binarized,
    compare_click_models,
    fit_click_model,
    sessions_from_log,
    table,
)
from clickrank.clickmodels.fitting import FIT_MODELS
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, PlackettLuce

K = 6
# interior probabilities, so that no true value sits on the boundary of its estimate
ATT = table({0: 0.1, 1: 0.25, 2: 0.45, 3: 0.65, 4: 0.85})
SAT = table({0: 0.15, 1: 0.3, 2: 0.45, 3: 0.6, 4: 0.75})
TRUE = {
    "pbm": PBM(PowerLaw(1.0), ATT),
    "ubm": UBM(attractiveness=ATT),
    "cascade": Cascade(ATT),
    "dcm": DCM(ATT, continuation=[0.6, 0.55, 0.5, 0.45, 0.4, 0.4]),
    "sdbn": SDBN(ATT, satisfaction=SAT),
    "dbn": DBN(ATT, satisfaction=SAT, gamma=0.8),
    "trust": TrustBias(relevance=binarized(threshold=2, eps_plus=1.0, eps_minus=0.0)),
}
# models that contain the data's model as a special case (they may tie with it)
NESTS = {"cascade": {"ubm", "dcm", "sdbn", "dbn"}, "sdbn": {"dbn"}, "pbm": {"ubm"}}


@pytest.fixture(scope="module")
def data():
    return synthetic(40, 10, seed=1)


@pytest.fixture(scope="module")
def logs(data):
    """One log per true model: a Plackett-Luce logging policy puts every document at many ranks."""
    policy = PlackettLuce(data.X[:, 0], temperature=1.0)
    return {
        name: cr.simulate(data, policy=policy, click_model=m, n_sessions=60_000, top_k=K, seed=3)
        for name, m in TRUE.items()
    }


@pytest.fixture(scope="module")
def comparisons(logs):
    return {
        name: compare_click_models(log, FIT_MODELS, test_fraction=0.25, seed=0)
        for name, log in logs.items()
    }


def _truth(frame: pl.DataFrame, log: pl.DataFrame) -> np.ndarray:
    lab = log.group_by("query", "doc").agg(pl.col("label").first())
    return frame.join(lab, on=["query", "doc"], how="left")["label"].to_numpy()


# -- sessions ----------------------------------------------------------------------------------


def test_distinct_sessions_rebuild_the_log_and_do_not_depend_on_row_order(logs):
    log = logs["dbn"]
    s = sessions_from_log(log)
    assert s.n_sessions == log["session"].n_unique()
    assert s.n_unique < s.n_sessions  # repeated lists and clicks are merged
    # every logged session is its distinct session: clicks and documents come back exactly
    clicks = s.click[s.inverse][s.shown[s.inverse]]
    assert np.array_equal(clicks, log.sort("session", "position")["click"].to_numpy())
    docs = s.pairs["doc"].to_numpy()[s.pair[s.inverse][s.shown[s.inverse]]]
    assert np.array_equal(docs, log.sort("session", "position")["doc"].to_numpy())
    shuffled = sessions_from_log(log.sample(fraction=1.0, shuffle=True, seed=1))
    assert np.array_equal(shuffled.weight, s.weight)
    assert np.array_equal(shuffled.pair, s.pair) and np.array_equal(shuffled.click, s.click)


def test_the_split_is_by_session_id_and_seed(logs):
    log = logs["pbm"]
    a = sessions_from_log(log, test_fraction=0.3, seed=5)
    b = sessions_from_log(log.reverse(), test_fraction=0.3, seed=5)
    assert a.train().n_sessions == b.train().n_sessions
    share = a.test_sessions().n_sessions / a.n_sessions
    assert abs(share - 0.3) < 4 * math.sqrt(0.3 * 0.7 / a.n_sessions)
    assert (
        sessions_from_log(log, test_fraction=0.3, seed=6).test_sessions().n_sessions
        != a.test_sessions().n_sessions
    )


def test_bad_logs_name_the_session_and_column():
    base = pl.DataFrame(
        {
            "session": [0, 0, 1, 1],
            "query": [1, 1, 1, 2],
            "position": [1, 2, 1, 2],
            "doc": [5, 6, 5, 6],
            "click": [True, False, False, True],
        }
    )
    with pytest.raises(LogSchemaError, match="session 1: a session must show the results of one"):
        sessions_from_log(base)
    gap = base.with_columns(query=pl.lit(1), position=pl.Series([1, 3, 1, 2]))
    with pytest.raises(LogSchemaError, match="session 0: positions must run 1, 2"):
        sessions_from_log(gap)
    with pytest.raises(LogSchemaError, match="'doc'"):
        sessions_from_log(base.drop("doc"))


# -- parameter recovery ------------------------------------------------------------------------


def _z(est: np.ndarray, truth: np.ndarray, se: np.ndarray) -> np.ndarray:
    z = (est - truth) / se
    return z[np.isfinite(z)]


def _calibrated(z: np.ndarray) -> None:
    """z-scores of many independent estimates: mean 0 and spread 1 within their sampling error."""
    n = z.size
    assert n > 50
    assert abs(z.mean()) < 4 / math.sqrt(n)
    assert abs(z.std() - 1) < 0.2  # sd of a sample sd is ~ 1/sqrt(2n) = 0.04 here
    cover = np.mean(np.abs(z) < 1.959964)
    assert abs(cover - 0.95) < 4 * math.sqrt(0.95 * 0.05 / n)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pbm", "ubm", "cascade", "dcm", "sdbn", "dbn"])
def test_per_pair_parameters_are_recovered_within_their_standard_errors(name, logs):
    log = logs[name]
    fit = fit_click_model(log, name)
    frame = fit.to_frame()
    y = _truth(frame, log)
    model = TRUE[name]
    # Wald intervals are asymptotic: check the pairs with enough data for them (a pair with a
    # handful of clicks may sit on the boundary, where its SE is NaN by design)
    enough = frame["impressions"].to_numpy() >= 100
    assert np.isfinite(frame["attractiveness_se"].to_numpy()[enough]).all()
    _calibrated(
        _z(
            frame["attractiveness"].to_numpy()[enough],
            model.attractiveness(y[None])[0][enough],
            frame["attractiveness_se"].to_numpy()[enough],
        )
    )
    if "satisfaction" in frame.columns:
        # satisfaction is seen only through clicks above the last displayed rank
        informative = (
            log.filter(pl.col("click") & (pl.col("position") < K))
            .group_by("query", "doc")
            .agg(n=pl.len())
        )
        n = frame.join(informative, on=["query", "doc"], how="left")["n"].fill_null(0)
        enough = n.to_numpy() >= 100
        # weakly informed: a few may still sit on the boundary 0 (NaN SE), not more
        assert np.isnan(frame["satisfaction_se"].to_numpy()[enough]).mean() < 0.03
        _calibrated(
            _z(
                frame["satisfaction"].to_numpy()[enough],
                model.satisfaction(y[None])[0][enough],
                frame["satisfaction_se"].to_numpy()[enough],
            )
        )


def _global_z(fit, name: str) -> np.ndarray:
    m = TRUE[name]
    p = fit.parameters()
    est, se = p["estimate"].to_numpy(), p["se"].to_numpy()
    if name == "pbm":
        truth = m.propensities(K)
    elif name == "ubm":
        g = m.examination_matrix(K)
        truth = np.array([g[r, d] for r in range(K) for d in range(r + 1)])
        keep = se > 0  # gamma[1,1] = 1 is the normalization
        return (est[keep] - truth[keep]) / se[keep]
    elif name == "dcm":
        truth = np.asarray(m.continuation(K))
        est, se, truth = est[:-1], se[:-1], truth[:-1]  # lambda_K is not identified
    elif name == "dbn":
        truth = np.array([m.gamma])
    else:  # trust: a_r, b_r, prior share of relevant pairs
        a, b = m.affine_parameters(K)
        truth = np.r_[a + b, b, np.nan]
        return ((est - truth) / se)[:-1]
    keep = se > 0
    return (est[keep] - truth[keep]) / se[keep]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pbm", "ubm", "dcm", "dbn", "trust"])
def test_global_parameters_are_recovered_within_their_standard_errors(name, logs):
    z = _global_z(fit_click_model(logs[name], name), name)
    assert z.size >= 1
    assert np.all(np.abs(z) < 4), z  # 4 SE: a false alarm has probability < 1e-4 per value
    if z.size > 10:  # the 21 UBM cells: their spread is that of standard normals
        assert 0.5 < z.std() < 1.6


def test_the_dbn_fit_reports_its_estimate_with_a_wald_interval(logs):
    fit = fit_click_model(logs["dbn"], "dbn")
    row = fit.parameters(alpha=0.1).row(0, named=True)
    assert row["parameter"] == "gamma"
    assert row["lower"] == pytest.approx(row["estimate"] - 1.644854 * row["se"])
    assert "gamma" in fit.summary() and fit.converged


# -- held-out comparison -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TRUE))
def test_every_model_wins_the_comparison_on_data_from_itself(name, comparisons):
    cmp = comparisons[name]
    nesting = NESTS.get(name, set())
    for other in FIT_MODELS:
        if other == name:
            continue
        d, se = cmp.difference(name, other)
        # never significantly worse than any model; strictly better than the non-nesting ones
        assert d > -3 * se, (other, d, se)
        if other not in nesting and name != "trust" and other != "trust":
            assert d > 0, (other, d, se)
    assert cmp.best == name or cmp.best in nesting
    ev = cmp.evaluations
    assert ev[name].perplexity <= min(e.perplexity for e in ev.values()) + 0.003


def test_the_recommendation_follows_the_best_model(comparisons):
    assert comparisons["dbn"].recommend()["correction"] == "cascade_ips"
    assert comparisons["pbm"].recommend()["correction"] in ("ips",)
    assert comparisons["cascade"].recommend()["correction"] == "fitted_relevance"
    assert comparisons["trust"].recommend()["correction"] == "affine"
    assert "perplexity" in comparisons["dbn"].summary()


def test_the_comparison_follows_the_result_contract(comparisons, tmp_path):
    cmp = comparisons["pbm"]
    ci = cmp.conf_int()
    assert ci["model"].to_list() == list(cmp.evaluations)
    for r in ci.iter_rows(named=True):
        ev = cmp.evaluations[r["model"]]
        assert r["estimate"] == pytest.approx(ev.log_likelihood_per_session, rel=1e-9)
        assert r["lower"] < r["estimate"] < r["upper"]
    saved = json.loads(cmp.save(tmp_path / "cmp.json").read_text())
    assert saved["format"] == "clickrank.click_model_comparison" and saved["best"] == cmp.best
    assert cmp == cmp and cmp != comparisons["dbn"]
    fig = cmp.plot(path=tmp_path / "ppl.png")
    assert fig.axes[0].get_xlabel() == "rank" and (tmp_path / "ppl.png").stat().st_size > 1000


def test_perplexity_is_the_per_rank_formula(logs):
    log = logs["dbn"]
    s = sessions_from_log(log, test_fraction=0.3, seed=1)
    fit = fit_click_model(s.train(), "dbn")
    test = s.test_sessions()
    ev = fit.evaluate(test)
    q = np.clip(fit.marginal_probabilities(test), 1e-6, 1 - 1e-6)
    c, w = test.click, test.weight[:, None]
    for r in range(K):
        bits = np.where(c[:, r], np.log2(q[:, r]), np.log2(1 - q[:, r]))
        assert ev.perplexity_by_rank[r] == pytest.approx(2 ** (-(w[:, 0] * bits).sum() / w.sum()))
    assert ev.perplexity == pytest.approx(ev.perplexity_by_rank.mean())
    # the conditional probabilities multiply to the session likelihood
    qc = np.clip(fit.conditional_probabilities(test), 1e-6, 1 - 1e-6)
    ll = (w * np.where(c, np.log(qc), np.log(1 - qc))).sum()
    assert ev.log_likelihood == pytest.approx(ll)
    # under the PBM the conditional and the marginal probabilities coincide
    pbm = fit_click_model(s.train(), "pbm").evaluate(test)
    assert pbm.perplexity == pytest.approx(pbm.conditional_perplexity)


# -- sampling ----------------------------------------------------------------------------------


def test_sampling_from_a_fit_is_reproducible_and_refits_to_the_same_model(logs):
    log = logs["dbn"]
    fit = fit_click_model(log, "dbn")
    a = fit.sample(log, seed=7)
    b = fit.sample(log, seed=7, chunk_size=977)
    assert a["click"].equals(b["click"])
    assert not a["click"].equals(fit.sample(log, seed=8)["click"])
    refit = fit_click_model(a, "dbn")
    g, se = fit.globals["gamma"][0], fit.globals_se["gamma"][0]
    assert abs(refit.globals["gamma"][0] - g) < 4 * math.sqrt(2) * se


# -- targets -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deterministic():
    data = synthetic(60, 12, seed=2)
    return data, DeterministicPolicy(data.X[:, 0] + data.X[:, 1])


def _per_class(data, target, log, labels_of):
    """Mean gain per impression of every document, grouped by its true class."""
    shown = log.group_by("query", "doc").agg(n=pl.len(), label=pl.col("label").first())
    keys = pl.DataFrame(
        {"query": np.asarray(data.qid)[data.query_index], "doc": data.doc, "gain": target.gains}
    )
    f = shown.join(keys, on=["query", "doc"]).with_columns(per=pl.col("gain") / pl.col("n"))
    return {
        c: f.filter(pl.col("label").map_elements(labels_of, return_dtype=pl.Int64) == c)[
            "per"
        ].to_numpy()
        for c in (0, 1)
    }


def _mean_is(values: np.ndarray, truth: float) -> None:
    """One-sample check: the mean of per-document estimates is the truth within 4 SE."""
    assert values.size > 20
    assert abs(values.mean() - truth) < 4 * values.std(ddof=1) / math.sqrt(values.size)


def test_the_affine_correction_is_unbiased_under_trust_bias(deterministic):
    data, policy = deterministic
    model = TrustBias(relevance=binarized(threshold=2, eps_plus=1.0, eps_minus=0.0))
    log = cr.simulate(
        data,
        policy=policy,
        click_model=model,
        n_sessions=60_000,
        top_k=8,
        interventions=[cr.Randomize(0.3)],
        seed=1,
    )
    t = targets.affine(data, log, model, negative="clip")
    by = _per_class(data, t, log, lambda y: int(y >= 2))
    _mean_is(by[1], 1.0)  # relevant documents: E[(c - beta)/alpha] = 1
    # the per-query shift keeps every difference between the unclipped gains
    s = targets.affine(data, log, model)
    pos = t.gains > 0
    q = data.query_index[pos]
    diff = s.gains[pos] - t.gains[pos]
    for qq in np.unique(q):
        assert np.allclose(diff[q == qq], diff[q == qq][0])
    assert s.gains.min() >= 0 and s.metadata["negative_sums"] > 0
    # EM-estimated parameters give the same correction within their noise
    fit = fit_click_model(log, "trust")
    em = targets.affine(data, log, fit, negative="clip")
    _mean_is(_per_class(data, em, log, lambda y: int(y >= 2))[1], 1.0)


def test_cascade_ips_is_unbiased_for_the_attractiveness_under_dbn(deterministic):
    data, policy = deterministic
    model = DBN(binarized(threshold=2, eps_plus=0.9, eps_minus=0.2), satisfaction=SAT, gamma=0.85)
    log = cr.simulate(data, policy=policy, click_model=model, n_sessions=60_000, top_k=8, seed=2)
    t = targets.cascade_ips(data, log, model)
    by = _per_class(data, t, log, lambda y: int(y >= 2))
    _mean_is(by[1], 0.9)
    _mean_is(by[0], 0.2)
    naive = _per_class(data, targets.naive(data, log), log, lambda y: int(y >= 2))
    assert naive[1].mean() < 0.9 - 0.1  # clicks alone are biased down by examination
    fit = fit_click_model(log, "dbn")
    ft = targets.cascade_ips(data, log, fit)
    assert ft.metadata["model"] == "dbn" and ft.gains.shape == (data.n_docs,)
    rel = targets.fitted_relevance(data, fit)
    assert rel.n_candidates == t.n_candidates


def test_corrections_reject_what_they_cannot_use(deterministic):
    data, policy = deterministic
    log = cr.simulate(data, policy=policy, click_model="pbm", n_sessions=500, top_k=5, seed=0)
    with pytest.raises(cr.InputError, match="alpha"):
        targets.affine(data, log, (np.zeros(5), np.zeros(5)))
    with pytest.raises(cr.InputError, match="cover 3 positions"):
        targets.affine(data, log, (np.ones(3), np.zeros(3)))
    with pytest.raises(cr.InputError, match="label"):
        targets.cascade_ips(data, log.drop("label"), DBN())


# -- command line and experiment ---------------------------------------------------------------


def test_fit_clicks_cli_writes_the_comparison_and_the_plot(logs, tmp_path):
    from clickrank.cli import cli

    path = tmp_path / "log.parquet"
    logs["dbn"].write_parquet(path)
    runner = CliRunner()
    out, png = tmp_path / "fit.json", tmp_path / "ppl.png"
    res = runner.invoke(
        cli, ["fit-clicks", str(path), "--models", "pbm,dbn", "--out", str(out), "--plot", str(png)]
    )
    assert res.exit_code == 0, res.output
    assert "Best: dbn" in res.output
    # the recommendation is a command to run, on this log, with the target's CLI spelling
    assert f"clickrank train --data DATA --log {path} --target cascade-ips" in res.output
    assert f"wrote {out} (comparison)" in res.output and f"wrote {png}" in res.output
    summary = json.loads(out.read_text())
    assert summary["best"] == "dbn"
    assert len(summary["evaluations"]["dbn"]["perplexity_by_rank"]) == K
    assert png.stat().st_size > 1000
    again = runner.invoke(cli, ["fit-clicks", str(path), "--out", str(out)])
    assert again.exit_code == 1 and "--force" in again.output
    bad = runner.invoke(cli, ["fit-clicks", str(path), "--models", "pbm,xyz"])
    assert bad.exit_code == 1 and "xyz" in bad.output


def test_the_recommendation_names_the_command_and_when_it_refits_another_model(comparisons):
    from clickrank.clickmodels.fitting._compare import _CLI_REFIT
    from clickrank.specs.names import MODEL_AWARE

    assert _CLI_REFIT == MODEL_AWARE  # the note below is true of `clickrank train`
    rec = comparisons["dbn"].recommend(log="log.parquet", data="train.txt")
    assert rec["command"] == (
        "clickrank train --data train.txt --log log.parquet --target cascade-ips --out cascade-ips/"
    )
    assert rec["note"] is None  # the CLI's cascade-ips fits a DBN: the winning model
    pbm = comparisons["pbm"].recommend()
    assert pbm["command"].splitlines()[0].startswith("clickrank propensity LOG.parquet --method em")
    assert "--propensities theta.json" in pbm["command"]
    ubm = comparisons["ubm"]
    if ubm.best == "ubm":  # the command corrects with the UBM that won, not the default DBN
        rec = ubm.recommend(log="log.parquet", data="train.txt")
        assert rec["command"] == (
            "clickrank train --data train.txt --log log.parquet --target cascade-ips "
            "--set click_model=ubm --out cascade-ips/"
        )
        assert rec["note"] is None
    for cmp in comparisons.values():  # 60,000 sessions on 400 pairs: dense enough
        assert cmp.recommend()["warning"] is None or "not separated" in cmp.recommend()["warning"]


def test_a_sparse_log_gets_a_warning_that_says_why(data):
    """Few sessions over many (query, doc) pairs: the per-pair parameters rest on ~1 impression."""
    many = synthetic(400, 10, seed=2)
    policy = PlackettLuce(many.X[:, 0], temperature=1.0)
    log = cr.simulate(many, policy=policy, click_model=TRUE["dbn"], n_sessions=1200, top_k=K,
                      seed=0)  # fmt: skip
    cmp = compare_click_models(log, ["pbm", "dbn", "trust"], test_fraction=0.25, seed=0)
    warning = cmp.recommend()["warning"]
    assert warning.startswith("the comparison is unreliable: the log is sparse")
    assert f"from {cmp.n_train:,} sessions" in warning and "median of" in warning
    assert "Warning: the comparison is unreliable" in cmp.summary()


def test_the_perplexity_plot_draws_the_criterion_with_distinct_lines(comparisons):
    cmp = comparisons["dbn"]
    fig = cmp.plot()
    ax = fig.axes[0]
    assert ax.get_ylabel().startswith("conditional perplexity")  # what `best` is chosen by
    lines = ax.get_lines()
    assert len({(ln.get_marker(), ln.get_linestyle()) for ln in lines}) == len(lines)
    assert len({float(ln.get_xdata()[0]) for ln in lines}) == len(lines)  # shifted apart
    assert cmp.plot(conditional=False).axes[0].get_ylabel().startswith("perplexity")


def test_fit_clicks_reads_trec_files_and_names_the_format_of_a_text_file(tmp_path):
    from clickrank.cli import cli

    rows = []
    rng = np.random.default_rng(0)
    for i in range(400):  # session, query, docs, verticals, clicks
        docs = [int(d) for d in rng.choice(30, 5, replace=False)]
        clicks = [int(c) for c in rng.random(5) < 0.3]
        rows.append(f"{i // 3}\t{i % 7}\t{docs}\t{[1] * 5}\t{clicks}")
    path = tmp_path / "train_per_query_quid.txt"
    path.write_text("\n".join(rows) + "\n")
    runner = CliRunner()
    wrong = runner.invoke(cli, ["fit-clicks", str(path)])
    assert wrong.exit_code == 1 and "pass --format trec" in wrong.output
    other = tmp_path / "other.txt"
    other.write_text("not a log\n")
    wrong = runner.invoke(cli, ["fit-clicks", str(other)])
    assert wrong.exit_code == 1 and "--format yandex or --format trec" in wrong.output
    res = runner.invoke(cli, ["fit-clicks", str(path), "--format", "trec", "--models", "pbm,dbn"])
    assert res.exit_code == 0, res.output
    assert "--target" in res.output and "load_trec_session" in res.output


def test_a_run_with_click_fit_reports_the_comparison(tmp_path):
    cfg = {
        "data": {"n_queries": 60, "docs_per_query": 15, "train": 30, "test": 30},
        "simulation": {"sessions": 5000, "chunk_size": 2000},
        "interventions": {"swap_fraction": 0.3},
        "click_model": {"name": "dbn"},
        "lambdamart": {"n_estimators": 5},
        "targets": {"names": ["naive", "ips"], "clip": 0.02},
        "evaluation": {"bootstrap": 100, "permutations": 200, "compare": []},
        "interleaving": {"pairs": []},
        "learning_curve": {"sessions": []},
        "report": {"figures": False},
        "click_fit": {"models": ["pbm", "dbn"]},
    }
    res = cr.run_experiment(cfg, tmp_path / "run", progress=False)
    assert res.results["click_fit"]["best"] in ("pbm", "dbn")
    assert "Which click model describes the users?" in res.report_path.read_text()
    with pytest.raises(cr.ConfigError, match=r"\[click_fit\] models"):
        cr.load_config({"click_fit": {"models": ["pbm", "nope"]}})
