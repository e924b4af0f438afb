"""Context-dependent position bias: simulated context columns, θ per context, shrinkage
and the homogeneity test."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from clickrank import EstimationError, InputError
from clickrank.clicklog import read_log, read_log_metadata
from clickrank.clickmodels import PBM, PowerLaw, TrustBias
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, PlackettLuce
from clickrank.propensity import Propensities, estimate_propensities
from clickrank.propensity._context import shrink
from clickrank.simulation import Context, Randomize, RandPair, Swap, simulate

K = 6
ETA = {"phone": 2.0, "desktop": 0.5}


@pytest.fixture(scope="module")
def data():
    return synthetic(80, 12, seed=0)


def _device(etas=ETA, shares=None):
    shares = shares or {"phone": 0.3, "desktop": 0.7}
    return Context("device", shares, {v: PBM(PowerLaw(etas[v])) for v in shares})


def _log(data, context, n=60_000, seed=3, interventions=None, policy=None, **kw):
    return simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]) if policy is None else policy,
        n_sessions=n,
        top_k=K,
        interventions=[Swap(0.5)] if interventions is None else interventions,
        seed=seed,
        context=context,
        **kw,
    )


def _truth(eta):
    return 1.0 / np.arange(1, K + 1) ** eta


@pytest.fixture(scope="module")
def two_devices(data):
    return _log(data, _device())


# -- the simulated column ----------------------------------------------------------------


def test_the_context_is_one_value_per_session_drawn_from_the_shares(two_devices):
    log = two_devices
    assert log.schema["device"] == pl.Categorical
    assert log.columns[-1] == "device"  # appended after the log's own columns
    per = log.group_by("session").agg(pl.col("device").n_unique().alias("k"), pl.first("device"))
    assert per["k"].max() == 1
    n = per.height
    phones = int((per["device"].cast(pl.String) == "phone").sum())
    assert abs(phones / n - 0.3) < 4 * np.sqrt(0.3 * 0.7 / n)


def test_each_context_clicks_by_its_own_model(data, two_devices):
    """The phone sessions of the context log are, click for click, those of a log whose
    only model is the phone's: same draws, the context only picks the model."""
    alone = _log(data, None, click_model=PBM(PowerLaw(ETA["phone"])))
    phones = two_devices.filter(pl.col("device") == "phone").drop("device")
    assert_frame_equal(alone.join(phones.select("session"), on="session", how="semi"), phones)


def test_a_context_that_changes_no_model_leaves_the_log_as_without_it(data):
    """No context, a context of shares only and one whose models all equal click_model
    give the same log (less the column): the code path without context is unchanged."""
    pbm = PBM(PowerLaw(1.0))
    kw = dict(n=3000, click_model=pbm, interventions=[Swap(0.3), RandPair(0.1)])
    plain = _log(data, None, **kw)
    shares_only = _log(data, Context("device", {"phone": 0.3, "desktop": 0.7}), **kw)
    same = _log(data, Context("device", {"a": 0.5, "b": 0.5}, {"a": pbm, "b": pbm}), **kw)
    assert_frame_equal(shares_only.drop("device"), plain)
    assert_frame_equal(same.drop("device"), plain)
    assert "device" not in plain.columns


def test_trust_bias_context_and_several_context_columns(data):
    trust = {v: TrustBias(PowerLaw(eta)) for v, eta in ETA.items()}
    device = Context("device", {"phone": 0.3, "desktop": 0.7}, trust)
    layout = Context("layout", {"list": 0.8, "grid": 0.2})
    log = _log(data, [device, layout], n=2000)
    assert log.columns[-2:] == ["device", "layout"]
    again = simulate(data, policy=DeterministicPolicy(data.X[:, 0]), n_sessions=2000, top_k=K,
                     interventions=[Swap(0.5)], seed=3, context=[device, layout],
                     chunk_size=333, n_jobs=2)  # fmt: skip
    assert_frame_equal(again, log)
    # the two columns are independent draws
    per = log.filter(pl.col("position") == 1)
    assert per.select(pl.col("device").cast(pl.String) == "phone").to_series().mean() != (
        per.select(pl.col("layout").cast(pl.String) == "grid").to_series().mean())  # fmt: skip


