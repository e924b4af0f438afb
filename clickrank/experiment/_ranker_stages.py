"""Stages train, evaluate, interleaving and learning_curve: the rankers and their comparison."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._core._io import atomic_write_json, clear_owned
from .._core._validation import ClickRankError
from ..specs.names import NEEDS_THETA
from ._files import _clean, _folder
from ._schema import PRODUCTION


class _RankerStages:
    """The targets and models, evaluation, interleaving and learning-curve stages.

    Mixed into :class:`~clickrank.experiment._runner._Context`, which sets ``cfg``,
    ``out`` and ``run`` and calls the stages in order (``go``).
    """

    # -- targets and models ---------------------------------------------------------------
    def _target(self, name: str, log: Any, theta_est: Any):
        from .. import targets as T

        t = self.cfg["targets"]
        theta = self.true_theta() if name == "ips-true" else theta_est
        clip = None if t.get("clip") == "none" else t.get("clip")
        tgt = T.make_target("ips" if name == "ips-true" else name, self.parts["train"], log,
                            theta, candidates=t["candidates"], clip=clip,
                            normalize=t["normalize"], naive_kind=t["naive_kind"],
                            seed=self.cfg.seed("lambdamart"))  # fmt: skip
        return replace(tgt, name=name)

    def _eval_at(self) -> int:
        """Cut-off of LambdaMART's validation NDCG: that of the headline metric (default 10)."""
        metric = self.cfg["evaluation"]["metrics"][0]
        k = metric.rsplit("@", 1)[1] if "@" in metric else ""
        return int(k) if k.isdigit() and int(k) > 0 else 10

    def _lambdamart(self):
        """The configured learner: LambdaMARTCV (select = true) or a fixed LambdaMART."""
        from ..specs import make_learner

        lm = self.cfg["lambdamart"]
        return make_learner(
            lm,
            select=lm["select"],
            early_stopping=self.parts.get("valid") is not None,
            eval_at=self._eval_at(),
            seed=self.cfg.seed("lambdamart"),
        )

    def _fit(self, name: str, tgt: Any, log: Any, theta_est: Any):
        """Fit ``tgt`` (``"default"``: the whole family) as ``clickrank train`` does.

        Click targets go through :class:`~clickrank.clickranker.ClickRanker` (the same
        validation, selection and safety record as the command); the oracle is
        cross-validated on its labels; ``select = false`` grows a fixed LambdaMART.
        """
        from ..clickranker import ClickRanker
        from ..specs import ONE_TARGET_SELECTION, selection_params

        lm, train = self.cfg["lambdamart"], self.parts["train"]
        if not lm["select"]:
            return self._lambdamart().fit(train, tgt, valid=self.parts.get("valid"))
        if name == "oracle":
            return self._lambdamart().fit(train, tgt)  # labels: cross-validated NDCG
        spec = selection_params(lm, eval_at=self._eval_at(), seed=self.cfg.seed("lambdamart"))
        # one target: one K-fold split, the selection LambdaMARTCV always made (same models);
        # the default's choice among targets repeats it where queries are few, with its own
        # patience and racing unless the config sets them
        if name != "default":
            spec = {**ONE_TARGET_SELECTION, **spec}
        ranker = ClickRanker(validation=lm["validation"], safe=name == "default",
                             repeats="auto" if name == "default" else 1, **spec)  # fmt: skip
        targets = None if name == "default" else {name: tgt}
        # the production ranker's scores: the ranker every model is checked against (the
        # run keeps no production model to fall back to, so the default's safe ranker is naive)
        logging = self.scores["train"] if name != "default" else None
        return ranker.fit(train, log, theta_est, logging_model=logging, targets=targets)

    @staticmethod
    def _booster(model: Any) -> Any:
        """The LambdaMART inside a selection (or the model itself)."""
        while hasattr(model, "model_"):
            model = model.model_
        return model

    def _skipped(self, name: str) -> str | None:
        if name == "ips-true" and self.context_column() is not None:
            return (f"ips-true skipped: each [context] {self.context_column()} value has its "
                    "own true curve")  # fmt: skip
        if name == "ips-true" and self.true_theta() is None:
            return (
                f"ips-true skipped: the {self.cfg['click_model']['name']} click model has "
                "no position-only examination curve (no true θ)"
            )
        return None

    def _use_estimate(self):
        use = self.prop["use"]
        return None if use is None else self.estimates[use]

    def _train(self) -> tuple[dict, list[str]]:
        folder = self.out / "models"
        clear_owned(folder)  # clickrank's old files; anything else stays
        log, est = self.log(), self._use_estimate()
        self.models, info, notes, files = {}, {}, [], []
        for name in self.cfg["targets"]["names"]:
            why = self._skipped(name)
            if why is not None:
                notes.append(why)
                continue
            tgt = None if name == "default" else self._target(name, log, est)
            model = self._fit(name, tgt, log, est)
            sub = _folder(name)
            model.save(folder / sub, overwrite=True)
            files += [f"models/{sub}/model.txt", f"models/{sub}/meta.json"]
            if hasattr(model, "best_params_") or hasattr(model, "safety_"):
                files.append(f"models/{sub}/selection.json")
            fitted = self._booster(model)
            self.models[name] = fitted
            info[name] = {
                "kind": "gains" if tgt is None else tgt.kind,
                "candidates": None if tgt is None else tgt.n_candidates,
                "trees": fitted.best_iteration_,
                "metadata": {} if tgt is None else tgt.metadata,
                "num_leaves": fitted.num_leaves,
                "max_depth": fitted.max_depth,
                "path": f"models/{sub}",
                **_selection(model),
            }
            if name == "default":  # where its propensities came from (docs/logs.md)
                info[name]["propensities"] = model.propensity_source_.to_dict()
        out = _clean({"models": info, "notes": notes})
        atomic_write_json(folder / "targets.json", out)
        return out, [*files, "models/targets.json"]

    def rankers(self) -> dict:
        """Name -> ranker or test scores: the production ranker first, then the models."""
        from ..lambdamart import LambdaMART

        if not hasattr(self, "models"):
            self.models = {
                n: LambdaMART.load(self.out / info["path"])
                for n, info in self.train["models"].items()
            }
        return {PRODUCTION: self.scores["test"], **self.models}

    # -- evaluation -----------------------------------------------------------------------
    def _evaluate(self) -> tuple[dict, list[str]]:
        from ..evaluation import evaluate

        e = self.cfg["evaluation"]
        test = self.parts["test"]
        res = evaluate(
            self.rankers(),
            test,
            e["metrics"],
            empty=e["empty"],
            n_bootstrap=e["bootstrap"],
            alpha=e["alpha"],
            seed=self.cfg.seed("evaluation"),
        )
        comparisons, notes = [], []
        for a, b in e["compare"]:
            if a not in res.rankers or b not in res.rankers:
                notes.append(
                    f"comparison {a} vs {b} skipped: "
                    f"{a if a not in res.rankers else b} was not trained"
                )
                continue
            for m in res.metrics:
                comparisons.append(res.compare(a, b, m, n_permutations=e["permutations"]).to_dict())
        res.save(self.out / "evaluation_per_query.json")
        out = _clean(
            {
                "rankers": list(res.rankers),
                "metrics": list(res.metrics),
                "n_queries": test.n_queries,
                "alpha": res.alpha,
                "n_bootstrap": res.n_bootstrap,
                "empty": res.empty,
                "table": res.table.to_dicts(),
                "comparisons": comparisons,
                "notes": notes,
            }
        )
        atomic_write_json(self.out / "evaluation.json", out)
        return out, ["evaluation.json", "evaluation_per_query.json"]

    # -- interleaving ---------------------------------------------------------------------
    def _interleaving(self) -> tuple[dict, list[str]]:
        from ..online import ab_experiment, interleaving_experiment

        il = self.cfg["interleaving"]
        rankers = self.rankers()
        test, cm = self.parts["test"], self.click_model()
        k = self.cfg["simulation"]["top_k"]
        alpha, seed = self.cfg["evaluation"]["alpha"], self.cfg.seed("interleaving")
        experiments, notes = [], []
        for a, b in il["pairs"]:
            if a not in rankers or b not in rankers:
                notes.append(
                    f"interleaving {a} vs {b} skipped: "
                    f"{a if a not in rankers else b} was not trained"
                )
                continue
            res = interleaving_experiment(
                test,
                rankers[a],
                rankers[b],
                method=il["method"],
                click_model=cm,
                n_impressions=il["impressions"],
                k=k,
                alpha=alpha,
                seed=seed,
            )
            row = {"a": a, "b": b, **res.to_dict()}
            if il["ab"]:
                ab = ab_experiment(
                    test,
                    rankers[a],
                    rankers[b],
                    click_model=cm,
                    n_impressions=il["impressions"],
                    k=k,
                    alpha=alpha,
                    seed=seed,
                )
                row["ab"] = ab.to_dict()
            experiments.append(row)
        out = _clean({"experiments": experiments, "notes": notes})
        atomic_write_json(self.out / "interleaving.json", out)
        return out, ["interleaving.json"]

    # -- learning curve -------------------------------------------------------------------
    def _learning_curve(self) -> tuple[dict, list[str]]:
        lc = self.cfg["learning_curve"]
        metric = self.cfg["evaluation"]["metrics"][0]
        total = self.cfg["simulation"]["sessions"]
        sizes = sorted({n for n in lc["sessions"] if n < total})
        notes = [
            f"prefix of {n:,} sessions dropped: the log has only {total:,}"
            for n in sorted(set(lc["sessions"]))
            if n >= total
        ]
        methods = [m for m in lc["targets"] if m in self.train["models"]]
        rows = []
        if methods:
            for n in sizes:
                rows.extend(self._curve_point(n, methods, metric, notes))
        if rows:  # the full log and the references, from the evaluation stage
            table = {(r["ranker"], r["metric"]): r for r in self.evaluation["table"]}
            refs = [(m, total) for m in methods]
            refs += [(ref, None) for ref in ("oracle", PRODUCTION) if (ref, metric) in table]
            rows.extend(_curve_row(m, n, table[(m, metric)]) for m, n in refs)
        out = _clean({"metric": metric, "rows": rows, "notes": notes})
        atomic_write_json(self.out / "learning_curve.json", out)
        return out, ["learning_curve.json"]

    def _curve_point(self, n: int, methods: list[str], metric: str, notes: list[str]) -> list:
        """The rows of the targets trained on the first ``n`` sessions (problems go to notes)."""
        import polars as pl

        from ..evaluation import evaluate

        e = self.cfg["evaluation"]
        log = self.log().filter(pl.col("session") < n)
        est = None
        if self.prop["use"] is not None:  # for the targets and the selection
            try:
                est = self._estimate(self.prop["use"], log)
            except ClickRankError as err:
                notes.append(f"{n:,} sessions: propensities not estimated ({err})")
        fitted = {}
        for m in methods:
            if m in NEEDS_THETA and est is None:
                continue
            try:
                tgt = None if m == "default" else self._target(m, log, est)
                fitted[m] = self._booster(self._fit(m, tgt, log, est))
            except ClickRankError as err:
                notes.append(f"{n:,} sessions, {m}: not trained ({err})")
        if not fitted:
            return []
        res = evaluate(fitted, self.parts["test"], [metric], empty=e["empty"],
                       n_bootstrap=e["bootstrap"], alpha=e["alpha"],
                       seed=self.cfg.seed("evaluation"))  # fmt: skip
        return [_curve_row(r["ranker"], n, r) for r in res.table.iter_rows(named=True)]


def _curve_row(method: str, sessions: int | None, r: dict) -> dict:
    """One point of the learning curve from a row of an evaluation table."""
    return {"method": method, "sessions": sessions, "mean": r["mean"], "lower": r["ci_low"],
            "upper": r["ci_high"]}  # fmt: skip


def _selection(model: Any) -> dict:
    """What a ClickRanker chose and its gain over the logging ranker (empty otherwise)."""
    if not hasattr(model, "safety_"):
        return {}
    out = {"choice": model.choice_, "reason": model.reason_}
    for key in ("vs_safe", "vs_logged", "vs_naive"):
        c = model.safety_.get(key)
        if c is not None:
            out[key] = c.to_dict()
    return out
