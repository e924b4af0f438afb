"""Stage figures and the summary of a run (the content of ``summary.json``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._core._io import atomic_write_json, clear_owned
from .._version import __version__
from ._files import _clean


class _OutputStages:
    """The figures stage and the results that :func:`run_experiment` reports.

    Mixed into :class:`~clickrank.experiment._runner._Context`, which sets ``cfg``,
    ``out`` and ``run`` and calls the stages in order (``go``).
    """

    # -- figures --------------------------------------------------------------------------
    def _figures(self) -> tuple[dict, list[str]]:
        from .. import plots

        folder = self.out / "figures"
        clear_owned(folder)  # clickrank's old files; anything else stays
        folder.mkdir(parents=True, exist_ok=True)
        made: dict[str, str] = {}
        if not self.cfg["report"]["figures"]:
            out = {"files": made}
            atomic_write_json(folder / "figures.json", out)
            return out, ["figures/figures.json"]
        log, truth, cm = self.log(), self.true_theta(), self.click_model()
        est = self._use_estimate()

        def fig(name: str, draw: Callable[[Path], Any]) -> None:
            path = folder / f"{name}.png"
            draw(path)
            made[name] = f"figures/{name}.png"

        has_alpha = hasattr(cm, "attractiveness")
        view = self.log_stats["ctr_view"]
        fig(
            "ctr_by_position",
            lambda p: plots.ctr_by_position(
                log,
                propensities=est,
                true_theta=truth,
                relevance=cm if has_alpha else None,
                intervention=None if view == "all" else view,
                path=p,
            ),
        )
        if self.estimates:
            fig(
                "propensities",
                lambda p: plots.propensity_vs_truth(
                    self.estimates
                    if len(self.estimates) > 1
                    else next(iter(self.estimates.values())),
                    truth,
                    alpha=self.cfg["propensity"]["alpha"],
                    path=p,
                ),
            )
        if est is not None and est.contexts is not None:  # one curve per context, with bands
            import matplotlib.pyplot as plt

            fig("propensities_by_context", lambda p: plt.close(
                est.plot(path=p, alpha=self.cfg["propensity"]["alpha"])))  # fmt: skip
        fig("click_heatmap", lambda p: plots.click_heatmap(log, path=p))
        if self.log_stats["skip_above"]["preferences"] > 0:
            fig("skip_above_bias", lambda p: plots.skip_above_bias(log, path=p))
        if self.curve["rows"]:
            import polars as pl

            frame = pl.DataFrame(
                self.curve["rows"],
                schema={
                    "method": pl.String,
                    "sessions": pl.Int64,
                    "mean": pl.Float64,
                    "lower": pl.Float64,
                    "upper": pl.Float64,
                },
            )
            fig(
                "learning_curve",
                lambda p: plots.learning_curves(
                    frame,
                    metric=self.curve["metric"].upper(),
                    level=1 - self.cfg["evaluation"]["alpha"],
                    path=p,
                ),
            )
        forces = self._forces_example()
        if forces is not None:
            scores, labels, info = forces
            fig("forces", lambda p: plots.forces(scores, labels, path=p))
            made_info = info
        else:
            made_info = None
        out = {"files": made, "forces": made_info}
        atomic_write_json(folder / "figures.json", _clean(out))
        return out, ["figures/figures.json", *made.values()]

    def _forces_example(self) -> tuple[np.ndarray, np.ndarray, dict] | None:
        """The top 10 of a test query as ranked by the naive (else first) model."""
        from .._core._segments import rank_order

        rankers = self.rankers()
        name = "naive" if "naive" in rankers else next(iter(rankers))
        test = self.parts["test"]
        ranker = rankers[name]
        s = ranker if isinstance(ranker, np.ndarray) else ranker.predict(test.X)
        order = rank_order(s, test.qptr)
        for q in range(test.n_queries):
            a, b = int(test.qptr[q]), int(test.qptr[q + 1])
            rows = order[a:b][:10]
            if np.unique(test.y[rows]).size >= 3:
                return (
                    s[rows],
                    test.y[rows],
                    {"ranker": name, "query": str(test.qid[q]), "docs": len(rows)},
                )
        return None

    # -- results --------------------------------------------------------------------------
    def results(self) -> dict:
        from importlib.metadata import PackageNotFoundError, version

        versions = {"clickrank": __version__, "python": sys.version.split()[0]}
        for pkg in ("numpy", "polars", "lightgbm", "scipy", "numba", "matplotlib"):
            try:
                versions[pkg] = version(pkg)
            except PackageNotFoundError:
                versions[pkg] = None
        notes = [
            *self.train["notes"],
            *self.evaluation["notes"],
            *self.interleaving["notes"],
            *self.curve["notes"],
        ]
        return _clean(
            {
                "format": "clickrank.experiment.summary",
                "config": self.cfg.to_dict(),
                "config_origin": self.cfg.origin,
                "config_hash": self.cfg.hash(),
                "stage_hashes": dict(self.run.hashes),
                "data": self.data,
                "production": self.prod,
                "log": self.log_stats,
                "propensities": self.prop,
                "click_fit": self.click_fit,
                "models": self.train["models"],
                "evaluation": self.evaluation,
                "interleaving": self.interleaving["experiments"],
                "learning_curve": {"metric": self.curve["metric"], "rows": self.curve["rows"]},
                "figures": self.figures["files"],
                "forces_example": self.figures.get("forces"),
                "notes": notes,
                "versions": versions,
            }
        )