def test_the_context_is_in_the_files_and_their_description(data, tmp_path):
    out = tmp_path / "log.parquet"
    simulate(data, policy=PlackettLuce(data.X[:, 0]), n_sessions=500, top_k=K,
             context=_device(), out=out)  # fmt: skip
    log = read_log(out, lazy=False)
    assert log.schema["device"] == pl.Categorical
    meta = read_log_metadata(out)
    assert meta["context"][0]["name"] == "device"
    assert meta["context"][0]["shares"] == {"phone": 0.3, "desktop": 0.7}


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Context("position", {"a": 1.0}), "column of the log"),
        (lambda: Context("device", {}), "non-empty mapping"),
        (lambda: Context("device", {"a": -1.0, "b": 2.0}), "shares must be finite, >= 0"),
        (lambda: Context("device", {"a": 1.0}, {"b": PBM()}), "'b', which has no share"),
    ],
)
def test_bad_contexts_are_one_line(make, match):
    with pytest.raises(InputError, match=match):
        make()


def test_bad_context_arguments_of_simulate(data):
    kw = dict(policy=DeterministicPolicy(data.X[:, 0]), n_sessions=10, top_k=K)
    with pytest.raises(InputError, match="only one context may carry click models"):
        simulate(data, context=[_device(), Context("layout", {"a": 1.0}, {"a": PBM()})], **kw)
    with pytest.raises(InputError, match="needs click_model"):
        simulate(data, context=Context("device", {"a": 0.5, "b": 0.5}, {"a": PBM()}), **kw)
    with pytest.raises(InputError, match="must be a Context"):
        simulate(data, click_model="pbm", context="device", **kw)
    with pytest.raises(InputError, match="distinct"):
        simulate(data, click_model="pbm", context=[_device(), _device()], **kw)


# -- θ per context -----------------------------------------------------------------------


def test_per_context_swap_estimates_are_within_their_standard_errors(two_devices):
    """Each context's raw and shrunk curves sit within 4 of their own reported SEs (on the
    log scale) of the true curve: phones η = 2, desktops η = 0.5."""
    p = estimate_propensities(two_devices, method="swap", context="device")
    ctx = p.contexts
    assert ctx.columns == ("device",) and ctx.labels == ["device=desktop", "device=phone"]
    for i, (value,) in enumerate(ctx.values):
        truth = np.log(_truth(ETA[value]))[1:]
        raw = ctx.curves[i]
        assert np.all(np.abs(np.log(raw.theta[1:]) - truth) <= 4 * raw.se[1:])
        assert np.all(np.abs(np.log(ctx.theta[i, 1:]) - truth) <= 4 * ctx.se[i, 1:])
    # the two curves are far apart, so the prior hardly moves either
    assert np.all(ctx.shrinkage[:, 1:] < 0.05)


def test_the_homogeneity_test_rejects_two_curves_and_accepts_one(data, two_devices):
    differ = estimate_propensities(two_devices, method="swap", context="device").contexts
    h = differ.homogeneity
    assert h["df"] == (2 - 1) * (K - 1) and h["positions"] == list(range(2, K + 1))
    assert h["p_value"] < 1e-10
    one = _log(data, _device({"phone": 1.0, "desktop": 1.0}), seed=5)
    same = estimate_propensities(one, method="swap", context="device").contexts
    assert same.homogeneity["p_value"] > 0.01


def test_shrinkage_pulls_a_small_context_and_leaves_a_large_one(data):
    """Three devices whose curves are close (η 0.8, 1, 1.2); the tablet has 3 % of the
    sessions: its curve moves toward the prior, the desktop's (67 %) hardly."""
    shares = {"desktop": 0.67, "phone": 0.30, "tablet": 0.03}
    log = _log(data, _device({"desktop": 0.8, "phone": 1.2, "tablet": 1.0}, shares), seed=7)
    ctx = estimate_propensities(log, method="swap", context="device").contexts
    by = {v[0]: i for i, v in enumerate(ctx.values)}
    big, small = by["desktop"], by["tablet"]
    b = ctx.shrinkage[:, 1:]
    assert np.all(b[small] > 0.2) and np.all(b[big] < 0.05) and np.all(b[small] > 5 * b[big])
    prior = np.log(ctx.prior[1:])
    raw_gap = np.abs(np.log(ctx.curves[small].theta[1:]) - prior)
    shrunk_gap = np.abs(np.log(ctx.theta[small, 1:]) - prior)
    assert np.all(shrunk_gap <= (1 - b[small]) * raw_gap + 1e-12)
    # the posterior SE of the small context is smaller than its raw SE
    assert np.all(ctx.se[small, 1:] < ctx.curves[small].se[1:])


