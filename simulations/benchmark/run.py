"""Study (e): the course-notes benchmark table on synthetic data and on MQ2008.

Rankers trained on true labels: random scores, linear pointwise (least
squares), linear RankNet (a linear scorer fitted by L-BFGS on the RankNet loss
of :func:`clickrank.lambdas.ranknet_loss`, whose gradient is minus the
``weighting="none"`` forces of :func:`clickrank.lambdas.lambdas`), pointwise
boosted trees (LightGBM regression), clickrank's LambdaMART and LightGBM's
built-in lambdarank, all tree models with 100 trees of depth 3.

    python simulations/benchmark/run.py [--quick] [--out DIR] [--config FILE]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import polars as pl
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C  # noqa: E402

import clickrank as cr  # noqa: E402
from clickrank.lambdamart import LambdaMART  # noqa: E402
from clickrank.lambdas import lambdas, ranknet_loss  # noqa: E402

NAME = "benchmark"
ORDER = (
    "random",
    "linear pointwise",
    "linear RankNet",
    "boosted trees pointwise",
    "clickrank LambdaMART",
    "LightGBM lambdarank",
)


class Standardized:
    """A linear scorer ``((X - mu) / sd) @ w`` (the feature scaling is learned on train)."""

    def __init__(self, mu: np.ndarray, sd: np.ndarray, w: np.ndarray) -> None:
        self.mu, self.sd, self.w = mu, sd, w

    def predict(self, X: np.ndarray) -> np.ndarray:
        return ((np.asarray(X, float) - self.mu) / self.sd) @ self.w


def _scaling(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.asarray(X, float)
    mu, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 0, sd, 1.0)  # constant features (e.g. the synthetic x5 within a split)
    return (X - mu) / sd, mu, sd


def linear_pointwise(train: cr.RankingData) -> Standardized:
    """Least squares of the labels on the standardized features (with an intercept)."""
    Z, mu, sd = _scaling(train.X)
    A = np.column_stack([Z, np.ones(len(Z))])
    coef, *_ = np.linalg.lstsq(A, train.y, rcond=None)
    return Standardized(mu, sd, coef[:-1])


def linear_ranknet(
    train: cr.RankingData, *, sigma: float, l2: float, max_iter: int
) -> Standardized:
    """Linear RankNet (Burges et al. 2005): minimize Σ_q RankNet loss(Zw) + l2·|w|² by L-BFGS.

    The loss is :func:`clickrank.lambdas.ranknet_loss` with gains 2^y − 1
    (only their order matters); its gradient with respect to the scores is
    minus the RankNet forces of :func:`clickrank.lambdas.lambdas`
    (``weighting="none"``), so the gradient in ``w`` is ``-Zᵀλ``.
    """
    Z, mu, sd = _scaling(train.X)
    gains = np.exp2(train.y) - 1.0
    qptr = train.qptr
    n_pairs = max(1.0, float(ranknet_loss(np.zeros(len(Z)), gains, qptr).sum() / np.log(2)))

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = Z @ w
        loss = ranknet_loss(s, gains, qptr, sigma=sigma).sum() / n_pairs + l2 * w @ w
        lam = lambdas(
            s, gains, qptr, sigma=sigma, weighting="none", truncation=None, normalize=False
        )
        return float(loss), -(Z.T @ lam.forces) / n_pairs + 2 * l2 * w

    res = minimize(
        fun, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": max_iter}
    )
    return Standardized(mu, sd, res.x)


def fit_all(train: cr.RankingData, cfg: dict, seed: int) -> dict:
    """The six rankers of the table, fitted on ``train``'s true labels."""
    import lightgbm as lgb

    t = cfg["trees"]
    # LightGBM's plain API (its scikit-learn wrappers would need scikit-learn)
    common = dict(
        num_leaves=t["num_leaves"],
        max_depth=t["max_depth"],
        learning_rate=t["learning_rate"],
        seed=seed,
        deterministic=True,
        force_row_wise=True,
        num_threads=1,
        verbose=-1,
    )
    rounds = t["n_estimators"]
    boosted = lgb.train(
        {"objective": "regression", **common}, lgb.Dataset(train.X, train.y), num_boost_round=rounds
    )
    lgb_rank = lgb.train(
        {"objective": "lambdarank", **common},
        lgb.Dataset(train.X, train.y.astype(np.int64), group=train.lengths),
        num_boost_round=rounds,
    )
    rn = cfg["ranknet"]
    return {
        "random": None,  # scores drawn per test set below
        "linear pointwise": linear_pointwise(train),
        "linear RankNet": linear_ranknet(
            train, sigma=rn["sigma"], l2=rn["l2"], max_iter=rn["max_iter"]
        ),
        "boosted trees pointwise": boosted,
        "clickrank LambdaMART": LambdaMART(
            n_estimators=t["n_estimators"],
            num_leaves=t["num_leaves"],
            max_depth=t["max_depth"],
            learning_rate=t["learning_rate"],
            seed=seed,
        ).fit(train),
        "LightGBM lambdarank": lgb_rank,
    }


