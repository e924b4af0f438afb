"""Debiasing on real LETOR data: clickrank's defaults against naive clicks and the libraries' modes.

Run: ``python benchmarks/debiasing_real.py [--data DIR ...] [--synthetic 150 ...] [--seeds 5]
[--sessions 200000] [--methods a,b,...] [--json out.json]``, or the robustness suite
``python benchmarks/debiasing_real.py --suite [--seeds 5] [--json suite.json]``.

``--suite`` (issue 18): MQ2008 all five folds (rebuilt from S1-S5 of the shared
Fold1 files as PROVENANCE.md says, into a cache folder, never committed), at
2e3, 2e4 and 2e5 sessions, with the deterministic and the Plackett-Luce
logger, plus synthetic-150, ``--seeds`` seeds each. Every cell reports
default - naive-cv, default - production and default - the best other row
with 95% paired t intervals over seeds, the worst cell and the win rates. The
JSON is rewritten after every seed, so a stopped run keeps what it finished,
and a rerun with the same ``--json`` skips the seeds already there. ``--cut 14`` cuts
every MQ2008 query to its first 14 documents (82 % shown: a stand-in for short-list
LETOR sets). ``--suite --data DIR`` runs the same grid (log sizes x loggers x seeds) on
other LETOR folders instead, e.g. with ``--folds 5``.

Protocol (issue 10), per data set and seed: the training file's queries are
the user's (labels are used only to simulate clicks and by the oracle row);
a production ranker (clickrank LambdaMART) trained on ``--fraction`` of them
(at least 20 queries) shows its top 10; clicks follow a PBM with
theta_p = (1/p)^eta and binarized relevance at the label range's default
threshold (label >= 1 on 0..2 data, >= 3 on 0..4), relevant clicked w.p. 1
and irrelevant w.p. 0.1 when examined; ``--swap`` of the sessions swap rank
1 with a random rank (Joachims et al. (2017)). Propensities are estimated from
those swaps; with ``--swap 0`` the log has no interventions and they come from what
it holds (``method="auto"``: EM where documents appear at several positions, else
regression EM on the features; runs named "no-interventions"), and every run's JSON
row keeps the θ used (``_theta``, ``_source``) beside the true one (``_theta_true``).
``--click-model`` (trust, ubm, cascade, dcm, dbn, sdbn) draws the clicks from another
model with the same binarized relevance; the learners still assume a PBM;
``--relevance graded`` maps the labels as ULTRA does (0.1 at label 0 up to 1 at the top
label) and ``--eta`` sets the examination curve. Runs with users other than the suite's
are named after them. Test NDCG@10 on the data set's test file (graded labels,
queries without a relevant document skipped). ``--bias`` prints each log's position bias
(swap propensities, the relevant documents' click-through rate by rank) instead.

``--data DIR`` takes any LETOR folder with ``train.txt`` and ``test.txt``
(MQ2008 Fold1 from ``../shared/data`` by default; LightGBM ``.query`` group files
next to them are read); ``--folds K`` pools the folder's train and test queries
and deals them into K folds (one shuffle, seed 0), each tested once; ``--synthetic N``
adds the DESIGN §4 generator with N documents per query (1,300 queries, 300 train /
1,000 test; ``--train-queries`` sets the first, ``--features`` the features; ``--data
/nonexistent`` leaves MQ2008 out). ``--logger plackett-luce`` samples the lists from a
Plackett-Luce policy over the production ranker's scores (``--temperature``) instead of
showing its deterministic top 10; ``--logger history`` serves each session from one of
``--history`` production rankers trained on different queries (a team's releases: the
first is the production row and the ranker the default must beat). ``--suite-loggers``
picks the suite's loggers. Nothing depends on the data set: every clickrank row uses its
defaults, chosen without labels.

Rows (``--methods`` picks some):
  production        the logging ranker
  default-nosafe    what the default offers without the safety check: the average of the
                    members (`clickrank train --set safe=false`)
  select-nosafe     the member with the best counterfactual score (what `combine="select"`,
                    the rule before the average, selects), without the safety check
  default           clickrank's default click learner, clickrank.ClickRanker (what `clickrank
                    train` does): its family of targets cross-validated on held-out clicks, a
                    one-SE choice and the safety check, with the production ranker as the
                    logging ranker it must beat
  default-notheta   the default without propensities (naive clicks and Unbiased LambdaMART,
                    scored on raw clicks): what it does when nothing identifies θ
  default-truetheta the default given the true θ of the simulation (PBM click models): what
                    a perfect propensity estimate would be worth
  default-refit, default-bagged  the default with every member refitted on all queries
                    (refit=True, what it does below 2e5 documents) or its fold models averaged
                    (refit=False, from there)
  default-prpo      the default with fallback="proximal" (PRPO, the fallback until the CRM
                    one); default-safe: with fallback="safe" (the logger kept). Both are the
                    default itself where its check passes; only runs that fall back refit
  naive-member, ips-shown-member, ips-hybrid-member, ips-all-member, dr-member,
  unbiased-lambdamart-member  each member of the default's family, refitted (what the default
                    would offer had it chosen that member)
  old-default       the default before issue 18: IPS gains, candidates auto, tree size by
                    LambdaMARTCV on ips-dcg@10
  naive             click counts, fixed budget (--trees/--leaves/--max-depth)
  naive-cv          click counts with clickrank's selection (clicks-dcg validation)
  ips-fixed         IPS gains, shown candidates, fixed budget (the pre-issue-10 default)
  ips-noclip, ips-exposure, ips-query     IPS variants under selection (clip none;
                    per-exposure (policy-aware) normalisation; self-normalised per query)
  ips-shown, ips-all, ips-hybrid          candidate sets under selection
  dr                doubly robust gains (cross-fitted relevance model, all documents)
  dr-valid          the default learner selected on the DR estimate instead of IPS
  cascade-ips-ubm   IPS with the examination of a UBM fitted to the log, given the last click
                    above (targets.cascade_ips, Vardasbi et al. (2020a)) under selection
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
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import _baselines
import numpy as np
import polars as pl
from scipy import stats as st

from clickrank import ClickRankError
from clickrank import targets as T
from clickrank.clickmodels import fit_click_model, make_click_model, power_law, relevance_for_labels
from clickrank.clickranker import DEFAULT_FAMILY, ClickRanker
from clickrank.datasets import RankingData, load_letor, split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.metrics import ndcg
from clickrank.policies import DeterministicPolicy, MixturePolicy, PlackettLuce
from clickrank.policies.production import production_ranker
from clickrank.propensity import estimate_propensities
from clickrank.selection import ClickValidation, LambdaMARTCV
from clickrank.simulation import Context, Swap, simulate


def _shared_data() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


#: Loggers of ``--logger``: a deterministic production ranker, Plackett-Luce over its scores,
#: a history of production rankers (``--history``, one per session).
LOGGERS = ("production", "plackett-luce", "history")

#: The devices of ``--context`` (their curves' η: ``--context-etas``).
DEVICES = ("phone", "desktop")

#: Click models of ``--click-model`` (the relevance maps from the labels' range, binarized);
#: ``--eta`` sets the examination curve of the position-based ones.
CLICK_MODELS = ("pbm", "trust", "ubm", "cascade", "dcm", "dbn", "sdbn")
_ETA_MODELS = ("pbm", "trust", "ubm")


class Setup:
    """One data set and seed: data, logger, log, estimated propensities."""

    def __init__(self, train: RankingData, test: RankingData, args: Any, seed: int) -> None:
        self.train, self.test, self.seed, self.args = train, test, seed, args
        self.prod = production_ranker(train, args.fraction, seed=seed)
        model = args.click_model
        params, self.relevance_line = relevance_for_labels(
            model, train.y, relevance=args.relevance, eps=0.1
        )
        # the relevant documents of --bias: clicked whenever examined (graded: the top label);
        # the trust-bias model names its map "relevance", the others "attractiveness"
        relevance = params.get("attractiveness") or params["relevance"]
        self.threshold = relevance.get("threshold", relevance.get("max_label"))
        if model in _ETA_MODELS:
            params["eta"] = args.eta
        cm = make_click_model(model, **params)
        self.true_theta = (power_law(10, args.eta) if model in ("pbm", "trust")
                           else None)  # fmt: skip
        context = None
        self.segments = getattr(args, "context_segments", 0)
        if self.segments:  # many segments, each with a feature x setting its curve's η
            self.x = np.random.default_rng(0).uniform(-1, 1, self.segments)
            names = [f"s{i:04d}" for i in range(self.segments)]
            context = Context("segment", dict.fromkeys(names, 1.0),
                              {v: make_click_model(model, **{**params, "eta": e})
                               for v, e in zip(names, self.segment_eta(self.x), strict=True)},
                              query_concentration=args.context_concentration)  # fmt: skip
            self.true_theta = None
        elif getattr(args, "context", False):  # phones and desktops, each with its own curve
            etas = dict(zip(DEVICES, args.context_etas, strict=True))
            shares = {"phone": args.context_share, "desktop": 1 - args.context_share}
            context = Context("device", shares, {v: make_click_model(model, **{**params, "eta": e})
                                                 for v, e in etas.items()},
                              query_concentration=args.context_concentration)  # fmt: skip
            self.true_theta = None  # one curve per device: no single true θ
        self.log = simulate(
            train, policy=self.policy(args, seed), click_model=cm, n_sessions=args.sessions,
            interventions=[Swap(args.swap)] if args.swap > 0 else [], top_k=10, seed=seed,
            context=context,
        )  # fmt: skip
        if self.segments:
            x = dict(zip(context.values, self.x.tolist(), strict=True))
            self.log = self.log.with_columns(
                x=pl.col("segment").cast(pl.String).replace_strict(x, return_dtype=pl.Float64)
            )
        # swaps: the swap estimate, as before; a log without them: what the default does
        self.theta = self.estimate(None)
        self.theta_context = self.estimate("device") if context is not None else None
        self.stats = T.click_stats(train, self.log, self.theta, clip="auto")
        self.trees = {"n_estimators": args.trees, "learning_rate": 0.1,
                      "num_leaves": args.leaves, "max_depth": args.max_depth,
                      "min_data_in_leaf": 20}  # fmt: skip

    def segment_eta(self, x: np.ndarray) -> np.ndarray:
        """--context-segments: η of a segment's curve, linear in its x from the first of
        --context-etas (x = -1) to the second (x = 1)."""
        lo, hi = self.args.context_etas
        return lo + (hi - lo) * (x + 1) / 2

    def estimate(self, context: str | None) -> Any:
        """The propensities the rows use: the swap estimate, or what the log holds
        (``auto``) without swaps; per device with ``context`` (with --context-segments,
        the model of θ in the segments' feature x that ``auto`` fits: EM's, or regression
        EM's level with the slopes within documents)."""
        if context is not None and self.segments:
            return estimate_propensities(self.log, method="auto", context_features="x",
                                         data=self.train, n_boot=0, seed=self.seed,
                                         sensitivity=0)  # fmt: skip
        if self.args.swap > 0:
            return estimate_propensities(self.log, method="swap", context=context)
        return estimate_propensities(self.log, method="auto", data=self.train, n_boot=0,
                                     seed=self.seed, context=context)  # fmt: skip

    def policy(self, args: Any, seed: int) -> Any:
        """The logger: the production ranker's top 10, Plackett-Luce over its scores, or a
        history of ``--history`` production rankers trained on different queries, one
        chosen per session (the first is the production row and the ranker to beat)."""
        if args.logger == "production":
            return DeterministicPolicy(self.prod)
        if args.logger == "plackett-luce":
            return PlackettLuce(self.prod, temperature=args.temperature)
        older = [production_ranker(self.train, args.fraction, seed=seed + 1000 * j)
                 for j in range(1, args.history)]  # fmt: skip
        return MixturePolicy([DeterministicPolicy(r, name=f"ranker{j}")
                              for j, r in enumerate([self.prod, *older])])  # fmt: skip

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

    def click_ranker(self) -> ClickRanker:
        """The default learner, fitted once per setup (its members are rows too); with
        ``--context`` it corrects per device."""
        if getattr(self, "_ranker", None) is None:
            context = None if self.theta_context is None else "device"
            theta = self.theta if context is None else self.theta_context
            where = {"context_features": "x"} if self.segments else {"context": context}
            self._ranker = ClickRanker(seed=self.seed, **where).fit(
                self.train, self.log, theta, logging_model=self.prod
            )
        return self._ranker

    def with_fallback(self, fallback: str) -> np.ndarray:
        """Test scores of the default learner with another ``fallback``: the default's own
        when it did not fall back (the fallback is never reached then)."""
        r = self.click_ranker()
        if r.choice_ != "logging" and "+" not in r.choice_:
            return r.predict(self.test)
        if fallback == "safe":
            return self.prod.predict(self.test.X)
        return (
            ClickRanker(seed=self.seed, fallback=fallback)
            .fit(self.train, self.log, self.theta, logging_model=self.prod)
            .predict(self.test)
        )

    def member(self, name: str) -> np.ndarray:
        return self.click_ranker().candidate(name).predict(self.test)

    def pooled_ranker(self, truth: bool = False) -> ClickRanker:
        """--context: the default with one curve (``truth``: with each device's true curve,
        corrected per device), fitted once."""
        key = "_truth_ranker" if truth else "_pooled_ranker"
        if getattr(self, key, None) is None:
            theta = self.theta
            where: dict[str, Any] = {"context": None}
            if truth:
                ctx = self.theta_context.contexts
                if self.segments:
                    etas = self.segment_eta(np.array([float(v[0]) for v in ctx.values]))
                else:
                    etas = [self.args.context_etas[DEVICES.index(v[0])] for v in ctx.values]
                curves = np.array([power_law(ctx.theta.shape[1], e) for e in etas])
                theta = replace(self.theta_context, contexts=replace(ctx, theta=curves))
                where = {"context_features": "x"} if self.segments else {"context": "device"}
            setattr(self, key, ClickRanker(seed=self.seed, **where).fit(
                self.train, self.log, theta, logging_model=self.prod))  # fmt: skip
        return getattr(self, key)

    def target(self, name: str, **kw: Any) -> T.Target:
        stats = self.stats if name in ("ips", "dr") else None
        return T.make_target(name, self.train, self.log, self.theta, seed=self.seed,
                             stats=stats, **kw)  # fmt: skip


METHODS: dict[str, Callable[[Setup], np.ndarray]] = {
    "production": lambda s: s.prod.predict(s.test.X),
    "default": lambda s: s.click_ranker().predict(s.test),
    "default-nosafe": lambda s: s.member(s.click_ranker().selected_),
    "default-prpo": lambda s: s.with_fallback("proximal"),
    "default-pooled": lambda s: s.pooled_ranker().predict(s.test),
    "default-truecontext": lambda s: s.pooled_ranker(truth=True).predict(s.test),
    "default-notheta": lambda s: ClickRanker(seed=s.seed, propensity_method=None).fit(
        s.train, s.log, logging_model=s.prod).predict(s.test),
    "default-safe": lambda s: s.with_fallback("safe"),
    "default-truetheta": lambda s: ClickRanker(seed=s.seed).fit(
        s.train, s.log, s.true_theta, logging_model=s.prod).predict(s.test),
    **{f"default-{name}": (lambda s, refit=refit: ClickRanker(seed=s.seed, refit=refit).fit(
        s.train, s.log, s.theta, logging_model=s.prod).predict(s.test))
       for name, refit in (("refit", True), ("bagged", False))},
    "select-nosafe": lambda s: s.member(s.click_ranker().best_member_),
    **{f"{m}-member": (lambda s, m=m: s.member(m)) for m in DEFAULT_FAMILY},
    **{f"{m}-pooled-member": (lambda s, m=m: s.pooled_ranker().candidate(m).predict(s.test))
       for m in DEFAULT_FAMILY},  # fmt: skip
    "old-default": lambda s: s.cv(s.target("ips")),
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
    "cascade-ips-ubm": lambda s: s.cv(T.cascade_ips(s.train, s.log, fit_click_model(s.log, "ubm"))),
    "lightgbm-position": lambda s: _baselines.lightgbm_position(
        s.train, s.log, s.trees, seed=s.seed,
        context=None if s.theta_context is None or s.segments else "device")(s.test.X),
    "xgboost-unbiased": lambda s: _baselines.xgboost_unbiased(
        s.train, s.log, s.trees, seed=s.seed)(s.test.X),
    "oracle": lambda s: s.fixed(T.oracle(s.train)),
    "oracle-cv": lambda s: s.cv(T.oracle(s.train), None),
}  # fmt: skip


def pooled_folds(train: RankingData, test: RankingData, k: int) -> list[tuple]:
    """``k`` (train, test) folds of the queries of ``train`` and ``test`` pooled (``--folds``).

    The queries are shuffled once (seed 0, whatever the run's seed: a fold's runs
    are paired over seeds) and dealt round-robin into ``k`` folds of nearly equal
    size; fold ``j`` tests on its queries and trains on the others'. (Not
    ``selection.query_folds``, which deals its shuffle differently: the folds of the
    documented runs are these.)
    """
    d = max(train.n_features, test.n_features)
    X = np.zeros((train.n_docs + test.n_docs, d), dtype=np.float32)
    X[: train.n_docs, : train.n_features], X[train.n_docs :, : test.n_features] = train.X, test.X
    both = RankingData(X, np.concatenate([train.y, test.y]),
                       np.concatenate([train.qptr, test.qptr[1:] + train.n_docs]),
                       np.arange(train.n_queries + test.n_queries),
                       np.concatenate([train.doc, test.doc]), name=train.name)  # fmt: skip
    fold = np.empty(both.n_queries, dtype=np.int64)
    fold[np.random.default_rng(0).permutation(both.n_queries)] = np.arange(both.n_queries) % k
    return [(both.subset(np.flatnonzero(fold != j)), both.subset(np.flatnonzero(fold == j)))
            for j in range(k)]  # fmt: skip


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
        if args.folds:
            for j, (tr, te) in enumerate(pooled_folds(train, test, args.folds)):
                out.append((f"{name}/Fold{j + 1}", lambda seed, tr=tr, te=te: (tr, te)))
            continue
        out.append((name, lambda seed, tr=train, te=test: (tr, te)))
    f, q = args.features, args.train_queries
    for n in args.synthetic:
        out.append((f"synthetic-{n}" + (f" ({f} features)" if f != 6 else "")
                    + (f" ({q} training queries)" if q != 300 else ""),
                    lambda seed, n=n, q=q: split_queries(synthetic(q + 1000, n, f, seed=seed),
                                                    [q, 1000], seed=seed)))  # fmt: skip
    return out


def position_bias(name: str, load, seed: int, args: Any) -> str:
    """The log's position bias (``--bias``): the swap propensities the learners use, and
    the click-through rate by position, in the sessions without an intervention, of the
    documents clicked whenever examined (:attr:`Setup.threshold`)."""
    s = Setup(*load(seed), args, seed)
    plain = s.log.filter(pl.col("intervention") == "none")
    relevant = plain.filter(pl.col("label") >= s.threshold)
    ctr = relevant.group_by("position").agg(pl.col("click").mean()).sort("position")
    per_session = plain["click"].sum() / max(plain["session"].n_unique(), 1)

    def row(v) -> str:
        return " ".join(f"{x:5.3f}" for x in v)

    return (f"{name} seed {seed}: {per_session:.2f} clicks a session\n"
            f"  swap propensities            {row(np.asarray(s.theta.theta))}\n"
            f"  CTR of relevant docs by rank {row(ctr['click'].to_numpy())}")  # fmt: skip


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


#: Line ranges of S1-S3 inside the shared Fold1/train.txt (PROVENANCE.md); S4 = vali, S5 = test.
_S_LINES = ((0, 2933), (2933, 6568), (6568, 9630))


def mq2008_folds(cache: Path) -> list[Path]:
    """MQ2008 Folds 1-5 rebuilt from S1-S5 (Fold k: train S_k..S_k+2, test S_k+4, mod 5).

    Written once into ``cache`` (about 45 MB, outside the repository); the
    shared Fold1 files are only read.
    """
    src = _shared_data() / "letor4_mq2008" / "Fold1"
    folds = [cache / f"Fold{k}" for k in range(1, 6)]
    if all((f / "test.txt").is_file() for f in folds):
        return folds
    lines = (src / "train.txt").read_text().splitlines(keepends=True)
    if len(lines) != _S_LINES[-1][1]:
        raise SystemExit(f"{src / 'train.txt'}: expected {_S_LINES[-1][1]} lines, got {len(lines)}")
    parts = [lines[a:b] for a, b in _S_LINES]
    parts += [(src / n).read_text().splitlines(keepends=True) for n in ("vali.txt", "test.txt")]
    for k, folder in enumerate(folds):
        folder.mkdir(parents=True, exist_ok=True)
        train = [line for i in range(3) for line in parts[(k + i) % 5]]
        for name, rows in (("train.txt", train), ("test.txt", parts[(k + 4) % 5])):
            tmp = folder / f".{name}.tmp"
            tmp.write_text("".join(rows))
            tmp.replace(folder / name)
    return folds


def run_seed(name: str, load, seed: int, args: Any, methods: list[str]) -> dict[str, float]:
    """Every row of one data set and seed (a failing row is NaN and says why)."""
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
    row["_theta"] = np.asarray(s.theta, dtype=float).tolist()  # what every IPS row used
    row["_source"] = s.theta.info.get("source", {}).get("method", s.theta.method)
    if s.true_theta is not None:
        row["_theta_true"] = np.asarray(s.true_theta, dtype=float).tolist()
    if "default" in methods:
        r = s.click_ranker()
        row["_choice"] = r.choice_
        row["_reason"] = r.reason_
        row["_table"] = r.table_.to_dicts()
    print(f"{name} seed {seed} ({time.perf_counter() - t0:.0f} s; "
          f"{s.stats.shown_fraction:.1%} of the documents shown): "
          + ", ".join(f"{m} {row[m]:.4f} ({took[m]:.1f}s)" for m in methods)
          + (f"; default chose {row['_choice']}" if "_choice" in row else ""),
          flush=True)  # fmt: skip
    return row


#: The rows of the suite: the default, every member, the baselines and the libraries' modes.
SUITE_METHODS = ["production", "default", "default-nosafe", "select-nosafe",
                 *(f"{m}-member" for m in DEFAULT_FAMILY),
                 "naive-cv", "old-default", "lightgbm-position", "xgboost-unbiased",
                 "oracle"]  # fmt: skip
#: Rows that are references, not click learners a user could pick instead of the default.
_REFERENCES = ("default", "default-nosafe", "default-prpo", "default-safe", "select-nosafe",
               "default-notheta", "default-truetheta", "default-truecontext",
               "production", "oracle",
               "oracle-cv")  # fmt: skip


def cut_lists(data: RankingData, n: int) -> RankingData:
    """Each query's first ``n`` documents in file order: a short-list stand-in (on MQ2008,
    14 documents: 82 % shown by a top-10 logger, like the held-out LETOR sample of issue 18)."""
    from clickrank._core._segments import within_index

    keep = within_index(data.qptr) < n
    qptr = np.concatenate([[0], np.cumsum(np.minimum(np.diff(data.qptr), n))])
    return RankingData(data.X[keep], None if data.y is None else data.y[keep], qptr, data.qid,
                       data.doc[keep], name=f"{data.name}-cut{n}")  # fmt: skip


def suite_cells(args: Any) -> list[tuple[str, Any, int, str]]:
    """(data set, loader, sessions, logger) of every cell of the suite: MQ2008's five folds
    and synthetic-150, or the ``--data`` data sets when given."""
    loads = datasets(args) if args.data else []
    for folder in [] if args.data else mq2008_folds(Path(args.cache)):
        tr, te = load_letor(folder / "train.txt"), load_letor(folder / "test.txt")
        name = "MQ2008"
        if args.cut:
            tr, te, name = cut_lists(tr, args.cut), cut_lists(te, args.cut), f"MQ2008-cut{args.cut}"
        loads.append((f"{name}/{folder.name}", lambda seed, tr=tr, te=te: (tr, te)))
    if not args.data:
        loads.append(("synthetic-150", lambda seed: split_queries(
            synthetic(1300, 150, seed=seed), [300, 1000], seed=seed)))  # fmt: skip
    return [(name, load, n, logger) for name, load in loads for n in args.suite_sessions
            for logger in args.suite_loggers]  # fmt: skip


def _paired(d: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% t interval of paired differences."""
    if d.size < 2:
        return float(d.mean()), float("nan"), float("nan")
    half = st.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)


def pooled(dump: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The cells of a data set's folds pooled by log size and logger (fold x seed runs)."""
    groups: dict[str, list[tuple[str, list[dict]]]] = {}
    for cell, rows in dump.items():
        groups.setdefault(re.sub(r"/Fold\d+", "/Fold*", cell), []).append((cell, rows))
    out: dict[str, list[dict]] = {}
    for key, cells in groups.items():
        name = key.replace("/Fold*", f" ({len(cells)} folds)") if len(cells) > 1 else cells[0][0]
        out[name] = [r for _, rows in cells for r in rows]
    return out


def suite_report(dump: dict[str, list[dict]], methods: list[str]) -> str:
    """Per cell: default - naive-cv, - production, - the best other row; the worst cell; wins."""
    head = ("| cell | seeds | default | − naive-cv [95% CI] | − production [95% CI] | "
            "− best other (row) [95% CI] | choices |")  # fmt: skip
    lines = [head, "|" + " --- |" * 7]
    worst = []
    means = {m: [] for m in methods}
    wins = {m: [0, 0] for m in methods}
    for cell, rows in dump.items():
        if not rows:
            continue
        v = {m: np.array([r.get(m, np.nan) for r in rows], dtype=float) for m in methods}
        ok = [m for m in methods if not np.isnan(v[m]).any()]
        for m in ok:
            means[m].append(v[m].mean())
            if m != "default" and "default" in ok:
                wins[m][0] += int((v["default"] >= v[m]).sum())
                wins[m][1] += len(rows)
        others = [m for m in ok if m not in _REFERENCES]
        best = max(others, key=lambda m: v[m].mean()) if others else None
        cells = []
        for i, ref in enumerate(("naive-cv", "production", best)):
            if ref is None or ref not in ok or "default" not in ok:
                cells.append("")
                continue
            mean, lo, hi = _paired(v["default"] - v[ref])
            cells.append(f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]" + (f" ({ref})" if i == 2
                                                                 else ""))  # fmt: skip
            if i < 2:  # the acceptance is about naive-cv and production
                worst.append((hi, mean, lo, hi, cell, ref))  # hi is NaN with one seed
        choices = ", ".join(f"{c}×{n}" for c, n in _count(r.get("_choice") for r in rows))
        d = v["default"].mean() if "default" in ok else float("nan")
        lines.append(f"| {cell} | {len(rows)} | {d:.4f} | " + " | ".join(cells) + f" | {choices} |")
    out = ["## Suite: test NDCG@10, default minus other rows (paired over seeds)", "", *lines, ""]
    if worst:
        w = min(worst, key=lambda t: t[1])
        sig = [t for t in worst if t[0] < 0]  # NaN (one seed) is never significant
        where = ": " + "; ".join(f"{t[4]} vs {t[5]}" for t in sig) if sig else ""
        out.append(
            f"Worst cell (mean difference): {w[4]}, default − {w[5]} = {w[1]:+.4f} "
            f"[{w[2]:+.4f}, {w[3]:+.4f}]. Cells where the default is significantly below "
            f"naive-cv or production (95% CI entirely below 0): {len(sig)}{where}."
        )
    out += ["", "| row | mean over cells | cells | default ≥ row (seeds) |"]
    out += ["| --- | --- | --- | --- |"]
    for m in sorted(methods, key=lambda m: -np.mean(means[m]) if means[m] else 0):
        if means[m]:
            w = f"{wins[m][0]}/{wins[m][1]}" if wins[m][1] else ""
            out.append(f"| {m} | {np.mean(means[m]):.4f} | {len(means[m])} | {w} |")
    return "\n".join(out)