def test_shrink_follows_its_formulas():
    """DerSimonian-Laird τ², the random-effects mean and B = s²/(s² + τ²), by hand."""
    y = np.log(np.array([[1.0, 0.5], [1.0, 0.3], [1.0, 0.45]]))
    s = np.array([[0.0, 0.1], [0.0, 0.2], [0.0, 0.4]])
    got = shrink(y, s)
    v = s[:, 1] ** 2
    w = 1 / v
    fixed = (w * y[:, 1]).sum() / w.sum()
    q = (w * (y[:, 1] - fixed) ** 2).sum()
    tau2 = max(0.0, (q - 2) / (w.sum() - (w**2).sum() / w.sum()))
    wr = 1 / (v + tau2)
    mu = (wr * y[:, 1]).sum() / wr.sum()
    b = v / (v + tau2)
    assert got["tau"][1] == pytest.approx(np.sqrt(tau2))
    assert got["prior"][1] == pytest.approx(np.exp(mu))
    assert got["shrinkage"][:, 1] == pytest.approx(b)
    assert np.log(got["theta"][:, 1]) == pytest.approx(y[:, 1] + b * (mu - y[:, 1]))
    assert got["se"][:, 1] ** 2 == pytest.approx((1 - b) * v + b**2 / wr.sum())
    assert np.all(got["theta"][:, 0] == 1) and np.all(got["shrinkage"][:, 0] == 0)
    # contexts that agree within their noise pool completely (τ = 0, B = 1)
    flat = shrink(np.log([[1.0, 0.5], [1.0, 0.5]]), np.array([[0.0, 0.1], [0.0, 0.3]]))
    assert flat["tau"][1] == 0 and np.all(flat["shrinkage"][:, 1] == 1)


def test_without_context_the_result_is_the_pooled_one(two_devices):
    plain = estimate_propensities(two_devices, method="swap")
    both = estimate_propensities(two_devices, method="swap", context=["device"])
    assert plain.contexts is None and "contexts" not in plain.to_dict()
    assert_frame_equal(both.to_frame().filter(pl.col("device").is_null()).select(
        plain.to_frame().columns), plain.to_frame())  # fmt: skip
    assert np.array_equal(both.theta, plain.theta) and np.array_equal(both.se, plain.se)
    assert both.info["context"] == ["device"]


def test_the_result_shows_and_keeps_the_contexts(two_devices, tmp_path):
    p = estimate_propensities(two_devices, method="swap", context="device")
    frame = p.to_frame()
    assert frame.height == 3 * K
    assert frame.columns[:2] == ["device", "position"]
    assert {"theta_raw", "lower_raw", "upper_raw", "shrinkage"} <= set(frame.columns)
    text = p.summary()
    assert "homogeneity" in text and "device=phone" in text and "shrink" in text
    path = p.save(tmp_path / "theta.json")
    back = Propensities.load(path)
    assert back == p
    assert back.contexts.homogeneity["df"] == K - 1
    assert_frame_equal(back.to_frame(), frame)


def test_randpair_and_auto_give_per_context_curves(data):
    log = _log(data, _device(), n=20_000, interventions=[RandPair(0.5)])
    rp = estimate_propensities(log, method="randpair", context="device")
    assert rp.method == "randpair" and len(rp.contexts.curves) == 2
    auto = estimate_propensities(log, method="auto", context="device")
    assert auto.info["source"]["method"] == "randpair"
    assert np.array_equal(auto.contexts.theta, rp.contexts.theta, equal_nan=True)


@pytest.fixture(scope="module")
def passive(data):
    """A log without interventions whose Plackett-Luce logger moves documents between
    positions (what harvesting and EM need), with the two devices."""
    return _log(data, _device(), policy=PlackettLuce(data.X[:, 0] * 2.0), interventions=[])


@pytest.mark.parametrize("method", ["randomized", "harvest-allpairs", "harvest-pivot", "em",
                                    "regression-em", "auto"])  # fmt: skip
def test_every_estimator_gives_per_context_curves_near_the_truth(data, passive, method):
    """Each context's curve (its estimator on its own sessions) is within 4 of its SEs of
    the true curve; the pooled curve is the one without ``context``."""
    if method == "randomized":
        log = _log(data, _device(), interventions=[Randomize(0.5)])
    else:
        log = passive
    kw = {"data": data, "n_boot": 30} if method in ("regression-em", "auto") else {}
    if method == "em":
        kw = {"n_boot": 30}
    p = estimate_propensities(log, method=method, context="device", **kw)
    plain = estimate_propensities(log, method=method, **kw)
    assert np.array_equal(p.theta, plain.theta) and np.array_equal(p.se, plain.se)
    ctx = p.contexts
    assert ctx.labels == ["device=desktop", "device=phone"]
    for i, (value,) in enumerate(ctx.values):
        curve = ctx.curves[i]
        assert curve.K == p.K == K
        err = np.abs(np.log(curve.theta[1:]) - np.log(_truth(ETA[value]))[1:])
        assert np.all(err <= 4 * curve.se[1:]), (value, err, curve.se)
    assert ctx.homogeneity["p_value"] < 1e-6
    if method == "auto":
        assert p.info["source"]["method"] == "em"