def score_gap(models: dict, test: cr.RankingData) -> float:
    """Largest |score difference| of clickrank's LambdaMART and LightGBM's lambdarank."""
    a = models["clickrank LambdaMART"].predict(test.X)
    b = models["LightGBM lambdarank"].predict(test.X)
    return float(np.max(np.abs(a - b)))


def evaluate_all(models: dict, test: cr.RankingData, metrics, nb: int, seed: int):
    rankers = dict(models)
    rankers["random"] = np.random.default_rng(seed).random(test.n_docs)
    return cr.evaluate(rankers, test, metrics, n_bootstrap=nb, seed=seed)


def shared_data_dir() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else C.ROOT.parent / "shared" / "data"


def main(argv: list[str] | None = None) -> dict:
    args = C.parse_args(NAME, __doc__, argv)
    cfg = C.load_config(args.config, args.quick)
    clock = C.Clock()
    d, nb = cfg["data"], cfg["n_bootstrap"]

    rows, first, gaps = [], None, {}
    for seed in cfg["seeds"]:
        data = cr.synthetic(d["n_queries"], d["docs_per_query"], seed=seed)
        train, test = cr.split_queries(data, [d["n_train"], d["n_test"]], seed=seed)
        models = fit_all(train, cfg, seed)
        gaps[f"synthetic seed {seed}"] = score_gap(models, test)
        res = evaluate_all(models, test, cfg["synthetic_metrics"], nb, seed)
        f = res.to_frame()
        rows.append(
            pl.DataFrame(
                {
                    "method": f["ranker"],
                    "metric": f["metric"],
                    "seed": seed,
                    "mean": f["mean"],
                    "ci_low": f["ci_low"],
                    "ci_high": f["ci_high"],
                }
            )
        )
        if first is None:
            first = res
    runs = pl.concat(rows)
    syn = C.over_seeds(runs, ["method", "metric"])
    m0 = cfg["synthetic_metrics"][0]
    paired = {
        (a, b): first.compare(a, b, m0)
        for a, b in (
            ("linear pointwise", "linear RankNet"),
            ("clickrank LambdaMART", "boosted trees pointwise"),
            ("LightGBM lambdarank", "clickrank LambdaMART"),
        )
    }

    mq = None
    fold = shared_data_dir() / cfg["mq2008"]
    if (fold / "train.txt").is_file() and (fold / "test.txt").is_file():
        mtrain = cr.load_letor(fold / "train.txt")
        mtest = cr.load_letor(fold / "test.txt")
        models = fit_all(mtrain, cfg, 0)
        gaps["MQ2008"] = score_gap(models, mtest)
        mq = evaluate_all(models, mtest, cfg["mq2008_metrics"], nb, 0)
        mq_sizes = (mtrain.n_queries, mtest.n_queries, mtrain.n_features)
    else:
        mq_sizes = None

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    seconds = clock.seconds()
    report = render(cfg, args, syn, first, paired, mq, mq_sizes, fold, gaps, seconds)
    results = {
        "config": cfg,
        "seconds": seconds,
        "synthetic": C.frame_records(syn),
        "synthetic_seed_first": C.frame_records(first.to_frame()),
        "paired": {f"{a} vs {b}": c.to_dict() for (a, b), c in paired.items()},
        "mq2008": C.frame_records(mq.to_frame()) if mq is not None else None,
        "mq2008_path": str(fold),
        "ordering": ordering(syn, m0),
        "lambdamart_vs_lightgbm_max_score_difference": gaps,
        "runs": C.frame_records(runs),
    }
    C.write_outputs(out, NAME, report, results)
    return results


