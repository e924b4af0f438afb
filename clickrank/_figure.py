"""Figures without pyplot: a new Agg figure (or a given axes) and one atomic PNG write.

Every figure of clickrank (the functions of :mod:`clickrank.plots` and the
``plot`` methods of result classes) is made here: a
:class:`matplotlib.figure.Figure` with its own Agg canvas, never through
pyplot (so nothing stays open in pyplot's figure manager, no display is needed
and ``matplotlib.use`` is never called), and saved through
:func:`clickrank._io.atomic_write` (a temporary file in the same folder, then
:func:`os.replace`).
"""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ._io import atomic_write
from ._validation import InputError

__all__ = ["new_axes", "finish", "save_figure"]


def new_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes, bool]:
    """``(figure, axes, own)``: a new pyplot-free figure unless ``ax`` is given."""
    if ax is None:
        fig = Figure(figsize=figsize, dpi=100)
        FigureCanvasAgg(fig)
        return fig, fig.add_subplot(), True
    if not isinstance(ax, Axes):
        raise InputError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return ax.figure, ax, False


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 100) -> Path:
    """Write ``fig`` as a PNG atomically; the folder must exist."""
    out = Path(path)
    if out.is_dir():
        raise InputError(f"path {out} is a folder; give a .png file name")
    if not out.parent.is_dir():
        raise InputError(f"the folder of {out} does not exist")
    atomic_write(out, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi), mkdir=False)
    return out


def finish(fig: Figure, path: str | os.PathLike | None, *, own: bool, dpi: int = 100) -> Figure:
    """Tight layout (only for figures we created) and, with ``path``, an atomic PNG write."""
    if own:
        fig.tight_layout()
    if path is not None:
        save_figure(fig, path, dpi=dpi)
    return fig