def test_em_context_curves_take_the_observed_information_of_the_profile_likelihood(passive):
    """An EM context curve's covariance is the inverse of minus the profile
    log-likelihood's Hessian (here by finite differences); the homogeneity test uses it."""
    from clickrank.propensity import cell_statistics
    from clickrank.propensity._context import _covariance
    from clickrank.propensity._em import _profile_log_gamma, loglik

    ctx = estimate_propensities(passive, method="em", context="device", n_boot=20).contexts
    assert ctx.values[0] == ("desktop",)
    curve = ctx.curves[0]
    assert curve.replicates is None and curve.info["interval"].startswith("observed information")
    cells = cell_statistics(passive.lazy().filter(pl.col("device") == "desktop"))
    g, pos, n, c = cells["g"], cells["position"] - 1, cells["n"], cells["c"]
    G = int(g.max()) + 1

    def profile(a_free):
        a = np.r_[0.0, a_free]
        b, _ = _profile_log_gamma(a, g, pos, n, c, G)
        return loglik(a[pos] + b[g], n, c)

    a = np.log(curve.theta[1:])
    h, m = 1e-4, K - 1
    hess = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            e_i, e_j = h * np.eye(m)[i], h * np.eye(m)[j]
            ridge = profile(a + e_i + e_j) - profile(a + e_i - e_j)
            valley = profile(a - e_i + e_j) - profile(a - e_i - e_j)
            hess[i, j] = (ridge - valley) / (4 * h * h)
    keep = np.arange(K) > 0
    np.testing.assert_allclose(_covariance(curve, keep), np.linalg.inv(-hess), rtol=1e-3)


def test_em_information_needs_the_observed_constraint(passive):
    from clickrank.propensity import cell_statistics, em_from_cells

    with pytest.raises(InputError, match="information=True needs constraint='observed'"):
        em_from_cells(cell_statistics(passive.lazy()), information=True, constraint="all")


def test_em_context_curves_under_constraint_all_bootstrap_their_own_cells(passive):
    """EM's ``constraint="all"`` has no information route: each context bootstraps its
    own cells, and the homogeneity test's covariance is its replicates'."""
    from clickrank.propensity._context import _covariance

    ctx = estimate_propensities(passive, method="em", context="device", n_boot=40,
                                constraint="all").contexts  # fmt: skip
    curve = ctx.curves[0]
    keep = np.arange(K) > 0
    want = np.cov(curve.replicates[:, keep], rowvar=False)
    assert np.allclose(_covariance(curve, keep), want)
    assert np.allclose(np.sqrt(np.diag(want)), curve.se[keep], rtol=1e-9)


def test_several_context_columns_give_one_curve_per_combination(data):
    layout = Context("layout", {"list": 0.6, "grid": 0.4})
    log = _log(data, [_device(), layout], n=30_000)
    ctx = estimate_propensities(log, method="swap", context=["device", "layout"]).contexts
    assert ctx.columns == ("device", "layout")
    assert sorted(ctx.values) == [(d, v) for d in ("desktop", "phone") for v in ("grid", "list")]
    assert "device=phone, layout=grid" in ctx.labels
    assert ctx.homogeneity["df"] == (4 - 1) * (K - 1) and ctx.homogeneity["p_value"] < 1e-10
    frame = estimate_propensities(log, method="swap", context=["device", "layout"]).to_frame()
    assert frame.columns[:3] == ["device", "layout", "position"] and frame.height == 5 * K


# -- bad input ---------------------------------------------------------------------------