def ordering(syn: pl.DataFrame, metric: str) -> dict:
    """The notes' ordering: random < both linear < boosted pointwise < LambdaMART."""
    v = {m: C.value(syn, m, metric=metric) for m in ORDER}
    return {
        "means": v,
        "random_below_linear": v["random"] < min(v["linear pointwise"], v["linear RankNet"]),
        "linear_below_boosted": max(v["linear pointwise"], v["linear RankNet"])
        < v["boosted trees pointwise"],
        "boosted_below_lambdamart": v["boosted trees pointwise"] < v["clickrank LambdaMART"],
    }


def gap_text(gaps: dict[str, float], v: dict[str, float]) -> str:
    """How closely clickrank's LambdaMART reproduces LightGBM's lambdarank, from the numbers."""
    close = [k for k, g in gaps.items() if g < 1e-3]
    far = {k: g for k, g in gaps.items() if g >= 1e-3}
    txt = (
        f"Their test scores agree within 1e-3 on {len(close)} of {len(gaps)} data sets "
        f"(largest |difference| {max((gaps[k] for k in close), default=float('nan')):.1g})"
    )
    if far:
        txt += (
            "; on "
            + ", ".join(f"{k} ({g:.2g})" for k, g in far.items())
            + " they differ more, presumably because a rounding difference in the "
            "gradients flipped a near-tied split and the trees diverged from there"
        )
    same = abs(v["clickrank LambdaMART"] - v["LightGBM lambdarank"]) < 5e-4
    return txt + (
        ". The metric means agree to three decimals."
        if same
        else ". The metric means differ; see the paired comparison above."
    )