def _count(items) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for x in items:
        if x is not None:
            out[x] = out.get(x, 0) + 1
    return sorted(out.items(), key=lambda t: -t[1])


def _save(path: str | None, dump: dict) -> None:
    if path:
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(dump, indent=1))
        tmp.replace(path)


def _users(args: Any) -> str:
    """The suffix naming a run's users when they are not the suite's: their click model
    (``--click-model``) when not the PBM, ``graded`` for ``--relevance graded``, and
    ``eta=<value>`` for another ``--eta``."""
    model = "" if args.click_model == "pbm" else f" {args.click_model}"
    eta = "" if args.eta == 1.0 else f" eta={args.eta:g}"
    swap = " no-interventions" if args.swap == 0 else ""
    if getattr(args, "context", False):
        kappa = args.context_concentration
        who = (f"segments={args.context_segments}" if getattr(args, "context_segments", 0)
               else f"phone={args.context_share:g}")  # fmt: skip
        swap = (f" context {who} eta={args.context_etas[0]:g}/"
                f"{args.context_etas[1]:g}" + ("" if kappa is None else f" by-query={kappa:g}")
                + swap)  # fmt: skip
    return model + ("" if args.relevance == "binarized" else f" {args.relevance}") + eta + swap


def run_suite(args: Any, methods: list[str]) -> None:
    dump: dict[str, list[dict]] = {}
    if args.json and Path(args.json).is_file():
        dump = json.loads(Path(args.json).read_text())
    cells = [(f"{name} n={n:g} {logger}{_users(args)}", load, n, logger)
             for name, load, n, logger in suite_cells(args)]  # fmt: skip
    cells = [c for c in cells if not args.only or re.search(args.only, c[0])]
    for seed in range(args.seeds):  # seed by seed over every cell: a stopped run covers them all
        for cell, load, n, logger in cells:
            rows = dump.setdefault(cell, [])
            if len(rows) > seed:
                continue
            cell_args = argparse.Namespace(**{**vars(args), "sessions": n, "logger": logger})
            rows.append(run_seed(cell, load, seed, cell_args, methods))
            _save(args.json, dump)  # a stopped run keeps every seed it finished
    print(suite_report(dump, methods))
    print(
        "\n" + suite_report(pooled(dump), methods).replace("## Suite:", "## Suite, folds pooled:")
    )


