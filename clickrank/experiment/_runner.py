"""The staged run: :func:`run_experiment`, the manifest and reuse logic, ExperimentResult."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core._io import (
    LEDGER,
    atomic_write_json,
    atomic_write_text,
    check_writable,
    first_foreign,
    is_owned,
    lock_output,
)
from .._core._validation import ClickRankError, InputError
from .._version import __version__
from ._click_fit_stage import _ClickFitStage
from ._config import ExperimentConfig, _digest, load_config
from ._files import _read_json
from ._log_stages import _LogStages
from ._output_stages import _OutputStages
from ._ranker_stages import _RankerStages
from ._schema import STAGES


@dataclass(frozen=True, eq=False)
class ExperimentResult:
    """What :func:`run_experiment` produced.

    Attributes
    ----------
    out_dir : Path
        The results folder.
    report_path, summary_path : Path
        ``report.md`` and ``summary.json`` inside it.
    results : dict
        The content of ``summary.json`` (config, propensities, metrics with
        CIs, paired tests, interleaving, learning curve, reading, timings, versions).
    """

    out_dir: Path
    report_path: Path
    summary_path: Path
    results: dict = field(repr=False)

    @property
    def timings(self) -> dict:
        """Stage -> ``{"seconds": float, "reused": bool}``."""
        return self.results["timings"]["stages"]

    def metric(self, ranker: str, metric: str | None = None) -> dict:
        """The metrics row (mean, se, ci_low, ci_high, ...) of one ranker."""
        metric = metric or self.results["evaluation"]["metrics"][0]
        for row in self.results["evaluation"]["table"]:
            if row["ranker"] == ranker and row["metric"] == metric:
                return row
        raise InputError(f"no {metric!r} result for ranker {ranker!r}")

    def summary(self) -> str:
        """Headline metric per ranker, the reading, and where the report is."""
        ev = self.results["evaluation"]
        m = ev["metrics"][0]
        pct = f"{100 * (1 - ev['alpha']):g}%"
        lines = [
            f"Experiment {self.out_dir} ({self.results['timings']['total_seconds']:.1f} s)",
            f"  {m} on {ev['n_queries']} test queries ({pct} bootstrap CI):",
        ]
        w = max(len(r) for r in ev["rankers"]) + 2
        for row in ev["table"]:
            if row["metric"] == m:
                lines.append(
                    f"    {row['ranker']:<{w}}{row['mean']:.4f}  "
                    f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
                )
        lines.extend(f"  - {s}" for s in self.results.get("reading", []))
        lines.append(f"  report: {self.report_path}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


class _Runner:
    """Runs the stages, reusing artefacts whose input hash matches the manifest."""

    def __init__(self, cfg: ExperimentConfig, out: Path, progress: bool, force: bool) -> None:
        self.cfg = cfg
        self.out = out
        self.progress = progress
        self.force = force
        self.manifest_path = out / "manifest.json"
        manifest = None
        if self.manifest_path.is_file():
            try:
                manifest = _read_json(self.manifest_path)
            except (OSError, json.JSONDecodeError):
                manifest = None
        if not isinstance(manifest, dict) or manifest.get("format") != "clickrank.experiment":
            manifest = {"format": "clickrank.experiment", "stages": {}}
        self.manifest = manifest
        self.timings: dict[str, dict] = {}
        self.hashes: dict[str, str] = {}

    def log(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr, flush=True)

    def stage(
        self,
        name: str,
        key: dict,
        compute: Callable[[], tuple[Any, list[str]]],
        load: Callable[[], Any],
        *,
        cache: bool = True,
        detail: Callable[[Any], str] | None = None,
    ) -> Any:
        """Run or reuse one stage; ``compute`` returns (value, files written)."""
        i = STAGES.index(name) + 1
        h = _digest({"stage": name, "clickrank": __version__, **key})
        self.hashes[name] = h
        self.log(f"[{i:>2}/{len(STAGES)}] {name} ...")
        t0 = time.perf_counter()
        entry = self.manifest["stages"].get(name)
        reuse = (
            cache
            and not self.force
            and isinstance(entry, dict)
            and entry.get("hash") == h
            and all((self.out / f).exists() for f in entry.get("files", ()))
        )
        if reuse:
            value = load()
            dt = time.perf_counter() - t0
            self.timings[name] = {
                "seconds": round(dt, 3),
                "reused": True,
                "computed_seconds": entry.get("seconds"),
            }
        else:
            # forget the old entry first: a stage that fails half-way is never reused
            if self.manifest["stages"].pop(name, None) is not None:
                atomic_write_json(self.manifest_path, self.manifest)
            try:
                value, files = compute()
            except ClickRankError as err:  # name the stage in the one-line message
                err.args = (f"{name} stage: {err}", *err.args[1:])
                raise
            dt = time.perf_counter() - t0
            self.manifest["stages"][name] = {
                "hash": h,
                "files": sorted(files),
                "seconds": round(dt, 3),
            }
            atomic_write_json(self.manifest_path, self.manifest)
            self.timings[name] = {"seconds": round(dt, 3), "reused": False}
        note = f"; {detail(value)}" if detail is not None else ""
        self.log(f"        {name}: {'reused' if reuse else 'done'} in {dt:.1f} s{note}")
        return value


def _check_out_dir(out: Path, need_bytes: int) -> None:
    """A new or empty folder, or a results folder of clickrank's own, that can be written
    and that no other clickrank process is writing (locked while the CLI command runs)."""
    lock_output(out, what="--out")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(e.name != LEDGER for e in out.iterdir()):
        if not is_owned(out / "manifest.json"):
            raise InputError(
                f"--out {out} is not empty and is not a clickrank results folder "
                "(no manifest.json written by clickrank); choose a new or empty "
                "folder"
            )
        manifest = _read_json(out / "manifest.json")
        ours = {"config.toml", "report.md", "summary.json"}
        for entry in manifest.get("stages", {}).values():
            ours.update(entry.get("files", ()) if isinstance(entry, dict) else ())
        for name in sorted(ours):  # outputs a run rewrites: refused now, not after the work
            bad = first_foreign(out / name)
            if bad is not None:
                raise InputError(
                    f"--out {out}: {bad} is not as clickrank wrote it (edited or "
                    "replaced), and clickrank never overwrites what it did not "
                    "write: move it away or choose another folder"
                )
    check_writable(out, what="--out", need_bytes=need_bytes)


def run_experiment(
    config: Any = None,
    out_dir: str | os.PathLike = "results/default",
    *,
    progress: bool = True,
    force: bool = False,
    check_space: bool = True,
) -> ExperimentResult:
    """Run the whole flow from data to ``report.md`` (see the module docs for the stages).

    Parameters
    ----------
    config : None, path, dict or ExperimentConfig
        Passed to :func:`load_config` (None: the embedded default). It is
        validated completely before anything is written.
    out_dir : path
        Results folder (created). A stage whose inputs are unchanged since the
        last run into the same folder is loaded instead of recomputed.
    progress : bool
        Print one line per stage with its timing to stderr.
    force : bool
        Recompute every stage. Files of ``out_dir`` that clickrank did not
        write are never replaced or deleted, with or without ``force``.
    check_space : bool
        Refuse to start if the estimated size of the click log
        (:func:`clickrank.simulation.estimate_log_bytes`) exceeds the free disk space.

    Returns
    -------
    ExperimentResult

    Raises
    ------
    ConfigError
        For a bad configuration (nothing is written).
    ClickRankError
        From a stage (e.g. an estimator that the log cannot identify).
    """
    from ..simulation import estimate_log_bytes

    cfg = load_config(config)
    out = Path(out_dir)
    sim = cfg["simulation"]
    _check_out_dir(out, estimate_log_bytes(sim["sessions"], sim["top_k"]) if check_space else 0)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    run = _Runner(cfg, out, progress, force)
    run.check_space = check_space
    run.log(f"clickrank run -> {out} (config {cfg.origin}, hash {cfg.hash()})")
    atomic_write_text(out / "config.toml", cfg.to_toml())
    ctx = _Context(cfg, out, run)
    ctx.go()
    from .. import report as _report

    results = ctx.results()
    run.log(f"[{len(STAGES):>2}/{len(STAGES)}] report ...")
    t0 = time.perf_counter()
    results["reading"] = _report.reading(results)
    _report.render_report(results)  # timed here; written below with the timings in it
    run.timings["report"] = {"seconds": round(time.perf_counter() - t0, 3), "reused": False}
    results["timings"] = {
        "stages": run.timings,
        "total_seconds": round(time.perf_counter() - t_start, 3),
    }
    report_path, summary_path = _report.write_report(results, out)
    run.log(f"        report: {report_path} ({results['timings']['total_seconds']:.1f} s in all)")
    return ExperimentResult(out, report_path, summary_path, results)


class _Context(_LogStages, _ClickFitStage, _RankerStages, _OutputStages):
    """The stages of one run and the values they hand to each other.

    The stage methods come from the mixins, one per group of stages: data to
    propensities (:mod:`._log_stages`), train to learning curve
    (:mod:`._ranker_stages`), figures and the summary (:mod:`._output_stages`).
    """

    def __init__(self, cfg: ExperimentConfig, out: Path, run: _Runner) -> None:
        self.cfg = cfg
        self.out = out
        self.run = run

    # -- driver ---------------------------------------------------------------------------
    def go(self) -> None:
        """Run (or reuse) every stage in order: the log side, then the ranker side."""
        self._go_log()
        self._go_rankers()

    def _go_log(self) -> None:
        """data -> production -> simulate -> propensity (and the click-model fit)."""
        cfg, run = self.cfg, self.run
        self.data = run.stage(
            "data",
            {"config": cfg.section_key("data"), "files": self._fingerprints()},
            self._data,
            self._data_load,
            cache=False,
            detail=self._data_detail,
        )
        up = run.hashes["data"]
        self.prod = run.stage(
            "production",
            {"up": up, "config": cfg.section_key("production")},
            self._production,
            self._production_load,
            detail=self._production_detail,
        )
        up = run.hashes["production"]
        # [context] joins the key only when set: a run without one keeps its hash
        simulation = ("click_model", "interventions", "simulation", *(
            ["context"] if "context" in cfg.values else []))  # fmt: skip
        self.log_stats = run.stage(
            "simulate",
            {"up": up, "config": cfg.section_key(*simulation)},
            self._simulate,
            lambda: _read_json(self.out / "log_stats.json"),
            detail=lambda s: (
                f"{s['sessions']:,} sessions, {s['impressions']:,} rows, {s['clicks']:,} clicks"
            ),
        )
        up = run.hashes["simulate"]
        self.prop = run.stage(
            "propensity",
            {"up": up, "config": cfg.section_key("propensity")},
            self._propensity,
            self._propensity_load,
            detail=lambda p: ", ".join(p["estimates"]) or "none",
        )
        self.click_fit = run.stage(
            "click_fit",
            {
                "up": run.hashes["simulate"],
                "config": cfg.section_key("click_fit"),
                "seed": cfg.seed("evaluation"),
                "figures": cfg["report"]["figures"],
            },
            self._click_fit,
            self._click_fit_load,
            detail=self._click_fit_detail,
        )

    def _go_rankers(self) -> None:
        """train -> evaluate -> interleaving -> learning curve -> figures."""
        cfg, run = self.cfg, self.run
        up = run.hashes["propensity"]
        self.train = run.stage(
            "train",
            {
                "up": up,
                "config": cfg.section_key("targets", "lambdamart"),
                "eval_at": self._eval_at(),
            },
            self._train,
            lambda: _read_json(self.out / "models/targets.json"),
            detail=lambda t: ", ".join(t["models"]),
        )
        up = run.hashes["train"]
        self.evaluation = run.stage(
            "evaluate",
            {"up": up, "config": cfg.section_key("evaluation")},
            self._evaluate,
            lambda: _read_json(self.out / "evaluation.json"),
            detail=lambda e: f"{len(e['rankers'])} rankers on {e['n_queries']} queries",
        )
        self.interleaving = run.stage(
            "interleaving",
            {
                "up": up,
                "config": cfg.section_key("interleaving"),
                "alpha": cfg["evaluation"]["alpha"],
            },
            self._interleaving,
            lambda: _read_json(self.out / "interleaving.json"),
            detail=lambda r: f"{len(r['experiments'])} pair(s)",
        )
        self.curve = run.stage(
            "learning_curve",
            {"up": up, "config": cfg.section_key("learning_curve", "evaluation")},
            self._learning_curve,
            lambda: _read_json(self.out / "learning_curve.json"),
            detail=lambda c: f"{len(c['rows'])} points",
        )
        key = {
            "up": [run.hashes[s] for s in ("evaluate", "interleaving", "learning_curve")],
            "config": cfg.section_key("report"),
        }
        self.figures = run.stage(
            "figures",
            key,
            self._figures,
            lambda: _read_json(self.out / "figures/figures.json"),
            detail=lambda f: f"{len(f['files'])} PNG files",
        )
