"""The :class:`Propensities` result: examination probability per position with intervals."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from scipy.stats import norm
from scipy.stats import t as t_dist

from .._core._io import atomic_write_text, check_output, read_json
from .._core._result import Result, check_format
from .._core._validation import (
    DataFormatError,
    InputError,
    check_alpha,
    check_theta_scale,
)
from ._context_result import ContextCurves, ContextModel
from ._intervals import ratio_score_interval

__all__ = ["Propensities"]

_FORMAT_VERSION = 1
_CI_METHODS = ("normal", "t", "score", "percentile")


def _as_float_array(values: Any, name: str, size: int | None = None) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)  # copy: results own their arrays
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-d, got shape {arr.shape}")
    if size is not None and arr.size != size:
        raise InputError(f"{name} must have {size} entries (one per position), got {arr.size}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Propensities(Result):
    r"""Estimated examination propensities :math:`\theta_p`, p = 1..K (DESIGN §2).

    Parameters
    ----------
    theta : array ``[K]``
        ``theta[p - 1]`` is the propensity of position ``p``. Normalized so
        that ``theta[0] == 1`` unless ``absolute`` is True. NaN marks a
        position that the data do not identify (always listed in ``warnings``).
    se : array ``[K]``
        Standard error of :math:`\log \hat\theta_p` (the log scale, on which
        the intervals are built). 0 for the reference position, NaN where not
        available.
    method : str
        Estimator name (``"swap"``, ``"randomized"``, ``"randpair"``,
        ``"harvest-pivot"``, ``"harvest-adjacent"``, ``"harvest-allpairs"``,
        ``"em"``, or ``"<name>+bootstrap"``).
    n_sessions : int
        Sessions that entered the estimate.
    n : array ``[K]``
        Impressions (displayed results) used at each position.
    warnings : tuple of str
        Diagnostics, numbered in :meth:`summary`.
    absolute : bool
        True if the estimator identifies the absolute level of ``theta``.
    replicates : array ``[B, K]``, optional
        Bootstrap replicates of :math:`\log\hat\theta`.
    ci_method : {"normal", "t", "score", "percentile"}
        ``normal``: :math:`\hat\theta\exp(\pm z\,\mathrm{se})` (delta method or
        bootstrap SE); ``t``: the same with the Student-t quantile on ``df``
        degrees of freedom (a jackknife or sandwich SE from a few clusters);
        ``score``: the score interval of a ratio of two independent binomial
        rates from ``ci_counts`` (:func:`._intervals.ratio_score_interval`);
        ``percentile``: quantiles of ``replicates``.
    df : array ``[K]``, optional
        Degrees of freedom of ``se`` per position (``ci_method="t"``).
    ci_counts : array ``[K, 4]``, optional
        ``(clicks, impressions)`` of the numerator then of the denominator of
        each position's ratio (``ci_method="score"``).
    sensitivity : array ``[K, 2]``, optional
        A second estimate of the same quantity by the same estimator with its
        nuisance model smoothed otherwise: its offset :math:`\log\hat\theta'_p -
        \log\hat\theta_p` and the SE of :math:`\log\hat\theta'_p`. The
        ``normal`` and ``t`` intervals are then the hull of both estimates'
        intervals, so they span that smoothing's bias (regression EM,
        :func:`~clickrank.propensity.regression_em`). NaN rows add nothing.
    info : dict
        Method-specific details (JSON-serializable), e.g. ``{"route": "top"}``.
    contexts : ContextCurves or ContextModel, optional
        With ``estimate_propensities(..., context=...)``: the curve of every context
        value (raw and empirical-Bayes), the prior they are shrunk toward, and the
        test of one curve for all (:class:`~clickrank.propensity.ContextCurves`);
        with ``context_features=``, the curve as a function of the context's features
        and the test of no feature effect (:class:`~clickrank.propensity.ContextModel`).
        ``theta`` is then the pooled curve of all sessions.

    Notes
    -----
    The first user of the result contract (:class:`clickrank._core._result.Result`):
    :meth:`conf_int` is a frame like every result's (the ``[K, 2]`` array of earlier
    versions is ``conf_int(a).select("lower", "upper").to_numpy()``).
    """

    FORMAT: ClassVar[str] = "clickrank.propensities"
    VERSION: ClassVar[int] = _FORMAT_VERSION

    theta: np.ndarray
    se: np.ndarray
    method: str
    n_sessions: int
    n: np.ndarray
    warnings: tuple[str, ...] = ()
    absolute: bool = False
    replicates: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    ci_method: str = "normal"
    df: np.ndarray | None = None
    ci_counts: np.ndarray | None = None
    sensitivity: np.ndarray | None = None
    contexts: Any = None  # ContextCurves or ContextModel

    def __post_init__(self) -> None:
        theta = _as_float_array(self.theta, "theta")
        k = theta.size
        if k < 1:
            raise InputError("theta must hold at least one position")
        se = _as_float_array(self.se, "se", k)
        n = _as_float_array(self.n, "n", k)
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "se", se)
        object.__setattr__(self, "n", n)
        if self.replicates is not None:
            rep = np.array(self.replicates, dtype=np.float64)
            if rep.ndim != 2 or rep.shape[1] != k:
                raise InputError(f"replicates must have shape [B, {k}], got {rep.shape}")
            rep.setflags(write=False)
            object.__setattr__(self, "replicates", rep)
        if self.ci_method not in _CI_METHODS:
            raise InputError(f"ci_method must be one of {_CI_METHODS}, got {self.ci_method!r}")
        if self.ci_method == "percentile" and self.replicates is None:
            raise InputError("ci_method='percentile' needs bootstrap replicates")
        if self.df is not None:
            df = _as_float_array(self.df, "df", k)
            if np.any(df[np.isfinite(df)] <= 0):
                raise InputError("df must be positive")
            object.__setattr__(self, "df", df)
        if self.ci_method == "t" and self.df is None:
            raise InputError("ci_method='t' needs df (degrees of freedom per position)")
        if self.ci_counts is not None:
            cc = np.array(self.ci_counts, dtype=np.float64)
            if cc.shape != (k, 4):
                raise InputError(f"ci_counts must have shape [{k}, 4], got {cc.shape}")
            cc.setflags(write=False)
            object.__setattr__(self, "ci_counts", cc)
        if self.ci_method == "score" and self.ci_counts is None:
            raise InputError("ci_method='score' needs ci_counts")
        if self.sensitivity is not None:
            sens = np.array(self.sensitivity, dtype=np.float64)
            if sens.shape != (k, 2):
                raise InputError(f"sensitivity must have shape [{k}, 2], got {sens.shape}")
            if self.ci_method not in ("normal", "t"):
                raise InputError("sensitivity widens the 'normal' and 't' intervals only, "
                                 f"not ci_method={self.ci_method!r}")  # fmt: skip
            sens.setflags(write=False)
            object.__setattr__(self, "sensitivity", sens)
        warns = list(self.warnings)
        for w in check_theta_scale(theta, absolute=bool(self.absolute)):
            if not any(x.startswith(w.split(":")[0] + ": theta =") for x in warns):
                warns.append(w)
        for p in np.flatnonzero(~np.isfinite(theta)) + 1:
            if not any(w.startswith(f"position {p}:") for w in warns):
                warns.append(f"position {p}: not identified by the data (theta is NaN)")
        object.__setattr__(self, "warnings", tuple(warns))
        object.__setattr__(self, "n_sessions", int(self.n_sessions))

    # ------------------------------------------------------------------ basics
    @property
    def K(self) -> int:  # noqa: N802 - the paper's symbol
        """Number of positions."""
        return int(self.theta.size)

    @property
    def positions(self) -> np.ndarray:
        """1-based positions ``1..K``."""
        return np.arange(1, self.K + 1)

    @property
    def identified(self) -> np.ndarray:
        """Bool ``[K]``: True where ``theta`` is a finite estimate (what the estimate alone
        tells; :func:`clickrank.propensity.identified` also needs a click at the position
        somewhere in the log, as ``auto`` and the learner do)."""
        return np.isfinite(self.theta)

    def __len__(self) -> int:
        return self.K

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self.theta, dtype=dtype)

    def conf_int(self, alpha: float = 0.05) -> pl.DataFrame:
        r"""Confidence intervals at level ``1 - alpha``, one row per position.

        Columns ``position``, ``estimate`` (θ̂), ``lower``, ``upper``, ``alpha``
        (the contract of every result, :class:`clickrank._core._result.Result`);
        ``.select("lower", "upper").to_numpy()`` gives the ``[K, 2]`` array.
        Unidentified positions have NaN bounds.

        Notes
        -----
        ``ci_method="normal"``: the normal interval on the log scale,
        :math:`\hat\theta_p \exp(\pm z_{1-\alpha/2}\,\mathrm{se}_p)` (delta
        method or bootstrap SE; positive and asymmetric). ``"percentile"``:
        the percentile interval of the bootstrap replicates of :math:`\log\hat\theta_p`.
        The reference position (se 0) gets a zero-width interval.
        """
        alpha = check_alpha(alpha)
        ci = self._bounds(alpha)
        return pl.DataFrame(
            {
                "position": pl.Series(self.positions, dtype=pl.UInt16),
                "estimate": self.theta,
                "lower": ci[:, 0],
                "upper": ci[:, 1],
                "alpha": np.full(self.theta.size, alpha),
            }
        )

    def _bounds(self, alpha: float) -> np.ndarray:
        """The ``[K, 2]`` (lower, upper) array of :meth:`conf_int`."""
        if self.ci_method == "percentile":
            with np.errstate(all="ignore"):
                lo, hi = np.nanquantile(self.replicates, [alpha / 2, 1 - alpha / 2], axis=0)
            out = np.column_stack([np.exp(lo), np.exp(hi)])
        elif self.ci_method == "score":
            c = self.ci_counts
            out = ratio_score_interval(c[:, 0], c[:, 1], c[:, 2], c[:, 3], norm.isf(alpha / 2))
            out[0] = self.theta[0]  # the reference position
        else:
            q = (
                t_dist.isf(alpha / 2, np.where(np.isfinite(self.df), self.df, np.inf))
                if self.ci_method == "t"
                else norm.isf(alpha / 2)
            )
            lo = -q * self.se  # the bounds' offsets from log theta
            hi = q * self.se
            if self.sensitivity is not None:  # the hull with the second estimate's interval
                shift, se2 = self.sensitivity[:, 0], self.sensitivity[:, 1]
                ok = np.isfinite(shift) & np.isfinite(se2)
                lo = np.where(ok, np.fmin(lo, shift - q * se2), lo)
                hi = np.where(ok, np.fmax(hi, shift + q * se2), hi)
            with np.errstate(all="ignore"):
                out = np.column_stack([self.theta * np.exp(lo), self.theta * np.exp(hi)])
            zero = self.theta == 0
            out[zero] = [0.0, np.inf]
        out[~self.identified] = np.nan
        return out

    # ------------------------------------------------------------------ views
    def to_frame(self, alpha: float = 0.05) -> pl.DataFrame:
        """One row per position: position, theta, se (log scale), lower, upper, n.

        With :attr:`contexts`, the rows of every context follow those of the pooled
        curve (:meth:`ContextCurves.to_frame`): the context columns lead (null in the
        pooled rows), and ``theta_raw``, ``se_log_raw``, ``lower_raw``, ``upper_raw``
        and ``shrinkage`` are added (the pooled rows' raw values are their own).
        """
        pooled = self._pooled_frame(alpha)
        if self.contexts is None:
            return pooled
        per = self.contexts.to_frame(alpha)
        lead = [pl.lit(None, dtype=pl.String).alias(c) for c in self.contexts.columns]
        raw = [pl.col(a).alias(f"{a}_raw") for a in ("theta", "se_log", "lower", "upper")]
        pooled = pooled.select(*lead, pl.all(), *raw, shrinkage=pl.lit(np.nan))
        return pl.concat([pooled, per.select(pooled.columns)], how="vertical_relaxed")

    def _pooled_frame(self, alpha: float) -> pl.DataFrame:
        ci = self._bounds(check_alpha(alpha))
        return pl.DataFrame(
            {
                "position": pl.Series(self.positions, dtype=pl.UInt16),
                "theta": self.theta,
                "se_log": self.se,
                "lower": ci[:, 0],
                "upper": ci[:, 1],
                "n": self.n,
                "identified": self.identified,
            }
        )

    def summary(self, alpha: float = 0.05) -> str:
        """A readable table (position, θ, CI, SE of log θ, n); with :attr:`contexts`, the
        homogeneity test and each context's curve (shrunk, its interval, raw, shrinkage,
        prior); then numbered warnings."""
        ci = self._bounds(check_alpha(alpha))
        level = f"{100 * (1 - alpha):g}%"
        scale = "absolute" if self.absolute else "relative to position 1"
        ci_kind = {
            "percentile": "bootstrap percentile",
            "normal": "normal on log scale, bootstrap SE"
            if self.replicates is not None
            else "normal on log scale, delta-method SE",
            "t": "Student t on log scale, cluster SE",
            "score": "score interval of a ratio of binomial rates",
        }[self.ci_method]
        if self.sensitivity is not None:
            ci_kind += ", spanning a second smoothing"
        lines = [
            f"Propensities ({self.method}; {scale}; {level} CI: {ci_kind})",
            f"sessions: {self.n_sessions:,}",
            "",
            f"{'pos':>4} {'theta':>9} {'lower':>9} {'upper':>9} {'se(log)':>9} {'n':>12}",
        ]

        def fmt(x: float) -> str:
            return f"{x:9.4f}" if np.isfinite(x) else f"{'nan':>9}"

        for i in range(self.K):
            lines.append(
                f"{i + 1:>4} {fmt(self.theta[i])} {fmt(ci[i, 0])} {fmt(ci[i, 1])} "
                f"{fmt(self.se[i])} {self.n[i]:>12,.0f}"
            )
        if self.contexts is not None:
            lines += self.contexts.summary_lines(alpha)
        if self.warnings:
            lines += ["", "Warnings:"]
            lines += [f"[{j}] {w}" for j, w in enumerate(self.warnings, 1)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        ci = self._bounds(0.05)
        rows = "".join(
            f"<tr><td>{i + 1}</td><td>{self.theta[i]:.4f}</td><td>{ci[i, 0]:.4f}</td>"
            f"<td>{ci[i, 1]:.4f}</td><td>{self.n[i]:,.0f}</td></tr>"
            for i in range(self.K)
        )
        warns = "".join(f"<li>{w}</li>" for w in self.warnings)
        return (
            f"<p><b>Propensities</b> ({self.method}, {self.n_sessions:,} sessions)</p>"
            "<table><tr><th>position</th><th>θ</th><th>lower 95%</th><th>upper 95%</th>"
            f"<th>n</th></tr>{rows}</table>" + (f"<ol>{warns}</ol>" if warns else "")
        )

    # ------------------------------------------------------------------ IO
    def to_dict(self, alpha: float = 0.05) -> dict:
        """JSON-ready dict; ``theta``, ``lower``, ``upper`` use null for NaN."""

        def clean(a: np.ndarray) -> list:
            return [float(x) if np.isfinite(x) else None for x in np.asarray(a, dtype=float)]

        ci = self._bounds(check_alpha(alpha))
        out = {
            "format": "clickrank.propensities",
            "version": _FORMAT_VERSION,
            "method": self.method,
            "theta": clean(self.theta),
            "lower": clean(ci[:, 0]),
            "upper": clean(ci[:, 1]),
            "alpha": alpha,
            "se": clean(self.se),
            "se_scale": "log",
            "ci_method": self.ci_method,
            "n": clean(self.n),
            "n_sessions": self.n_sessions,
            "absolute": self.absolute,
            "warnings": list(self.warnings),
            "info": self.info,
        }
        if self.replicates is not None:
            out["replicates"] = [clean(r) for r in self.replicates]
        if self.df is not None:
            out["df"] = clean(self.df)
        if self.ci_counts is not None:
            out["ci_counts"] = [clean(r) for r in self.ci_counts]
        if self.sensitivity is not None:
            out["sensitivity"] = [clean(r) for r in self.sensitivity]
        if self.contexts is not None:
            out["contexts"] = self.contexts.to_dict(alpha)
        return out

    def save(self, path: str | os.PathLike, *, alpha: float = 0.05, overwrite: bool = True) -> Path:
        """Write JSON atomically (temporary file in the same folder, then rename)."""
        path = Path(path)
        check_output(path, force=overwrite, what="", hint="overwrite=True")
        text = json.dumps(self.to_dict(alpha), indent=2)
        atomic_write_text(path, text + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Propensities:
        """Read a file written by :meth:`save` (or any JSON with a ``theta`` list)."""
        path = Path(path)
        obj = read_json(path)
        if not isinstance(obj, dict) or not isinstance(obj.get("theta"), list):
            raise DataFormatError("expected a JSON object with a 'theta' list", path=path)
        check_format(obj, cls.FORMAT, cls.VERSION, path=path)
        try:
            return cls.from_dict(obj)
        except InputError as err:
            raise DataFormatError(str(err), path=path) from None

    @classmethod
    def from_dict(cls, obj: dict) -> Propensities:
        """Rebuild from :meth:`to_dict` (or any dict with a ``theta`` list; null = NaN).

        ``lower``/``upper``/``alpha`` are derived and ignored: the intervals
        follow from ``se`` (or ``replicates``) and ``ci_method``.
        """
        return _from_dict(cls, obj)

    # ------------------------------------------------------------------ plot
    def plot(
        self,
        true_theta: Any = None,
        ax: Any = None,
        path: str | os.PathLike | None = None,
        *,
        alpha: float = 0.05,
    ):
        """Estimate with its confidence band against position (log-scale y).

        With :attr:`contexts`, each context's empirical-Bayes curve with its band
        (:meth:`ContextCurves.bounds`), the pooled curve dashed and the homogeneity
        test's p-value in the title.

        Parameters
        ----------
        true_theta : array ``[>= K]`` or ``[C, >= K]``, optional
            The true curve (simulations), drawn normalized like the estimate; with
            :attr:`contexts`, one curve per context in the order of
            ``contexts.labels`` may be given instead.
        ax : matplotlib Axes, optional
            Draw into this axes; otherwise a new figure is created.
        path : path, optional
            Also save a PNG there.

        Returns
        -------
        matplotlib.figure.Figure
        """
        return _plot(self, true_theta, ax, path, alpha)


def _from_dict(cls: type[Propensities], obj: dict) -> Propensities:
    """:meth:`Propensities.from_dict`: arrays from lists, null as NaN."""
    if not isinstance(obj.get("theta"), list):
        raise InputError("expected a dict with a 'theta' list")

    def arr(key: str, default: Any) -> np.ndarray:
        vals = obj.get(key, default)
        if vals is None:
            vals = default
        return np.array([np.nan if v is None else v for v in vals], dtype=float)

    theta = arr("theta", [])
    k = theta.size
    se = arr("se", [np.nan] * k)
    if obj.get("se_scale", "log") != "log":
        raise InputError("only se_scale 'log' is supported (key se_scale)")
    rep = obj.get("replicates")
    cc = obj.get("ci_counts")
    sens = obj.get("sensitivity")
    ctx = obj.get("contexts")
    return cls(
        theta=theta,
        se=se,
        method=str(obj.get("method", "unknown")),
        n_sessions=int(obj.get("n_sessions", 0)),
        n=arr("n", [np.nan] * k),
        warnings=tuple(obj.get("warnings", ())),
        absolute=bool(obj.get("absolute", False)),
        replicates=None
        if rep is None
        else np.array([[np.nan if v is None else v for v in r] for r in rep], dtype=float),
        info=dict(obj.get("info", {})),
        ci_method=str(obj.get("ci_method", "normal")),
        df=None if obj.get("df") is None else arr("df", []),
        ci_counts=None
        if cc is None
        else np.array([[np.nan if v is None else v for v in r] for r in cc], dtype=float),
        sensitivity=None
        if sens is None
        else np.array([[np.nan if v is None else v for v in r] for r in sens], dtype=float),
        contexts=None if ctx is None else _contexts_from_dict(ctx, cls),
    )


def _contexts_from_dict(obj: Any, cls: type[Propensities]) -> Any:
    """The ``contexts`` of a saved result: a feature model or curves per value."""
    if isinstance(obj, dict) and obj.get("model") == ContextModel.model:
        return ContextModel.from_dict(obj)
    return ContextCurves.from_dict(obj, cls)


def _plot(p: Propensities, true_theta: Any, ax: Any, path: Any, alpha: float):
    """:meth:`Propensities.plot`: the estimate and its band on a log axis, the truth dashed."""
    from .._core._figures import finish, new_axes

    if p.contexts is not None:
        fig, ax, own = new_axes(ax, (6.6, 4.3))
        return finish(_plot_contexts(p, true_theta, ax, alpha), path, own=own)
    fig, ax, own = new_axes(ax, (6, 4))
    pos = p.positions
    ci = p._bounds(check_alpha(alpha))
    ok = p.identified
    ax.fill_between(
        pos[ok],
        ci[ok, 0],
        ci[ok, 1],
        alpha=0.25,
        color="C0",
        label=f"{100 * (1 - alpha):g}% CI",
    )
    ax.plot(pos[ok], p.theta[ok], "o-", color="C0", label=f"estimate ({p.method})")
    if true_theta is not None:
        t = _scaled_truth(true_theta, p)
        ax.plot(np.arange(1, t.size + 1), t, "k--", label="true θ")
    if (~ok).any():
        ax.plot([], [], " ", label=f"not identified: {pos[~ok].tolist()}")
    _theta_axes(ax, p, f"Position bias: {p.method}, {p.n_sessions:,} sessions")
    ax.legend()
    return finish(fig, path, own=own)


def _scaled_truth(true_theta: Any, p: Propensities) -> np.ndarray:
    """A true curve's first ``K`` positions on the estimate's scale (θ₁ = 1 if relative)."""
    t = np.asarray(true_theta, dtype=float)[: p.K]
    return t if p.absolute else t / t[0]


def _theta_axes(ax: Any, p: Propensities, title: str, **title_kw: Any) -> None:
    """Log-scale θ against position, labelled, ticked at every position and gridded."""
    ax.set_yscale("log")
    ax.set_xlabel("position (rank)")
    ax.set_ylabel("examination propensity θ" + ("" if p.absolute else " (θ₁ = 1)"))
    ax.set_xticks(p.positions)
    ax.set_title(title, **title_kw)
    ax.grid(True, which="both", alpha=0.3)


def _plot_contexts(p: Propensities, true_theta: Any, ax: Any, alpha: float) -> Any:
    """:meth:`Propensities.plot` with :attr:`~Propensities.contexts`: each context's
    empirical-Bayes curve with its band (:meth:`ContextCurves.bounds`), the pooled curve
    dashed, the truth (one curve, or one per context: a ``[C, >= K]`` array) dotted.
    Returns the figure."""
    ctx = p.contexts
    assert ctx is not None
    bounds = ctx.bounds(alpha)
    truth = None if true_theta is None else np.atleast_2d(np.asarray(true_theta, dtype=float))
    per_context = truth is not None and np.ndim(true_theta) == 2
    if truth is not None and (truth.ndim != 2 or truth.shape[0] not in (1, len(ctx.labels))):
        raise InputError(
            f"true_theta must be one curve or one per context ({len(ctx.labels)} rows), "
            f"got shape {list(np.shape(true_theta))}"
        )
    # a feature model has a curve per distinct feature vector: it shows a few spanning them
    rows = ctx.shown() if hasattr(ctx, "shown") else range(len(ctx.labels))
    labels, sessions = ctx.labels, ctx.n_sessions
    for j, i in enumerate(rows):
        col = f"C{j % 10}"
        ok = np.isfinite(ctx.theta[i])
        x = p.positions[ok]
        ax.fill_between(x, bounds[i, ok, 0], bounds[i, ok, 1], color=col, alpha=0.15, lw=0)
        ax.plot(x, ctx.theta[i, ok], "o-", ms=3.5, lw=1.2, color=col,
                label=f"{labels[i]} ({sessions[i]:,} sessions)")  # fmt: skip
        if per_context:
            t = _scaled_truth(truth[i], p)
            ax.plot(np.arange(1, t.size + 1), t, ":", lw=1.2, color=col)
    ok = p.identified
    ax.plot(
        p.positions[ok], p.theta[ok], "k--", lw=1.5, label=f"pooled ({p.n_sessions:,} sessions)"
    )
    if truth is not None and not per_context:
        t = _scaled_truth(truth[0], p)
        ax.plot(np.arange(1, t.size + 1), t, "k:", lw=1.2, label="true θ")
    h = ctx.homogeneity.get("p_value", np.nan)
    test = f"test of one curve: p = {h:.2g}" if h is not None and np.isfinite(h) else "not tested"
    title = f"Position bias by {', '.join(ctx.columns)} ({p.method}; {test})"
    _theta_axes(ax, p, title, fontsize=10)
    ax.legend(fontsize=8, title=f"{100 * (1 - alpha):g}% CI bands", title_fontsize=8)
    return ax.figure
