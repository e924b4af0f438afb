"""Correction per impression: IPS, DR, Unbiased LambdaMART, the counterfactual metrics and
ClickRanker take θ from each session's context."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from clickrank import InputError
from clickrank import targets as T
from clickrank.clickmodels import PBM, PowerLaw
from clickrank.clickmodels._relevance import evaluate_map
from clickrank.clickranker import ClickRanker
from clickrank.datasets import synthetic
from clickrank.evaluation import counterfactual
from clickrank.lambdamart import LambdaMART
from clickrank.lambdas import position_bias_update
from clickrank.policies import DeterministicPolicy
from clickrank.propensity import estimate_propensities
from clickrank.simulation import Context, Swap, simulate

K = 6
ETA = {"desktop": 0.5, "phone": 2.0}  # the sorted order of the values


def _curve(eta: float) -> np.ndarray:
    return 1.0 / np.arange(1, K + 1) ** eta


@pytest.fixture(scope="module")
def data():
    return synthetic(120, 12, seed=0)


@pytest.fixture(scope="module")
def log(data):
    models = {v: PBM(PowerLaw(e)) for v, e in ETA.items()}
    return simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        n_sessions=60_000,
        top_k=K,
        interventions=[Swap(0.3)],
        seed=5,
        context=Context("device", {"phone": 0.3, "desktop": 0.7}, models),
    )


def _true(pooled: np.ndarray | None = None) -> SimpleNamespace:
    """Propensities holding the true curve of each device (and a pooled one)."""
    table = np.array([_curve(ETA["desktop"]), _curve(ETA["phone"])])
    contexts = SimpleNamespace(columns=("device",), values=(("desktop",), ("phone",)), theta=table)
    return SimpleNamespace(theta=table.mean(axis=0) if pooled is None else pooled,
                           contexts=contexts)  # fmt: skip


def _alpha(log: pl.DataFrame) -> np.ndarray:
    """P(click | examined) of every impression (the PBM's attractiveness of its label)."""
    return evaluate_map(PBM(PowerLaw(1.0)).attractiveness, log["label"].to_numpy(), name="a")


def test_ips_per_impression_is_unbiased_and_one_curve_is_not(data, log):
    """Σ c/θ over the impressions estimates Σ α(d) (PBM), within 4 SEs of the truth with
    each device's θ; the desktop curve for every impression is many SEs off."""
    alpha = _alpha(log)
    phone = (log["device"] == "phone").to_numpy()
    theta = np.where(phone, _curve(2.0)[log["position"].to_numpy() - 1],
                     _curve(0.5)[log["position"].to_numpy() - 1])  # fmt: skip
    se = np.sqrt(np.sum(alpha / theta - alpha**2))  # Var(c/θ) = α/θ − α² per impression
    truth = alpha.sum()
    per_context = T.click_stats(data, log, _true()).ips.sum()
    one_curve = T.click_stats(data, log, _curve(0.5)).ips.sum()
    assert abs(per_context - truth) < 4 * se
    assert abs(one_curve - truth) > 20 * se


def test_click_stats_weigh_each_cell_by_its_context(data, log):
    stats = T.click_stats(data, log, _true())
    rows, pos, c, n = stats.cells
    assert stats.contexts is not None and stats.cell_context.shape == rows.shape
    table = _true().contexts.theta
    expect = np.bincount(rows, weights=c / table[stats.cell_context, pos - 1],
                         minlength=data.n_docs)  # fmt: skip
    np.testing.assert_allclose(stats.ips, expect, rtol=1e-12)
    np.testing.assert_array_equal(stats.clicks, T.click_stats(data, log, None).clicks)
    # clipping applies to each context's curve
    clipped = stats.clipped(0.1)
    assert clipped.contexts.table.min() == pytest.approx(0.1)
    assert clipped.ips.sum() < stats.ips.sum()


def test_equal_curves_give_the_pooled_statistics(data, log):
    same = _true(pooled=_curve(1.0))
    same.contexts.theta = np.array([_curve(1.0), _curve(1.0)])
    a = T.click_stats(data, log, same, clip="auto")
    b = T.click_stats(data, log, _curve(1.0), clip="auto")
    np.testing.assert_allclose(a.ips, b.ips, rtol=1e-12)
    np.testing.assert_allclose(a.exposure, b.exposure, rtol=1e-12)


def test_a_context_the_estimate_has_not_seen_takes_the_pooled_curve(data, log):
    known = _true(pooled=_curve(1.0))
    known.contexts.values = (("desktop",), ("tablet",))  # phone is unknown
    stats = T.click_stats(data, log, known)
    phone = stats.cell_context == 2
    assert phone.any()
    rows, pos, c, n = stats.cells
    np.testing.assert_allclose(stats.cell_theta()[phone], _curve(1.0)[pos[phone] - 1])


def test_the_context_columns_must_be_in_the_log(data, log):
    with pytest.raises(Exception, match="device"):
        T.click_stats(data, log.drop("device"), _true())


def test_ips_and_dr_targets_take_the_per_context_curves(data, log):
    for name in ("ips", "dr"):
        a = T.make_target(name, data, log, _true(), clip=None).gains
        b = T.make_target(name, data, log, _true().theta, clip=None).gains
        assert not np.allclose(a, b)


def test_unbiased_lambdamart_learns_biases_per_context(data, log):
    target = T.unbiased_lambdamart(data, log, context="device")
    assert target.metadata["contexts"] == [["desktop"], ["phone"]]
    assert target.sessions.n_positions == 2 * K and target.sessions.context_block == K
    model = LambdaMART(n_estimators=30, num_leaves=8, learning_rate=0.1, seed=0).fit(data, target)
    t_plus = model.position_bias_["t_plus"].reshape(2, K)
    np.testing.assert_array_equal(t_plus[:, 0], 1.0)  # each device relative to its own rank 1
    assert np.all(t_plus[1, 2:] < t_plus[0, 2:])  # phones examine the lower ranks less
    with pytest.raises(InputError, match="positions and context"):
        T.unbiased_lambdamart(data, log, context="device", positions=3)


def test_the_bias_update_normalises_each_block():
    li = np.array([2.0, 1.0, 0.5, 4.0, 1.0, 0.0])
    t_plus, _ = position_bias_update(li, li, bias_norm=0.0, block=3)
    np.testing.assert_allclose(t_plus, [1.0, 0.5, 0.25, 1.0, 0.25, 0.0])
    with pytest.raises(InputError, match="blocks"):
        position_bias_update(li, li, block=4)


def test_the_counterfactual_metric_weighs_each_click_by_its_context(data, log):
    scores = data.X[:, 1]
    got = counterfactual(log, data, scores, _true(), utility="dcg").estimate
    pooled = counterfactual(log, data, scores, _true().theta, utility="dcg").estimate
    clicked = log.filter(pl.col("click"))
    assert got != pytest.approx(pooled)
    # the same numbers as the contexts' own estimates weighted by their sessions
    parts = []
    for dev, eta in ETA.items():
        sub = log.filter(pl.col("device") == dev)
        n = sub["session"].n_unique()
        parts.append(n * counterfactual(sub, data, scores, _curve(eta), utility="dcg").estimate)
    assert got == pytest.approx(sum(parts) / log["session"].n_unique(), rel=1e-9)
    assert clicked.height > 0


def test_click_ranker_corrects_per_context(data, log):
    lines = []
    model = ClickRanker(context="device", seed=0, folds=2, grid=({"num_leaves": 4,
                        "max_depth": 2},)).fit(data, log, progress=lines.append)  # fmt: skip
    assert model.stats_.contexts is not None
    assert model.propensities_.contexts is not None
    assert model.targets_["unbiased-lambdamart"].metadata["context"] == ["device"]
    said = [m for m in lines if m.startswith("context device")]
    assert said and "2 context curves" in said[0] and "not enough" in said[0]


def test_click_ranker_refuses_a_context_the_log_lacks_before_any_work(data, log):
    with pytest.raises(InputError, match="'tablet' is not in the log"):
        ClickRanker(context="tablet").fit(data, log)


def test_a_pooled_estimate_with_a_context_says_one_curve(data, log):
    lines = []
    theta = estimate_propensities(log, "swap")
    ClickRanker(context="device", seed=0, folds=2, family=("naive", "ips-shown"),
                grid=({"num_leaves": 4, "max_depth": 2},)).fit(
        data, log, theta, progress=lines.append)  # fmt: skip
    assert any("one curve, used for every context" in m for m in lines)


def test_the_default_pools_propensities_given_per_context_unless_told(data, log):
    theta = estimate_propensities(log, "swap", context="device")
    small = {"seed": 0, "folds": 2, "family": ("naive", "ips-shown"),
             "grid": ({"num_leaves": 4, "max_depth": 2},)}  # fmt: skip
    plain = ClickRanker(**small).fit(data, log, estimate_propensities(log, "swap"))
    for context in (None, []):
        pooled = ClickRanker(context=context, **small).fit(data, log, theta)
        assert pooled.stats_.contexts is None and pooled.propensities_.contexts is None
        np.testing.assert_array_equal(pooled.predict(data), plain.predict(data))
    own = ClickRanker(context="device", **small).fit(data, log, theta)
    assert own.stats_.contexts is not None


def _train_cli(*args):
    from click.testing import CliRunner

    from clickrank.cli import cli

    return CliRunner().invoke(cli, ["train", *map(str, args)])


@pytest.fixture(scope="module")
def files(data, tmp_path_factory):
    """A LETOR file, a simulated log with a device column and its per-device propensities."""
    import clickrank as cr

    root = tmp_path_factory.mktemp("context-train")
    cr.save_letor(data, root / "train.txt")
    models = {v: PBM(PowerLaw(e)) for v, e in ETA.items()}
    simulate(data, policy=DeterministicPolicy(data.X[:, 0]), n_sessions=20_000, top_k=K,
             interventions=[Swap(0.3)], seed=5, out=root / "log.parquet",
             context=Context("device", {"phone": 0.3, "desktop": 0.7}, models))  # fmt: skip
    return root


def test_train_pools_unless_told_and_says_how_to_correct_per_context(files, tmp_path):
    small = ["--set", "family=[naive,ips-shown]", "--set", "folds=2"]
    res = _train_cli("--data", files / "train.txt", "--log", files / "log.parquet",
                     *small, "--out", tmp_path / "m1")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert ("context device: the log's examination differs by it; the default corrects "
            "with one curve (--set context=device corrects") in res.output  # fmt: skip
    assert "context curves" not in res.output
    own = _train_cli("--data", files / "train.txt", "--log", files / "log.parquet",
                     *small, "--set", "context=device", "--out", tmp_path / "m2")  # fmt: skip
    assert own.exit_code == 0, own.output
    assert "θ per impression from 2 context curves" in own.output
    assert "the default corrects with one curve" not in own.output
    # a propensity file with the curves per context (clickrank propensity --context)
    from clickrank.clicklog import read_log

    est = estimate_propensities(read_log(files / "log.parquet"), "swap", context="device")
    est.save(tmp_path / "theta.json")
    res = _train_cli("--data", files / "train.txt", "--log", files / "log.parquet",
                     "--propensities", tmp_path / "theta.json", *small,
                     "--set", "context=device", "--out", tmp_path / "m3")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "θ per impression from 2 context curves" in res.output
    bad = _train_cli("--data", files / "train.txt", "--log", files / "log.parquet",
                     *small, "--set", "context=tablet", "--out", tmp_path / "m4")  # fmt: skip
    assert bad.exit_code != 0 and "'tablet' is not in the log" in bad.output
    assert not (tmp_path / "m4" / "model.txt").exists()


@pytest.mark.parametrize("name", ["prs-pairs", "skip-above-ips"])
def test_pairwise_targets_weigh_each_preference_by_its_context(data, log, name):
    """A context's preferences get the weights its own curve gives: the target of the
    per-context estimate equals the sum of the per-device targets with their curves."""
    both = T.make_target(name, data, log, _true(), clip=None)
    parts = {}
    for i, dev in enumerate(("desktop", "phone")):
        sub = log.filter(pl.col("device") == dev)
        t = T.make_target(name, data, sub, _true().contexts.theta[i], clip=None)
        for (a, b), w in zip(map(tuple, t.pairs), t.pair_weights, strict=True):
            parts[(a, b)] = parts.get((a, b), 0.0) + w
    got = dict(zip(map(tuple, both.pairs), both.pair_weights, strict=True))
    assert got.keys() == parts.keys()
    np.testing.assert_allclose([got[k] for k in parts], list(parts.values()), rtol=1e-9)
    pooled = T.make_target(name, data, log, _true().theta, clip=None)
    assert not np.allclose(pooled.pair_weights.sum(), both.pair_weights.sum())