def test_bad_context_input_is_one_line(data, two_devices):
    log = two_devices
    with pytest.raises(InputError, match="context column 'layout' is not in the log"):
        estimate_propensities(log, method="swap", context="layout")
    nulls = log.with_columns(
        device=pl.when(pl.col("session") == 7).then(None).otherwise(pl.col("device"))
    )
    with pytest.raises(InputError, match="'device' has null values"):
        estimate_propensities(nulls, method="swap", context="device")
    no_swaps = log.with_columns(
        device=pl.when(pl.col("intervention").cast(pl.String) == "swap")
        .then(pl.lit("desktop"))
        .otherwise(pl.col("device").cast(pl.String))
    )
    with pytest.raises(InputError, match="device='phone' has no swap sessions"):
        estimate_propensities(no_swaps, method="swap", context="device")
    many = log.with_columns(user=(pl.col("session") % 5000).cast(pl.String))
    for method in ("swap", "em"):  # refused before any estimate
        with pytest.raises(InputError, match="'user' gives 5,000 distinct contexts.*group"):
            estimate_propensities(many, method=method, context="user")
        with pytest.raises(InputError, match="'device' has null values"):
            estimate_propensities(nulls, method=method, context="device")
    with pytest.raises(InputError, match="expected a category"):
        estimate_propensities(log.with_columns(x=pl.lit(0.5)), method="swap", context="x")
    shuffled = simulate(data, policy=DeterministicPolicy(data.X[:, 0]), n_sessions=3000,
                        top_k=K, interventions=[Randomize(0.5)], seed=1,
                        context=_device())  # fmt: skip
    one_phone = shuffled.with_columns(
        device=pl.when(pl.col("intervention").cast(pl.String) == "randomized")
        .then(pl.lit("desktop"))
        .otherwise(pl.col("device").cast(pl.String))
    )
    with pytest.raises(EstimationError, match="context device='phone': randomized estimator: "
                       "the log has no randomized sessions"):  # fmt: skip
        estimate_propensities(one_phone, method="randomized", context="device")


# -- the words, the plot and the command line ---------------------------------------------


def test_the_homogeneity_verdict_says_whether_one_curve_is_enough(two_devices):
    ctx = estimate_propensities(two_devices, method="swap", context="device").contexts
    h = ctx.homogeneity
    assert ctx.verdict() == (
        "one curve is not enough: the contexts' curves differ (Wald chi2 = "
        f"{h['statistic']:.2f}, df = {h['df']}, p = {h['p_value']:.3g} < 0.05)"
    )
    same = replace(ctx, homogeneity={**h, "statistic": 3.5, "p_value": 0.62})
    assert same.verdict(0.1) == (
        "one curve is enough for these contexts: their curves do not differ detectably "
        f"(Wald chi2 = 3.50, df = {h['df']}, p = 0.62 >= 0.1)"
    )
    untested = replace(ctx, homogeneity={**h, "p_value": np.nan})
    assert "not tested" in untested.verdict()
    assert f"homogeneity: {ctx.verdict()}" in estimate_propensities(
        two_devices, method="swap", context="device").summary()  # fmt: skip


def test_the_plot_draws_each_context_with_its_band_and_the_pooled_curve(two_devices, tmp_path):
    p = estimate_propensities(two_devices, method="swap", context="device")
    fig = p.plot(true_theta=[_truth(ETA[v]) for (v,) in p.contexts.values], path=tmp_path / "t.png")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    n = p.contexts.n_sessions
    assert legend == [
        f"device=desktop ({n[0]:,} sessions)",
        f"device=phone ({n[1]:,} sessions)",
        f"pooled ({p.n_sessions:,} sessions)",
    ]
    assert len(ax.collections) == 2  # one band per context
    band = ax.collections[1].get_paths()[0].vertices[:, 1]
    lo, hi = p.contexts.bounds()[1, :, 0], p.contexts.bounds()[1, :, 1]
    assert band.min() == pytest.approx(lo.min()) and band.max() == pytest.approx(hi.max())
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="one curve or one per context"):
        p.plot(true_theta=np.ones((3, K)))


def _cli(args):
    from click.testing import CliRunner

    from clickrank.cli import cli

    return CliRunner().invoke(cli, ["propensity", *map(str, args)])


