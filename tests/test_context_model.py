"""Examination as a log-linear function of context features (propensity._context_model)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from clickrank import EstimationError, InputError
from clickrank.clickmodels import PBM, PowerLaw
from clickrank.datasets import synthetic
from clickrank.policies import PlackettLuce
from clickrank.propensity import ContextModel, Propensities, estimate_propensities

K = 6
SEGMENTS = 40
SLOPE = 0.6


def _segments(slope, n, seed=3):
    """A log of ``n`` sessions over :data:`SEGMENTS` segments, segment ``i`` with the
    feature ``x_i`` (evenly on [-1, 1]) and the curve k^-(1 + slope x_i), equal shares;
    a Plackett-Luce logger, no interventions."""
    from clickrank.simulation import Context, simulate

    x = np.linspace(-1, 1, SEGMENTS)
    names = [f"s{i:02d}" for i in range(SEGMENTS)]
    models = {v: PBM(PowerLaw(1 + slope * xv)) for v, xv in zip(names, x, strict=True)}
    data = synthetic(60, 10, seed=1)
    segment = Context("segment", dict.fromkeys(names, 1.0), models)
    policy = PlackettLuce(data.X[:, 0] * 2.0)
    log = simulate(data, policy=policy, n_sessions=n, top_k=K, seed=seed, context=segment)
    feature = pl.col("segment").cast(pl.String).replace_strict(
        dict(zip(names, x.tolist(), strict=True)), return_dtype=pl.Float64)  # fmt: skip
    return data, log.with_columns(x=feature)


@pytest.fixture(scope="module")
def sloped():
    return _segments(SLOPE, 30_000)


@pytest.fixture(scope="module")
def fitted(sloped):
    return estimate_propensities(sloped[1], method="em", context_features="x", n_boot=0)


def test_the_coefficients_are_within_their_standard_errors_of_the_truth(sloped, fitted):
    """θ_k = k^-(1 + s x) is log-linear in x: a_k = -(1 + s x̄) log k at the mean
    context, w_k = -s log k per unit of x. Ten estimates, each within 3.5 of its SEs."""
    m = fitted.contexts
    assert isinstance(m, ContextModel) and m.columns == ("x",)
    logk = np.log(np.arange(1, K + 1))
    truth = np.column_stack([-(1 + SLOPE * m.center[0]) * logk, -SLOPE * logk])
    z = (m.coef - truth)[1:] / m.coef_se[1:]
    assert np.all(np.abs(z) < 3.5), z
    assert np.all(m.coef_se[1:] > 0) and np.all(m.coef_se[1:, 1] < 0.2)
    # every segment's curve, and the table of curves, from the same coefficients
    assert len(m.values) == SEGMENTS and m.theta.shape == (SEGMENTS, K)
    x = np.array([float(v[0]) for v in m.values])
    want = np.exp(m.coef[:, 0] + np.outer(x - m.center[0], m.coef[:, 1]))
    np.testing.assert_allclose(m.theta, want, rtol=1e-10)
    assert m.homogeneity["df"] == K - 1 and m.homogeneity["p_value"] < 1e-10
    assert "one curve is not enough: examination changes with x" in m.verdict()
    # theta stays EM's pooled curve, the same numbers as without features
    plain = estimate_propensities(sloped[1], method="em", n_boot=0)
    np.testing.assert_array_equal(fitted.theta, plain.theta)


def test_the_intervals_are_the_observed_information_of_the_profile_likelihood(sloped, fitted):
    """The coefficients' covariance is the inverse of minus the profile log-likelihood's
    Hessian, here by finite differences of the likelihood with each log γ profiled out."""
    from clickrank.propensity import cell_statistics
    from clickrank.propensity._context_model import _design
    from clickrank.propensity._em import loglik, profile_cells

    m = fitted.contexts
    cells = cell_statistics(sloped[1].lazy(), by=("x",))
    g, pos, n, c = cells["g"], cells["position"] - 1, cells["n"], cells["c"]
    G = int(g.max()) + 1
    Z = ((cells["x"] - m.center) / m.scale)[:, None]
    free = np.arange(K) > 0
    D = _design(pos, Z, free, np.cumsum(free) - 1, 1)
    beta = np.column_stack([m.coef[1:, 0], m.coef[1:, 1] * m.scale[0]]).ravel()

    def profile(b):
        lt = D @ b
        return loglik(lt + profile_cells(lt, g, n, c, G)[0][g], n, c)

    h, p = 1e-4, beta.size
    hess = np.zeros((p, p))
    eye = np.eye(p) * h
    for i in range(p):
        for j in range(p):
            ridge = profile(beta + eye[i] + eye[j]) - profile(beta + eye[i] - eye[j])
            valley = profile(beta - eye[i] + eye[j]) - profile(beta - eye[i] - eye[j])
            hess[i, j] = (ridge - valley) / (4 * h * h)
    se = np.sqrt(np.diag(np.linalg.inv(-hess))).reshape(-1, 2) * np.r_[1.0, 1.0 / m.scale[0]]
    np.testing.assert_allclose(m.coef_se[1:], se, rtol=2e-3)


def test_without_a_feature_effect_the_score_of_em_is_zero_and_the_test_keeps_quiet():
    """At w = 0 the model is EM's PBM: its score in a at EM's maximum is zero, and the
    Wald test does not reject on a log whose segments share one curve."""
    from clickrank.propensity import cell_statistics
    from clickrank.propensity._context_model import _design, _terms

    _, log = _segments(0.0, 30_000, seed=5)
    res = estimate_propensities(log, method="em", context_features="x", n_boot=0)
    assert res.contexts.homogeneity["p_value"] > 0.01
    assert "one curve is enough" in res.contexts.verdict()
    cells = cell_statistics(log.lazy(), by=("x",))
    g, pos, n, c = cells["g"], cells["position"] - 1, cells["n"], cells["c"]
    free = np.arange(K) > 0
    D = _design(pos, np.zeros((pos.size, 1)), free, np.cumsum(free) - 1, 1)
    beta = np.column_stack([np.log(res.theta[1:]), np.zeros(K - 1)]).ravel()
    grad = _terms(D @ beta, D, g, n, c, int(g.max()) + 1)[0]
    assert np.max(np.abs(grad[::2])) < 1e-5 * n.sum() ** 0.5


def test_each_impression_is_weighed_by_its_contexts_curve(sloped, fitted):
    from clickrank.targets import ips
    from clickrank.targets._theta import context_theta

    data, log = sloped
    table = context_theta(fitted)
    assert table.columns == ("x",) and table.table.shape == (SEGMENTS + 1, K)
    rows = table.index(log.select("x").unique().sort("x"))
    np.testing.assert_array_equal(rows, np.arange(SEGMENTS))  # every segment has its curve
    np.testing.assert_array_equal(table.table[-1], fitted.theta)
    per = np.asarray(ips(data, log, propensities=fitted).gains)
    pooled = np.asarray(ips(data, log, propensities=fitted.theta).gains)
    assert np.abs(per - pooled).max() > 0.05  # the segments' curves differ a lot
    # one segment alone: its impressions weigh by its curve, as a pooled estimate of its own
    one = log.filter(pl.col("segment") == "s00")
    curve = fitted.contexts.theta[0]
    np.testing.assert_allclose(np.asarray(ips(data, one, propensities=fitted).gains),
                               np.asarray(ips(data, one, propensities=curve).gains))  # fmt: skip


def test_the_result_shows_saves_and_draws_the_model(fitted, tmp_path):
    m = fitted.contexts
    text = fitted.summary()
    assert "By context features (x; log θ_k(x) = a_k + w_k·x, 40 contexts" in text
    assert "homogeneity: one curve is not enough" in text
    frame = fitted.to_frame()
    assert frame.height == K * (SEGMENTS + 1)
    assert frame.filter(pl.col("x").is_null()).height == K  # the pooled rows lead
    path = tmp_path / "p.json"
    fitted.save(path)
    back = Propensities.load(path)
    assert back == fitted and isinstance(back.contexts, ContextModel)
    np.testing.assert_array_equal(back.contexts.coef, m.coef)
    assert_frame_equal(back.to_frame(), frame)
    assert json.loads(path.read_text())["contexts"]["model"] == "log-linear"
    png = tmp_path / "p.png"
    fitted.plot(path=png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert m.shown().size == 5 and m.labels[0] == "x=-1"


def _bad(log, **kw):
    return estimate_propensities(log, **{"method": "em", "n_boot": 0, **kw})


@pytest.mark.parametrize(
    "change, kw, error, match",
    [
        (None, {"context_features": "nope"}, InputError, "feature 'nope' is not in the log"),
        (None, {"context_features": "segment"}, InputError, "dtype Categorical; expected numbers"),
        (None, {"context_features": "position"}, InputError, "a column of the log's own contract"),
        (None, {"context_features": ["x", "x"]}, InputError, "names a column twice"),
        (None, {"context_features": "x", "method": "regression-em"}, InputError,
         "regression-em' needs the documents' features: pass data="),
        (None, {"context_features": "x", "context": "segment"}, InputError,
         "context_features and context=: give one"),
        (None, {"context_features": "x", "constraint": "all"}, InputError, "constraint='observed'"),
        (pl.lit(1.0), {"context_features": "x"}, InputError, "'x' is constant in the log"),
        (pl.when(pl.col("session") == 7).then(None).otherwise(pl.col("x")),
         {"context_features": "x"}, InputError, "'x' has null or non-finite values"),
        (pl.col("x") * np.inf, {"context_features": "x"}, InputError, "null or non-finite"),
    ],
)  # fmt: skip
def test_bad_feature_input_is_one_line(sloped, change, kw, error, match):
    log = sloped[1].head(6_000)
    if change is not None:
        log = log.with_columns(x=change)
    with pytest.raises(error, match=match) as err:
        _bad(log, **kw)
    assert "\n" not in str(err.value)


def test_too_many_contexts_and_an_unidentified_log_are_one_line(sloped, monkeypatch):
    from clickrank.propensity import _context_model

    log = sloped[1].head(6_000)
    monkeypatch.setattr(_context_model, "MAX_FEATURE_CONTEXTS", 10)
    with pytest.raises(InputError, match="take 40 distinct values; at most 10 .round or bin"):
        _bad(log, context_features="x")
    monkeypatch.undo()
    # every (query, doc) at one position: EM itself says it is not identified
    fixed = log.with_columns(doc=pl.col("position").cast(pl.Int64) + 100 * pl.col("query"))
    with pytest.raises(EstimationError, match="not identified"):
        _bad(fixed, context_features="x")


def test_a_context_with_thousands_of_values_points_to_its_features(sloped):
    log = sloped[1].with_columns(
        many=(pl.col("session") % 500).cast(pl.String).cast(pl.Categorical)
    )
    with pytest.raises(InputError, match="context_features=") as err:
        estimate_propensities(log, method="em", context="many", n_boot=0)
    assert "\n" not in str(err.value)


def test_the_command_line_fits_the_model_and_refuses_other_methods(sloped, tmp_path):
    from click.testing import CliRunner

    from clickrank.cli import cli

    log = tmp_path / "log.parquet"
    sloped[1].head(30_000).write_parquet(log)
    out, png = tmp_path / "m.json", tmp_path / "m.png"
    args = ["propensity", str(log), "--method", "em", "--context-features", "x",
            "--bootstrap", "5", "-o", str(out), "--plot", str(png)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    want = estimate_propensities(log, method="em", context_features="x", n_boot=5)
    assert Propensities.load(out) == want
    assert res.stdout == want.summary() + "\n"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for args, said in (
        (["--method", "em", "--context", "segment"], "without --context or"),
        (["--method", "swap", "--bootstrap", "5"], "--bootstrap with --context-f"),
    ):
        bad = tmp_path / "bad.json"
        res = CliRunner().invoke(cli, ["propensity", str(log), *args, "--context-features", "x",
                                       "-o", str(bad)])  # fmt: skip
        assert res.exit_code == 2 and said in res.output, res.output
        assert not bad.exists()


def test_the_learner_weighs_each_impression_by_the_models_curve(sloped, fitted):
    from clickrank import ClickRanker

    data, log = sloped
    lines = []
    small = dict(family=("ips-shown",), n_estimators=30, seed=0)
    ranker = ClickRanker(context_features="x", **small).fit(data, log, progress=lines.append)
    assert isinstance(ranker.propensities_.contexts, ContextModel)
    said = "context features x: θ per impression from the model's curves at 40 contexts; one"
    assert any(line.startswith(said) for line in lines)
    np.testing.assert_array_equal(ranker.propensities_.contexts.theta, fitted.contexts.theta)
    # the click statistics weigh each impression by its segment's curve, not the pooled one
    pooled = ClickRanker(**small).fit(data, log)
    assert pooled.propensities_.contexts is None
    assert not np.allclose(ranker.stats_.ips, pooled.stats_.ips)
    # given with the model of the same feature, it is used as given; a context too is refused
    again = ClickRanker(context_features=["x"], **small).fit(data, log, fitted)
    assert again.propensities_ is fitted
    with pytest.raises(InputError, match="context and context_features: give one"):
        ClickRanker(context="segment", context_features="x", **small).fit(data, log)


def test_several_integer_boolean_and_collinear_features(sloped):
    log = sloped[1].with_columns(
        x2=2 * pl.col("x"), xi=(pl.col("x") * 10).round().cast(pl.Int32), xb=pl.col("x") > 0
    )
    two = estimate_propensities(log, method="em", context_features=["x", "xb"], n_boot=0)
    assert two.contexts.coef.shape == (K, 3) and two.contexts.homogeneity["df"] == 2 * (K - 1)
    assert len(two.contexts.values) == SEGMENTS and not two.warnings
    ints = estimate_propensities(log, method="em", context_features="xi", n_boot=0).contexts
    assert len(ints.values) == 21 and ints.values[0] == ("-10",)  # the log's own text
    flag = estimate_propensities(log, method="em", context_features="xb", n_boot=0).contexts
    assert flag.values == (("false",), ("true",))
    # w_k per unit of xb: the mean log-curve gap between the segments above and below 0
    assert np.all(flag.coef[1:, 1] < 0) and np.all(flag.coef_se[1:, 1] > 0)
    same = estimate_propensities(log, method="em", context_features=["x", "x2"], n_boot=0)
    assert "the information is singular (features constant or collinear" in same.warnings[-1]
    assert (
        np.isnan(same.contexts.homogeneity["p_value"]) and "not tested" in same.contexts.verdict()
    )


def test_train_says_how_to_use_a_propensity_files_feature_model(sloped, fitted, tmp_path):
    from click.testing import CliRunner

    from clickrank.cli import cli
    from clickrank.datasets import save_letor

    data, log = sloped
    save_letor(data, tmp_path / "data.txt")
    log.write_parquet(tmp_path / "log.parquet")
    fitted.save(tmp_path / "theta.json")
    common = ["train", "--data", str(tmp_path / "data.txt"), "--log", str(tmp_path / "log.parquet"),
              "--propensities", str(tmp_path / "theta.json"), "--set", 'family=["ips-shown"]',
              "--set", "n_estimators=20"]  # fmt: skip
    res = CliRunner().invoke(cli, [*common, "--out", str(tmp_path / "pooled")])
    assert res.exit_code == 0, res.output
    assert "context features x: the propensity file models examination in them" in res.stderr
    assert "--set 'context_features=[\"x\"]'" in res.stderr
    res = CliRunner().invoke(cli, [*common, "--set", "context_features=x", "--out",
                                   str(tmp_path / "per")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "context features x: θ per impression from the model's curves at 40" in res.stderr


# -- a log whose documents each stay at one position: regression EM's level ----------------


def _one_position(slope, n, seed=5):
    """A deterministic logger over synthetic(300, 20) (every document at one position, no
    interventions) and the :data:`SEGMENTS` segments of :func:`_segments`."""
    from clickrank.policies import DeterministicPolicy
    from clickrank.simulation import Context, simulate

    x = np.linspace(-1, 1, SEGMENTS)
    names = [f"s{i:02d}" for i in range(SEGMENTS)]
    models = {v: PBM(PowerLaw(1 + slope * xv)) for v, xv in zip(names, x, strict=True)}
    data = synthetic(300, 20, seed=0)
    segment = Context("segment", dict.fromkeys(names, 1.0), models)
    log = simulate(data, policy=DeterministicPolicy(data.X[:, 0]), n_sessions=n, top_k=K,
                   seed=seed, context=segment)  # fmt: skip
    feature = pl.col("segment").cast(pl.String).replace_strict(
        dict(zip(names, x.tolist(), strict=True)), return_dtype=pl.Float64)  # fmt: skip
    return data, log.with_columns(x=feature).drop("segment")


@pytest.fixture(scope="module")
def one_position():
    return _one_position(SLOPE, 20_000)


def test_without_position_variety_the_slopes_come_from_within_documents(one_position):
    """EM's likelihood identifies nothing here; ``auto`` takes regression EM's pooled curve
    as the level and the slopes within each (query, doc, position): the slopes within
    3.5 SEs of the truth, and the model's mean over each position's impressions is the
    pooled curve, which stays regression EM's."""
    data, log = one_position
    with pytest.raises(EstimationError, match="not identified.*'regression-em' .or 'auto'. with"):
        estimate_propensities(log, method="em", context_features="x", n_boot=0)
    got = estimate_propensities(log, method="auto", context_features="x", data=data, n_boot=0)
    assert got.method == "regression-em"
    assert got.info["context_fit"].startswith("regression-em's pooled curve")
    plain = estimate_propensities(log, method="regression-em", data=data)
    np.testing.assert_array_equal(got.theta, plain.theta)
    m = got.contexts
    w_true = -SLOPE * np.log(np.arange(1, K + 1))
    z = (m.coef[1:, 1] - w_true[1:]) / m.coef_se[1:, 1]
    assert np.all(np.abs(z) < 3.5) and np.all(m.coef_se[1:, 1] < 0.1), z
    mean = (m.theta * m.n).sum(axis=0) / m.n.sum(axis=0)
    np.testing.assert_allclose(mean, got.theta, rtol=1e-10)
    assert m.homogeneity["df"] == K - 1 and m.homogeneity["p_value"] < 1e-10
    # each context's interval holds the pooled one's width (regression EM's hull of two
    # smoothings, on the log scale) and the slopes' uncertainty on top
    ci = np.log(plain.conf_int().select("lower", "upper").to_numpy())[1:]
    half = np.maximum(np.log(plain.theta[1:]) - ci[:, 0], ci[:, 1] - np.log(plain.theta[1:]))
    assert np.all(m.se[:, 1:] >= half / 1.959963984540054 * (1 - 1e-12))
    assert np.all(m.se[[0, -1], 1:] > m.se[SEGMENTS // 2, 1:])  # the ends against the middle


def test_without_position_variety_and_one_curve_the_test_keeps_quiet():
    data, log = _one_position(0.0, 20_000, seed=6)
    m = estimate_propensities(log, method="regression-em", context_features="x", data=data,
                              n_boot=0).contexts  # fmt: skip
    assert m.homogeneity["p_value"] > 0.01, m.homogeneity
    assert np.all(np.abs(m.coef[1:, 1]) < 3.5 * m.coef_se[1:, 1])


def test_auto_fits_ems_model_where_documents_move(sloped, fitted):
    data, log = sloped
    got = estimate_propensities(log, method="auto", context_features="x", data=data, n_boot=0)
    assert got.info["context_fit"].startswith("EM's likelihood")
    np.testing.assert_array_equal(got.contexts.theta, fitted.contexts.theta)


def test_the_learner_and_the_command_line_fit_a_log_without_position_variety(
    one_position, tmp_path
):
    from click.testing import CliRunner

    from clickrank import ClickRanker
    from clickrank.cli import cli
    from clickrank.datasets import save_letor

    data, log = one_position
    lines = []
    small = dict(family=("ips-shown",), n_estimators=30, seed=0)
    ranker = ClickRanker(context_features="x", **small).fit(data, log, progress=lines.append)
    assert ranker.propensities_.method == "regression-em"
    assert isinstance(ranker.propensities_.contexts, ContextModel)
    said = "context features x: θ per impression from the model's curves at 40 contexts; one"
    assert any(line.startswith(said) for line in lines)
    save_letor(data, tmp_path / "data.txt")
    log.write_parquet(tmp_path / "log.parquet")
    out = tmp_path / "m.json"
    args = ["propensity", str(tmp_path / "log.parquet"), "--method", "regression-em", "--data",
            str(tmp_path / "data.txt"), "--context-features", "x", "-o", str(out)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    want = estimate_propensities(log, method="regression-em", context_features="x", data=data)
    np.testing.assert_allclose(Propensities.load(out).contexts.theta, want.contexts.theta,
                               rtol=1e-12)  # fmt: skip
    assert "regression-em: θ as a function of x" in res.stderr
    loaded = Propensities.load(out).contexts
    assert loaded.interval == "regression-em's pooled interval and the slopes' observed information"
    # auto says which source it chose, and the summary where the intervals come from
    out = tmp_path / "auto.json"
    res = CliRunner().invoke(cli, [*args[:3], "auto", *args[4:-1], str(out)])
    assert res.exit_code == 0, res.output
    assert "propensities: regression-em (no randomized interventions" in res.stderr
    assert "95% CI from regression-em's pooled interval and the slopes'" in res.stdout


def test_slopes_within_documents_agree_with_ems_and_say_when_they_see_nothing(sloped, one_position):
    """Where documents move, the slopes within each (query, doc, position) estimate the
    same w as EM's joint fit (within a standard error here); a feature that is constant
    within every document's impressions (one value per query) shows no slope at all."""
    data, log = sloped
    within = estimate_propensities(log, method="regression-em", context_features="x", data=data,
                                   n_boot=0).contexts  # fmt: skip
    joint = estimate_propensities(log, method="em", context_features="x", n_boot=0).contexts
    gap = np.abs(within.coef[1:, 1] - joint.coef[1:, 1])
    assert np.all(gap < joint.coef_se[1:, 1]), (within.coef[:, 1], joint.coef[:, 1])
    data, log = one_position
    per_query = log.with_columns(xq=(pl.col("query") % 7).cast(pl.Float64))
    got = estimate_propensities(per_query, method="regression-em", context_features="xq",
                                data=data, n_boot=0)  # fmt: skip
    assert "constant within each document's impressions" in got.warnings[-1]
    assert "not tested" in got.contexts.verdict()


def test_on_a_swap_log_the_level_is_the_swap_estimate_and_auto_keeps_it():
    """With randomized swaps ``auto``'s pooled curve is the swap estimate, with or without
    features; the model takes it as the level and the slopes from within documents."""
    from clickrank.policies import DeterministicPolicy
    from clickrank.simulation import Context, Swap, simulate

    x = np.linspace(-1, 1, SEGMENTS)
    names = [f"s{i:02d}" for i in range(SEGMENTS)]
    models = {v: PBM(PowerLaw(1 + SLOPE * xv)) for v, xv in zip(names, x, strict=True)}
    data = synthetic(300, 20, seed=0)
    log = simulate(data, policy=DeterministicPolicy(data.X[:, 0]), n_sessions=30_000, top_k=K,
                   interventions=[Swap(0.5)], seed=4,
                   context=Context("segment", dict.fromkeys(names, 1.0), models))  # fmt: skip
    log = log.with_columns(x=pl.col("segment").cast(pl.String).replace_strict(
        dict(zip(names, x.tolist(), strict=True)), return_dtype=pl.Float64))  # fmt: skip
    got = estimate_propensities(log, method="auto", context_features="x", data=data, n_boot=0)
    plain = estimate_propensities(log, method="auto", data=data, n_boot=0)
    assert got.method == plain.method == "swap" and got.info["source"] == plain.info["source"]
    np.testing.assert_array_equal(got.theta, plain.theta)
    assert got.info["context_fit"].startswith("swap's pooled curve")
    m = got.contexts
    z = (m.coef[1:, 1] + SLOPE * np.log(np.arange(2, K + 1))) / m.coef_se[1:, 1]
    assert np.all(np.abs(z) < 3.5), z
    mean = (m.theta * m.n).sum(axis=0) / m.n.sum(axis=0)
    np.testing.assert_allclose(mean, got.theta, rtol=1e-10)