def render(cfg, args, syn, first, paired, mq, mq_sizes, fold, gaps, seconds) -> str:
    metrics = cfg["synthetic_metrics"]
    m0 = metrics[0]
    notes = cfg["notes"]
    tab = pl.DataFrame(
        {"ranker": list(ORDER), "notes " + m0.upper(): [notes.get(m) for m in ORDER]}
    )
    for m in metrics:
        cells = []
        for r in ORDER:
            cells.append(C.ci_text(syn, r, metric=m))
        tab = tab.with_columns(pl.Series(f"{m.upper()} (mean over seeds [95% CI])", cells))
    order = ordering(syn, m0)
    v = order["means"]
    ok = all(
        order[k]
        for k in ("random_below_linear", "linear_below_boosted", "boosted_below_lambdamart")
    )
    d = cfg["data"]
    lines = [
        C.header(
            "Benchmark table of the course notes: synthetic data and MQ2008",
            NAME,
            args.quick,
            args.config,
            seconds,
        )
    ]
    lines += [
        f"Synthetic data: `clickrank.synthetic({d['n_queries']}, {d['docs_per_query']}, "
        f"seed=s)` split {d['n_train']}/{d['n_test']} queries by `split_queries(seed=s)` for "
        f"s in {cfg['seeds']}; trained on the true labels; the CI is a t interval over the "
        f"{len(cfg['seeds'])} data seeds (one seed: the test-query bootstrap). Tree models: "
        f"{cfg['trees']}. Linear models use standardized features; linear RankNet: "
        f"{cfg['ranknet']}.",
        "",
        "## Synthetic data",
        "",
        C.md_table(tab),
        "",
        f"Seed {cfg['seeds'][0]} alone, with the {first.n_bootstrap}-resample test-query "
        "bootstrap:",
        "",
        "```",
        first.summary(),
        "```",
        "",
        f"Paired comparisons on seed {cfg['seeds'][0]} ({m0.upper()}, same test queries):",
        "",
        "```",
        *[c.summary() for c in paired.values()],
        "```",
        "",
        "### Reading",
        "",
        f"* The notes' ordering random < linear < boosted pointwise < LambdaMART "
        f"{'is reproduced' if ok else 'is NOT fully reproduced'} on {m0.upper()}: "
        + " < ".join(f"{m} {v[m]:.3f}" for m in sorted(v, key=v.get))
        + ".",
        f"* Linear pointwise and linear RankNet: {v['linear pointwise']:.3f} vs "
        f"{v['linear RankNet']:.3f} (notes 0.647 vs 0.646). The true score has an "
        "interaction x2·x3 that no linear model can represent, which caps both.",
        f"* clickrank's LambdaMART {v['clickrank LambdaMART']:.3f} against LightGBM's "
        f"lambdarank {v['LightGBM lambdarank']:.3f} with the same trees: the same algorithm "
        "(clickrank's lambdas with LightGBM's normalization, LightGBM's tree growing). "
        + gap_text(gaps, v)
        + " The notes' own LambdaMART (0.814) was below LightGBM's "
        "(0.84); clickrank's matches LightGBM's.",
        f"* Differences to the notes' absolute values (e.g. random {v['random']:.3f} vs 0.19) "
        "may come from the data draw (the notes used one draw of the generator, the table "
        f"averages {len(cfg['seeds'])}) and from model settings the notes do not state beyond "
        "'100 trees, depth 3'.",
    ]
    lines += ["", "## MQ2008 (LETOR 4.0, Fold1)", ""]
    if mq is None:
        lines.append(f"Skipped: `{fold}` not found (set CLICKRANK_SHARED_DATA).")
    else:
        ntr, nte, nf = mq_sizes
        mf = mq.to_frame()
        mtab = pl.DataFrame({"ranker": list(ORDER)})
        for m in cfg["mq2008_metrics"]:
            cells = []
            for r in ORDER:
                row = mf.filter((pl.col("ranker") == r) & (pl.col("metric") == m)).row(
                    0, named=True
                )
                cells.append(f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
            mtab = mtab.with_columns(pl.Series(f"{m.upper()} [95% bootstrap CI]", cells))
        empty = int(mf["n_empty"][0])
        mv = {
            r: float(
                mf.filter((pl.col("ranker") == r) & (pl.col("metric") == cfg["mq2008_metrics"][0]))[
                    "mean"
                ][0]
            )
            for r in ORDER
        }
        lines += [
            f"Trained on `train.txt` ({ntr} queries, {nf} features), evaluated on `test.txt` "
            f"({nte} queries; {empty} have no relevant document and are skipped, the "
            '`empty="skip"` convention — LightGBM and XGBoost would score them 1, which '
            "raises every number). Same models and settings; one run (the tree models are "
            "deterministic), test-query bootstrap intervals.",
            "",
            C.md_table(mtab),
            "",
            f"Reading: on MQ2008 the order by {cfg['mq2008_metrics'][0].upper()} is "
            + " < ".join(f"{m} {mv[m]:.3f}" for m in sorted(mv, key=mv.get))
            + f". With {nte - empty} test queries that have a relevant document the bootstrap "
            f"intervals are about ±{float((mf['ci_high'] - mf['ci_low']).mean() / 2):.3f} "
            "wide, so only the gap between random and the learned "
            "rankers is clear-cut; the order among the learned rankers is not established by "
            "one fold.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