def merge_runs(dump: dict[str, list[dict]], more: dict[str, list[dict]]) -> None:
    """Add the runs of another ``--json`` file to ``dump`` (``--report``).

    A cell's rows are its seeds in order. Rows of other methods on the same seeds
    (no method in common, as many seeds) join those seeds' rows, so rows run
    later on the same logs are compared paired; otherwise the rows are more runs.
    """
    for cell, rows in more.items():
        have = dump.setdefault(cell, [])
        shared = {k for r in have for k in r} & {k for r in rows for k in r}
        if have and len(have) == len(rows) and not shared:
            for old, new in zip(have, rows, strict=True):
                old.update(new)
        else:
            have.extend(rows)


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
    ap.add_argument(
        "--features",
        type=int,
        default=6,
        help="--synthetic: features per document (136: as many as MSLR-WEB's)",
    )
    ap.add_argument(
        "--train-queries",
        type=int,
        default=300,
        help="--synthetic: training queries (1,000 more are the test queries)",
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
    ap.add_argument("--click-model", default="pbm", choices=CLICK_MODELS,
                    help="the users' click model (the runs are named after it when not pbm); "
                         "the learners still assume a PBM")  # fmt: skip
    ap.add_argument("--relevance", default="binarized", choices=["binarized", "graded"],
                    help="how labels map to P(click | examined): binarized at the top grades "
                         "with noise 0.1 (the suite's), or graded from 0.1 to 1 (the runs are "
                         "named after it when graded)")  # fmt: skip
    ap.add_argument(
        "--logger",
        choices=LOGGERS,
        default="production",
        help="deterministic top 10 of the production ranker, Plackett-Luce sampling over "
        "its scores, or a history of --history production rankers (one per session)",
    )
    ap.add_argument("--history", type=int, default=3,
                    help="--logger history: rankers in the history (trained on different "
                    "queries)")  # fmt: skip
    ap.add_argument("--suite-loggers", default="production,plackett-luce",
                    help=f"--suite: loggers of the cells, among {', '.join(LOGGERS)}")  # fmt: skip
    ap.add_argument("--temperature", type=float, default=1.0, help="Plackett-Luce temperature")
    ap.add_argument("--swap", type=float, default=0.1,
                    help="share of sessions with a rank-1 swap; 0: a log without interventions "
                    "(propensities from what it holds, method auto; runs named after "
                    "it)")  # fmt: skip
    ap.add_argument("--context", action="store_true",
                    help="a device column: phones (--context-share of the sessions) and "
                    "desktops click by PBMs of their own η (--context-etas); the default "
                    "row corrects per device (ClickRanker(context='device')), default-pooled "
                    "with one curve, default-truecontext per device with the true curves, "
                    "<member>-pooled-member rows are default-pooled's members, "
                    "lightgbm-position gets device x rank ids (runs named after it)")  # fmt: skip
    ap.add_argument("--context-share", type=float, default=0.3, help="--context: phones' share")
    ap.add_argument("--context-segments", type=int, default=0,
                    help="--context: instead of two devices, this many segments of equal "
                    "share, each with a feature x uniform on [-1, 1] and a curve whose η goes "
                    "linearly in x from the first of --context-etas to the second; the default "
                    "row corrects by the model of θ in x (ClickRanker(context_features='x')), "
                    "lightgbm-position gets rank ids alone")  # fmt: skip
    ap.add_argument("--context-etas", default="2,0.5",
                    help="--context: η of the phones' and the desktops' curves")  # fmt: skip
    ap.add_argument("--context-concentration", type=float, default=None,
                    help="--context: each query draws its phones' share from a Beta around "
                    "--context-share with this concentration (simulation.Context's "
                    "query_concentration; default: the same share for every query)")  # fmt: skip
    ap.add_argument("--trees", type=int, default=100, help="fixed budget: trees")
    ap.add_argument("--leaves", type=int, default=8, help="fixed budget: leaves")
    ap.add_argument("--max-depth", type=int, default=3, help="fixed budget: depth (-1: none)")
    ap.add_argument("--methods", default=None, help="rows (default: all; --suite: SUITE_METHODS)")
    ap.add_argument("--json", help="write every per-seed score here")
    ap.add_argument("--bias", action="store_true",
                    help="print each log's position bias (swap propensities, CTR of the "
                         "relevant documents by rank) instead of training")  # fmt: skip
    ap.add_argument("--folds", type=int, default=None,
                    help="--data: pool each folder's train and test queries and cross-validate "
                         "over this many folds (named <data>/Fold<j>)")  # fmt: skip
    ap.add_argument("--suite", action="store_true",
                    help="the robustness suite (see above); on --data when given")  # fmt: skip
    ap.add_argument(
        "--only",
        help="--suite: run only the cells matching this regex "
        "(e.g. to split the suite over processes, each with its own --json)",
    )
    ap.add_argument(
        "--report",
        nargs="+",
        metavar="JSON",
        help="print the suite report of these --json files (merged) and exit",
    )
    ap.add_argument("--suite-sessions", default="2000,20000,200000",
                    help="--suite: log sizes")  # fmt: skip
    ap.add_argument("--cut", type=int, default=None,
                    help="--suite: cut every MQ2008 query to its first N documents (N=14: a "
                    "short-list stand-in)")  # fmt: skip
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "clickrank-mq2008"),
                    help="--suite: folder for the rebuilt MQ2008 folds")  # fmt: skip
    args = ap.parse_args()
    args.context_etas = [float(x) for x in args.context_etas.split(",")]
    if len(args.context_etas) != 2 or not 0 < args.context_share < 1:
        ap.error("--context-etas takes two values (phone, desktop) and --context-share is in "
                 f"(0, 1); got {args.context_etas}, {args.context_share}")  # fmt: skip
    if args.context_segments and not args.context or args.context_segments < 0:
        ap.error(
            f"--context-segments takes --context and a count >= 1, got {args.context_segments}"
        )
    if args.context and args.click_model not in ("pbm", "trust"):
        ap.error("--context gives each device a position-based curve: --click-model pbm or trust")
    default_methods = SUITE_METHODS if args.suite else list(METHODS)
    methods = [m.strip() for m in (args.methods or ",".join(default_methods)).split(",")
               if m.strip()]  # fmt: skip
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    if args.features < 1:
        ap.error(f"--features must be at least 1, got {args.features}")
    if args.bias and (args.suite or args.report):
        ap.error("--bias prints the logs of --data/--synthetic; it does not combine with "
                 "--suite or --report")  # fmt: skip
    if args.report:
        dump: dict[str, list[dict]] = {}
        for path in args.report:
            merge_runs(dump, json.loads(Path(path).read_text()))
        print(suite_report(dump, methods))
        print(
            "\n"
            + suite_report(pooled(dump), methods).replace("## Suite:", "## Suite, folds pooled:")
        )
        return None
    if args.folds is not None and (args.folds < 2 or not args.data):
        ap.error(f"--folds needs --data and at least 2 folds, got {args.folds}")
    if args.data and (args.cut or args.synthetic) and args.suite:
        ap.error("--suite with --data runs the suite on those folders only: drop --cut and "
                 "--synthetic")  # fmt: skip
    if args.cut is not None and args.cut < 2:
        ap.error(f"--cut must be at least 2 documents per query, got {args.cut}")
    if not 0 <= args.swap <= 1 or args.history < 2:
        ap.error(f"--swap must be in [0, 1] and --history at least 2, got {args.swap}, "
                 f"{args.history}")  # fmt: skip
    if args.suite:
        args.suite_sessions = [int(float(x)) for x in args.suite_sessions.split(",")]
        args.suite_loggers = [x.strip() for x in args.suite_loggers.split(",") if x.strip()]
        bad = sorted(set(args.suite_loggers) - set(LOGGERS))
        if bad or not args.suite_loggers:
            ap.error(f"--suite-loggers takes {', '.join(LOGGERS)}; got {bad or 'none'}")
        return run_suite(args, methods)
    report, dump = [], {}
    for name, load in datasets(args):
        name += _users(args)
        if args.bias:
            print("\n".join(position_bias(name, load, seed, args) for seed in range(args.seeds)))
            continue
        results = [run_seed(name, load, seed, args, methods) for seed in range(args.seeds)]
        dump[name] = results
        report.append(summarize(name, results, methods))
    print("\n".join(report))
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    main()
