"""Debiasing on real LETOR data: clickrank's defaults against naive clicks and the libraries' modes.

Run: ``python benchmarks/debiasing_real.py [--data DIR ...] [--synthetic 150 ...] [--seeds 5]
[--sessions 200000] [--methods a,b,...] [--json out.json]``

Protocol (issue 10), per data set and seed: the training file's queries are
the user's (labels are used only to simulate clicks and by the oracle row);
a production ranker (clickrank LambdaMART) trained on ``--fraction`` of them
(at least 20 queries) shows its top 10; clicks follow a PBM with
theta_p = (1/p)^eta and binarized relevance at the label range's default
threshold (label >= 1 on 0..2 data, >= 3 on 0..4), relevant clicked w.p. 1
and irrelevant w.p. 0.1 when examined; ``--swap`` of the sessions swap rank
1 with a random rank (Joachims et al. (2017)). Propensities are estimated from
those swaps. Test NDCG@10 on the data set's test file (graded labels, queries
without a relevant document skipped).

``--data DIR`` takes any LETOR folder with ``train.txt`` and ``test.txt``
(MQ2008 Fold1 from ``../shared/data`` by default); ``--synthetic N`` adds the
DESIGN §4 generator with N documents per query (1,300 queries, 300 train /
1,000 test). ``--logger plackett-luce`` samples the lists from a Plackett-Luce
policy over the production ranker's scores (``--temperature``) instead of
showing its deterministic top 10. Nothing depends on the data set: every clickrank row uses its
defaults, chosen without labels.

Rows (``--methods`` picks some):
  production        the logging ranker
  default           clickrank's default click learner: `clickrank train` with its defaults
                    (IPS gains, clip auto, candidates auto, LambdaMARTCV selection on ips-dcg@10)
  naive             click counts, fixed budget (--trees/--leaves/--max-depth)
  naive-cv          click counts with clickrank's selection (clicks-dcg validation)
  ips-fixed         IPS gains, shown candidates, fixed budget (the pre-issue-10 default)
  ips-noclip, ips-exposure, ips-query     IPS variants under selection (clip none;
                    per-exposure (policy-aware) normalisation; self-normalised per query)
  ips-shown, ips-all, ips-hybrid          candidate sets under selection
  dr                doubly robust gains (cross-fitted relevance model, all documents)
  dr-valid          the default learner selected on the DR estimate instead of IPS
  unbiased-lambdamart  Unbiased LambdaMART (Hu et al. (2019); position biases learned with the
                    trees) under selection; unbiased-lambdamart-fixed: fixed budget
  ips-pairs, prs-pairs  IPS rank pairs (Joachims et al. (2017)) and propensity-ratio pairs
                    (Wang et al. (2021)) under selection
  lightgbm-position LightGBM lambdarank with position factors, fixed budget
  xgboost-unbiased  XGBoost lambdarank_unbiased, fixed budget
  oracle            true labels, fixed budget; oracle-cv: true labels with NDCG cross-validation

The summary gives mean +- SE over seeds and, for ``default`` against each
other row, the paired mean difference with a 95% t interval and the number of
seeds it wins.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _baselines
import numpy as np
from scipy import stats as st

from clickrank import ClickRankError
from clickrank import targets as T
from clickrank.clickmodels import make_click_model, relevance_for_labels
from clickrank.datasets import RankingData, load_letor, split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.metrics import ndcg
from clickrank.policies import DeterministicPolicy, PlackettLuce
from clickrank.production import production_ranker
from clickrank.propensity import estimate_propensities
from clickrank.selection import ClickValidation, LambdaMARTCV
from clickrank.simulation import Swap, simulate


def _shared_data() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


class Setup:
    """One data set and seed: data, logger, log, estimated propensities."""

    def __init__(self, train: RankingData, test: RankingData, args: Any, seed: int) -> None:
        self.train, self.test, self.seed, self.args = train, test, seed, args
        self.prod = production_ranker(train, args.fraction, seed=seed)
        params, self.relevance_line = relevance_for_labels(
            "pbm", train.y, relevance="binarized", eps=0.1
        )
        cm = make_click_model("pbm", eta=args.eta, **params)
        policy = (DeterministicPolicy(self.prod) if args.logger == "production"
                  else PlackettLuce(self.prod, temperature=args.temperature))  # fmt: skip
        self.log = simulate(
            train, policy=policy, click_model=cm,
            n_sessions=args.sessions, interventions=[Swap(args.swap)], top_k=10, seed=seed,
        )  # fmt: skip
        self.theta = estimate_propensities(self.log, method="swap")
        self.stats = T.click_stats(train, self.log, self.theta, clip="auto")
        self.trees = {"n_estimators": args.trees, "learning_rate": 0.1,
                      "num_leaves": args.leaves, "max_depth": args.max_depth,
                      "min_data_in_leaf": 20}  # fmt: skip

    def score(self, pred: np.ndarray) -> float:
        return float(ndcg(pred, self.test.y, self.test.qptr, k=10))

    def validation(self, estimator: str = "ips") -> ClickValidation:
        return ClickValidation.from_log(self.train, self.log, self.theta, estimator=estimator,
                                        stats=self.stats, seed=self.seed)  # fmt: skip

    def cv(self, target: T.Target, estimator: str = "ips") -> np.ndarray:
        model = LambdaMARTCV(seed=self.seed).fit(
            self.train, target, validation=None if estimator is None else self.validation(estimator)
        )
        return model.predict(self.test)

    def fixed(self, target: T.Target) -> np.ndarray:
        return LambdaMART(**self.trees, seed=self.seed).fit(self.train, target).predict(self.test)

    def target(self, name: str, **kw: Any) -> T.Target:
        stats = self.stats if name in ("ips", "dr") else None
        return T.make_target(name, self.train, self.log, self.theta, seed=self.seed,
                             stats=stats, **kw)  # fmt: skip


METHODS: dict[str, Callable[[Setup], np.ndarray]] = {
    "production": lambda s: s.prod.predict(s.test.X),
    "default": lambda s: s.cv(s.target("ips")),
    "naive": lambda s: s.fixed(s.target("naive", candidates="shown")),
    "naive-cv": lambda s: s.cv(s.target("naive"), "clicks"),
    "ips-fixed": lambda s: s.fixed(s.target("ips", candidates="shown", clip=None)),
    "ips-noclip": lambda s: s.cv(T.ips(s.train, s.log, s.theta, clip=None)),
    "ips-exposure": lambda s: s.cv(s.target("ips", normalize="exposure")),
    "ips-query": lambda s: s.cv(s.target("ips", normalize="query")),
    "ips-shown": lambda s: s.cv(s.target("ips", candidates="shown")),
    "ips-all": lambda s: s.cv(s.target("ips", candidates="all")),
    "ips-hybrid": lambda s: s.cv(s.target("ips", candidates="hybrid")),
    "dr": lambda s: s.cv(s.target("dr")),
    "unbiased-lambdamart": lambda s: s.cv(s.target("unbiased-lambdamart")),
    "unbiased-lambdamart-fixed": lambda s: s.fixed(s.target("unbiased-lambdamart")),
    "ips-pairs": lambda s: s.cv(s.target("ips-pairs")),
    "prs-pairs": lambda s: s.cv(s.target("prs-pairs")),
    "dr-valid": lambda s: s.cv(s.target("ips"), "dr"),
    "lightgbm-position": lambda s: _baselines.lightgbm_position(
        s.train, s.log, s.trees, seed=s.seed)(s.test.X),
    "xgboost-unbiased": lambda s: _baselines.xgboost_unbiased(
        s.train, s.log, s.trees, seed=s.seed)(s.test.X),
    "oracle": lambda s: s.fixed(T.oracle(s.train)),
    "oracle-cv": lambda s: s.cv(T.oracle(s.train), None),
}  # fmt: skip


def datasets(args: Any):
    """(name, loader(seed) -> (train, test)) of every data set asked for."""
    out = []
    for folder in args.data or [str(_shared_data() / "letor4_mq2008" / "Fold1")]:
        path = Path(folder)
        if not (path / "train.txt").is_file():
            print(f"skipping {path}: no train.txt (set CLICKRANK_SHARED_DATA or pass --data)")
            continue
        train, test = load_letor(path / "train.txt"), load_letor(path / "test.txt")
        fold = path.name.lower().startswith("fold")
        name = f"{path.parent.name}/{path.name}" if fold else path.name
        out.append((name, lambda seed, tr=train, te=test: (tr, te)))
    for n in args.synthetic:
        out.append((f"synthetic-{n}",
                    lambda seed, n=n: split_queries(synthetic(1300, n, seed=seed), [300, 1000],
                                                    seed=seed)))  # fmt: skip
    return out


def summarize(name: str, results: list[dict[str, float]], methods: list[str]) -> str:
    lines = [f"\n## {name}: test NDCG@10 over {len(results)} seed(s)", "",
             "| method | mean | ± SE | default − method [95% CI] | default wins |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    ref = np.array([r["default"] for r in results]) if "default" in methods else None
    for m in methods:
        v = np.array([r[m] for r in results])
        if np.isnan(v).any():
            lines.append(f"| {m} | failed in {int(np.isnan(v).sum())} seed(s) | | | |")
            continue
        se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
        cell = ""
        wins = ""
        if ref is not None and m != "default":
            d = ref - v
            if len(d) > 1:
                half = st.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
                cell = f"{d.mean():+.4f} [{d.mean() - half:+.4f}, {d.mean() + half:+.4f}]"
            else:
                cell = f"{d.mean():+.4f}"
            wins = f"{int((d > 0).sum())}/{len(d)}"
        lines.append(f"| {m} | {v.mean():.4f} | {se:.4f} | {cell} | {wins} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", action="append", help="LETOR folder with train.txt and test.txt")
    ap.add_argument(
        "--synthetic",
        type=int,
        action="append",
        default=[],
        help="synthetic data with this many documents per query",
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sessions", type=int, default=200_000)
    ap.add_argument(
        "--fraction",
        type=float,
        default=0.05,
        help="share of training queries the logger learns from (at least 20)",
    )
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument(
        "--logger",
        choices=["production", "plackett-luce"],
        default="production",
        help="deterministic top 10 of the production ranker, or Plackett-Luce "
        "sampling over its scores",
    )
    ap.add_argument("--temperature", type=float, default=1.0, help="Plackett-Luce temperature")
    ap.add_argument("--swap", type=float, default=0.1)
    ap.add_argument("--trees", type=int, default=100, help="fixed budget: trees")
    ap.add_argument("--leaves", type=int, default=8, help="fixed budget: leaves")
    ap.add_argument("--max-depth", type=int, default=3, help="fixed budget: depth (-1: none)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--json", help="write every per-seed score here")
    args = ap.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    report, dump = [], {}
    for name, load in datasets(args):
        results = []
        for seed in range(args.seeds):
            train, test = load(seed)
            t0 = time.perf_counter()
            s = Setup(train, test, args, seed)
            row, took = {}, {}
            for m in methods:
                t = time.perf_counter()
                try:
                    row[m] = s.score(METHODS[m](s))
                except ClickRankError as err:  # e.g. plain IPS with a zero propensity estimate
                    print(f"  {m} failed: {err}")
                    row[m] = float("nan")
                took[m] = time.perf_counter() - t
            results.append(row)
            print(f"{name} seed {seed} ({time.perf_counter() - t0:.0f} s; "
                  f"{s.stats.shown_fraction:.1%} of the documents shown): "
                  + ", ".join(f"{m} {v:.4f} ({took[m]:.0f}s)" for m, v in row.items()),
                  flush=True)  # fmt: skip
        dump[name] = results
        report.append(summarize(name, results, methods))
    print("\n".join(report))
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    main()