def test_the_command_line_prints_writes_and_draws_the_contexts(two_devices, tmp_path):
    log = tmp_path / "log.parquet"
    two_devices.with_columns(layout=(pl.col("session") % 2).cast(pl.String)).write_parquet(log)
    want = estimate_propensities(log, method="swap", context="device")
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    res = _cli([log, "--method", "swap", "--context", "device", "-o", out, "--plot", png])
    assert res.exit_code == 0, res.output
    assert res.stdout == want.summary() + "\n"
    assert "one curve is not enough: the contexts' curves differ (Wald chi2 = " in res.stdout
    assert "device=phone" in res.stdout
    back = Propensities.load(out)
    assert back == want and back.contexts.labels == ["device=desktop", "device=phone"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png} (θ by position and context, PNG)" in res.stderr
    # several columns: repeated or comma-separated, the same; auto chooses swap here
    two = estimate_propensities(log, method="swap", context=["device", "layout"])
    for i, spelling in enumerate((["--context", "device", "--context", "layout"],
                                  ["--context", "device, layout"])):  # fmt: skip
        res = _cli([log, *spelling, "-o", tmp_path / f"two{i}.json"])
        assert res.exit_code == 0, res.output
        got = Propensities.load(tmp_path / f"two{i}.json").contexts
        assert_frame_equal(got.to_frame(), two.contexts.to_frame())
    # without --context: the pooled result, as before
    res = _cli([log, "--method", "swap", "-o", tmp_path / "plain.json"])
    assert res.exit_code == 0 and "By context" not in res.stdout
    assert "contexts" not in json.loads((tmp_path / "plain.json").read_text())
    assert res.stdout == estimate_propensities(log, method="swap").summary() + "\n"


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--context", "layout"], 1,
         "Error: context column 'layout' is not in the log; its other columns: device"),
        (["--context", "device,device"], 1, "Error: context names a column twice"),
        (["--context", "device", "--method", "swap", "--bootstrap", "10"], 2,
         "Error: --bootstrap with --context applies to --method em, regression-em, auto"),
    ],
)  # fmt: skip
def test_a_bad_context_option_is_one_line_and_writes_nothing(two_devices, tmp_path, args,
                                                             code, message):  # fmt: skip
    log = tmp_path / "log.parquet"
    two_devices.write_parquet(log)
    res = _cli([log, *args, "-o", tmp_path / "t.json", "--plot", tmp_path / "t.png"])
    assert res.exit_code == code, res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
    assert len(errors) == 1 and errors[0].startswith(message), res.output
    assert "Traceback" not in res.output
    assert sorted(f.name for f in tmp_path.iterdir()) == ["log.parquet"]


# -- coverage ----------------------------------------------------------------------------


def test_per_context_intervals_cover_and_the_test_keeps_its_level(data):
    """A small coverage check: 30 logs with one shared curve (η = 1 in both contexts, so
    the homogeneity test's rejections are false) and 30 with η 2 vs 0.5. The 95 % raw
    intervals cover the true θ at about their level, and the test rejects one shared curve
    about 5 % of the time (at most 5 of 30: P(Bin(30, 0.05) >= 6) < 0.01)."""
    hits, total, rejections = 0, 0, 0
    for seed in range(30):
        for etas in ({"phone": 1.0, "desktop": 1.0}, ETA):
            log = _log(data, _device(etas), n=6000, seed=100 + seed)
            ctx = estimate_propensities(log, method="swap", context="device").contexts
            for i, (value,) in enumerate(ctx.values):
                lo, hi = ctx.curves[i].conf_int(0.05).select("lower", "upper").to_numpy()[1:].T
                t = _truth(etas[value])[1:]
                hits += int(((lo <= t) & (t <= hi)).sum())
                total += K - 1
            if etas["phone"] == etas["desktop"]:
                rejections += ctx.homogeneity["p_value"] < 0.05
    assert 0.9 <= hits / total <= 0.99, hits / total
    assert rejections <= 5


