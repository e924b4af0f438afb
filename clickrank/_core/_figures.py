"""Figure plumbing shared by every plot: a pyplot-free figure and an atomic PNG write.

It lives in the data layer so that result classes anywhere (a click-model
comparison, propensities) can draw without importing :mod:`clickrank.plots`,
which sits in the report layer.
"""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ._io import atomic_write
from ._validation import InputError

__all__ = ["finish", "new_axes"]


def new_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes, bool]:
    """``(figure, axes, own)``: a new pyplot-free figure unless ``ax`` is given."""
    if ax is None:
        fig = Figure(figsize=figsize, dpi=100)
        FigureCanvasAgg(fig)
        return fig, fig.add_subplot(), True
    if not isinstance(ax, Axes):
        raise InputError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return ax.figure, ax, False


def finish(fig: Figure, path: str | os.PathLike | None, *, own: bool, dpi: int = 100) -> Figure:
    """Tight layout (only for figures we created) and an atomic PNG write."""
    if own:
        fig.tight_layout()
    if path is None:
        return fig
    out = Path(path)
    if out.is_dir():
        raise InputError(f"path {out} is a folder; give a .png file name")
    if not out.parent.is_dir():
        raise InputError(f"the folder of {out} does not exist")
    atomic_write(out, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi), mkdir=False)
    return fig
