"""Stage click_fit: which click model describes the simulated users (optional, off by default)."""

from __future__ import annotations

import shutil

from .._core._io import atomic_write_json
from ._files import _clean, _read_json


class _ClickFitStage:
    """Fit click models to (a prefix of) the log and compare them on held-out sessions.

    Mixed into :class:`~clickrank.experiment._runner._Context`. Configured by
    ``[click_fit]``: ``models`` (empty: the stage does nothing), ``sessions``
    (fit the first n sessions of the log; 0: all), ``test_fraction`` and
    ``shrinkage``. Writes ``click_fit/click_fit.json`` and, with figures on,
    ``click_fit/perplexity_by_rank.png``.
    """

    def _click_fit(self) -> tuple[dict, list[str]]:
        import polars as pl

        cf = self.cfg["click_fit"]
        folder = self.out / "click_fit"
        if folder.is_dir():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        files = ["click_fit/click_fit.json"]
        if not cf["models"]:
            out = {"models": []}
            atomic_write_json(folder / "click_fit.json", out)
            return out, files
        from ..clickmodels.fitting import compare_click_models

        lf = self.log()
        if cf["sessions"] > 0:
            first = lf.select(pl.col("session").min()).collect().item()
            lf = lf.filter(pl.col("session") < first + cf["sessions"])
        cmp = compare_click_models(
            lf,
            cf["models"],
            test_fraction=cf["test_fraction"],
            seed=self.cfg.seed("evaluation"),
            shrinkage=cf["shrinkage"],
        )
        out = _clean(cmp.to_dict())
        if self.cfg["report"]["figures"]:
            cmp.plot(path=folder / "perplexity_by_rank.png")
            out["figure"] = "click_fit/perplexity_by_rank.png"
            files.append(out["figure"])
        atomic_write_json(folder / "click_fit.json", out)
        return out, files

    def _click_fit_load(self) -> dict:
        return _read_json(self.out / "click_fit/click_fit.json")

    @staticmethod
    def _click_fit_detail(out: dict) -> str:
        if not out.get("models"):
            return "off"
        return f"{len(out['models'])} model(s), best {out['best']}"