def test_the_command_line_gives_em_per_context_with_its_bootstrap(passive, tmp_path):
    log = tmp_path / "log.parquet"
    passive.write_parquet(log)
    res = _cli([log, "--method", "em", "--context", "device", "--bootstrap", "20",
                "-o", tmp_path / "t.json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "em: θ per context of device (one pass over the log, split by context)" \
        in res.stderr  # fmt: skip
    got = Propensities.load(tmp_path / "t.json")
    want = estimate_propensities(log, method="em", context="device", n_boot=20)
    assert got == want and got.contexts.curves[0].method == "em"


@pytest.mark.parametrize("case", ["plain", "null", "varies"])
def test_context_cells_counted_as_columns_equal_the_grouped_counts(passive, case):
    """The cells split by context, counted as columns of the pooled groups, are the
    grouped counts to the row, with a null context too; a context that no first
    position shows is counted by the grouped path instead."""
    from clickrank.engine.polars import grouped_counts
    from clickrank.propensity import _harvest

    log = passive
    if case == "null":
        log = log.with_columns(device=pl.when(pl.col("session") % 7 == 0).then(None)
                               .otherwise(pl.col("device")))  # fmt: skip
    if case == "varies":  # one session shows another device below its first position
        moved = (pl.col("session") == 3) & (pl.col("position") == 2)
        device = pl.when(moved).then(pl.lit("tablet")).otherwise(pl.col("device").cast(pl.String))
        log = log.with_columns(device=device)
    keys = ["query", "doc", "position"]
    lf = log.lazy()
    contexts = lf.filter(pl.col("position") == 1).select("device").unique().collect()
    wide = _harvest._context_counts(lf, keys, ("device",), contexts)
    want = grouped_counts(lf, [*keys, "device"]).collect()
    if case == "varies":
        assert wide is None
    else:
        assert_frame_equal(wide, want)
    stats = _harvest.cell_statistics(lf, by=("device",))
    np.testing.assert_array_equal(stats["n"], want["n"].to_numpy())
    np.testing.assert_array_equal(stats["c"], want["c"].to_numpy())


@pytest.mark.parametrize("method, kw", [("harvest-allpairs", {}), ("harvest-adjacent", {}),
                                        ("em", {"n_boot": 0}), ("em", {"n_boot": 20})])  # fmt: skip
def test_a_context_curve_from_the_split_cells_is_the_estimate_on_its_own_sessions(
    passive, method, kw
):
    """Harvesting and EM split one aggregation by context: each context's curve is what
    the method gives on that context's sessions alone (EM's with the observed
    information's standard errors, whether or not the pooled curve bootstraps)."""
    from clickrank.propensity import cell_statistics, em_from_cells

    ctx = estimate_propensities(passive, method=method, context="device", **kw).contexts
    for i, (value,) in enumerate(ctx.values):
        mine = passive.filter(pl.col("device") == value)
        if method == "em":
            alone = em_from_cells(cell_statistics(mine.lazy()), K=K, information=True)
        else:
            alone = estimate_propensities(mine, method=method, K=K, **kw)
        np.testing.assert_allclose(ctx.curves[i].theta, alone.theta, rtol=1e-10)
        np.testing.assert_allclose(ctx.curves[i].se, alone.se, rtol=1e-8, equal_nan=True)


@pytest.mark.parametrize("method", ["harvest-allpairs", "em"])
def test_the_context_fits_give_the_same_numbers_on_one_thread_and_on_three(
    passive, method, monkeypatch
):
    """The pooled and the contexts' fits run in threads on the free cores, each alone on
    its cells: one thread or three, the same numbers, context by context."""
    import clickrank.propensity._context as C

    got = {}
    for threads in (1, 3):
        monkeypatch.setattr(C, "fit_threads", lambda given, t=threads: t)
        kw = {"n_boot": 0} if method == "em" else {}
        got[threads] = estimate_propensities(passive, method=method, context="device", **kw)
    one, three = got[1], got[3]
    np.testing.assert_array_equal(one.theta, three.theta)
    np.testing.assert_array_equal(one.se, three.se)
    assert one.contexts.values == three.contexts.values
    for a, b in zip(one.contexts.curves, three.contexts.curves, strict=True):
        np.testing.assert_array_equal(a.theta, b.theta)
        np.testing.assert_array_equal(a.se, b.se)


@pytest.mark.parametrize("shuffled", [False, True])
def test_randomized_context_curves_come_from_one_split_pass(data, shuffled):
    """The randomized estimator's counts split by context (the co-clicks too, in session
    order or, for a shuffled log, by the join): each curve is the estimate on that
    context's sessions alone, and the pooled one is the one without a context."""
    log = _log(data, _device(), n=20_000, interventions=[Randomize(0.5)])
    if shuffled:
        log = log.sample(fraction=1.0, shuffle=True, seed=1)
    p = estimate_propensities(log, method="randomized", context="device")
    plain = estimate_propensities(log, method="randomized")
    assert np.array_equal(p.theta, plain.theta) and np.array_equal(p.se, plain.se)
    for i, (value,) in enumerate(p.contexts.values):
        alone = estimate_propensities(log.filter(pl.col("device") == value), "randomized", K=K)
        np.testing.assert_allclose(p.contexts.curves[i].theta, alone.theta, rtol=1e-12)
        np.testing.assert_allclose(p.contexts.curves[i].se, alone.se, rtol=1e-10)
    # the test's covariance: each ratio's own variance, and the slot-1 rate they share
    from clickrank.propensity._context import _covariance

    curve, keep = p.contexts.curves[0], np.arange(K) > 0
    cov = _covariance(curve, keep)
    np.testing.assert_allclose(np.diag(cov), curve.se[keep] ** 2)
    shared = curve.info["slot1"]
    a = np.array(shared["cov"])[keep]
    np.testing.assert_allclose(cov[0, 1], shared["var"] - a[0] - a[1])
    assert np.all(np.linalg.eigvalsh(cov) > 0) and shared["var"] > 0


# -- the command line simulates a context ----------------------------------------------------


_SIM = ["simulate", "--synthetic", "40", "--docs-per-query", "12", "--sessions", "6000",
        "--top-k", "6", "--swap-fraction", "0.5"]  # fmt: skip


def test_the_command_line_simulates_a_context(tmp_path):
    """--context, its shares and each value's η give the log a device column whose values
    click by their own curves; a TOML config with tables gives the same bytes."""
    from click.testing import CliRunner

    from clickrank.cli import cli

    log = tmp_path / "flags.parquet"
    flags = ["--context", "device", "--context-shares", "phone=0.3,desktop=0.7",
             "--context-eta", "phone=2,desktop=0.5"]  # fmt: skip
    res = CliRunner().invoke(cli, [*_SIM, *flags, "-o", str(log)])
    assert res.exit_code == 0, res.output
    assert "device: desktop 69.6% of the sessions" in res.stdout and "; phone 30.4%" in res.stdout
    got = read_log(log, lazy=False)
    assert got["device"].dtype == pl.Categorical
    meta = read_log_metadata(log)["context"][0]
    assert meta["name"] == "device" and meta["shares"] == {"phone": 0.3, "desktop": 0.7}
    assert (
        "eta=2.0" in meta["click_models"]["phone"] and "eta=0.5" in meta["click_models"]["desktop"]
    )
    # the phones' clicks fall off faster: θ_6 / θ_1 of 6^-2 against 6^-0.5 under swaps
    theta = estimate_propensities(log, method="swap", context="device").contexts
    deep = dict(zip([v[0] for v in theta.values], [c.theta[-1] for c in theta.curves], strict=True))
    assert deep["phone"] < 0.15 < 0.3 < deep["desktop"], deep
    toml = tmp_path / "sim.toml"
    toml.write_text('context = "device"\ncontext-shares = {phone = 0.3, desktop = 0.7}\n'
                    'context-eta = {phone = 2, desktop = 0.5}\n')  # fmt: skip
    again = tmp_path / "toml.parquet"
    res = CliRunner().invoke(cli, [*_SIM, "--config", str(toml), "-o", str(again)])
    assert res.exit_code == 0, res.output
    assert again.read_bytes() == log.read_bytes()


@pytest.mark.parametrize(
    "args, match",
    [
        (["--context-shares", "a=0.5,b=0.5"], "--context-shares needs --context COLUMN"),
        (["--context", "position", "--context-shares", "a=0.5,b=0.5"], "a column of the log"),
        (["--context", "device"], "--context needs --context-shares with two values"),
        (["--context", "device", "--context-shares", "a=1"], "with two values or more"),
        (["--context", "d", "--context-shares", "a=0.5,b=0.4"], "must sum to 1, got 0.9"),
        (["--context", "d", "--context-shares", "a=0.5,b=x"], "b='x' is not a number"),
        (["--context", "d", "--context-shares", "a:0.5"], "VALUE=NUMBER pairs"),
        (["--context", "d", "--context-shares", "a=0.5,a=0.5"], "names 'a' twice"),
        (["--context", "d", "--context-shares", "a=0.5,b=0.5", "--context-eta", "a=1"],
         "--context-eta must give each value of --context-shares its eta: a, b"),
        (["--context", "d", "--context-shares", "a=0.5,b=0.5", "--context-eta", "a=1,b=-1"],
         "--context-eta b"),
        (["--context", "d", "--context-shares", "a=0.5,b=0.5", "--context-eta", "a=1,b=1",
          "--click-model", "cascade"], "--context-eta applies to"),
        (["--context", "d", "--context-shares", "a=0.5,b=0.5", "--context-concentration", "0"],
         "--context-concentration must be a number > 0"),
    ],
)  # fmt: skip
def test_bad_context_options_of_simulate_are_one_line_and_write_nothing(tmp_path, args, match):
    from click.testing import CliRunner

    from clickrank.cli import cli

    res = CliRunner().invoke(cli, [*_SIM, *args, "-o", str(tmp_path / "log.parquet")])
    assert res.exit_code != 0 and match in res.output, res.output
    assert list(tmp_path.iterdir()) == []
