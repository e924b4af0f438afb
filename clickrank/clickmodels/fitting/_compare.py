r"""Fit several click models to one log and compare them on held-out sessions.

:func:`compare_click_models` splits the sessions of a log into training and
test sessions (by session id and seed, :mod:`._sessions`), fits every model
on the training sessions and evaluates it on the test sessions
(:meth:`FittedClickModel.evaluate`). The model that predicts held-out clicks
best is the best available description of how the users click, and it
decides which correction a training target should use
(:meth:`ClickModelComparison.recommend`):

=====================  ==============================================================
best model             correction
=====================  ==============================================================
PBM                    IPS with the fitted :math:`\theta_r` (``targets.ips``)
UBM, DCM, SDBN, DBN    examination given the clicks above (``targets.cascade_ips``;
                       Vardasbi et al. (2020a))
cascade                the fitted attractiveness as gains (``targets.fitted_relevance``):
                       under a strict cascade a document below an attractive one is
                       never examined, so no propensity can correct its clicks
trust                  affine correction (``targets.affine``; Vardasbi et al.
                       (2020b))
=====================  ==============================================================

The criterion is the test *conditional* perplexity (the per-rank form of the
held-out log-likelihood): a correction needs the probability that a rank is
examined given what happened above it, which is exactly what the conditional
probabilities score. The marginal perplexity is reported next to it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from ..._core._result import Result
from ..._core._validation import EstimationError, InputError, check_alpha, check_choice
from ._base import ClickModelEvaluation, FittedClickModel
from ._sessions import Sessions, sessions_from_log

__all__ = [
    "compare_click_models",
    "ClickModelComparison",
    "fit_click_model",
    "FIT_MODELS",
    "DEFAULT_MODELS",
    "CORRECTIONS",
]

#: Names accepted by :func:`fit_click_model`.
FIT_MODELS = ("pbm", "ubm", "cascade", "dcm", "sdbn", "dbn", "trust")
#: Models compared by default (the trust-bias fit is opt-in).
DEFAULT_MODELS = ("pbm", "ubm", "cascade", "dcm", "sdbn", "dbn")
#: The correction each best-fitting model calls for.
CORRECTIONS = {
    "pbm": "ips",
    "ubm": "cascade_ips",
    "cascade": "fitted_relevance",
    "dcm": "cascade_ips",
    "sdbn": "cascade_ips",
    "dbn": "cascade_ips",
    "trust": "affine",
}
#: The model ``clickrank train --target NAME`` fits to the log for a model-aware target unless
#: ``--set click_model=`` names another (``clickrank.specs.names.MODEL_AWARE``, repeated here:
#: the clicks layer cannot import specs); the recommendation adds ``--set click_model=`` when
#: the best model is not the default.
_CLI_REFIT = {"affine": "trust", "cascade-ips": "dbn", "fitted-relevance": "dbn"}
#: Below this median of training impressions per (query, doc) pair, the comparison warns.
SPARSE_IMPRESSIONS = 10


def _fitter(name: str):
    from ._cascade import fit_cascade, fit_dbn, fit_dcm, fit_sdbn
    from ._position import fit_pbm, fit_trust, fit_ubm

    return {
        "pbm": fit_pbm,
        "ubm": fit_ubm,
        "cascade": fit_cascade,
        "dcm": fit_dcm,
        "sdbn": fit_sdbn,
        "dbn": fit_dbn,
        "trust": fit_trust,
    }[name]


def fit_click_model(
    log: Any,
    model: str = "dbn",
    *,
    shrinkage: float = 0.0,
    max_iter: int | None = None,
    tol: float | None = None,
) -> FittedClickModel:
    """Fit a click model to a click log by maximum likelihood (EM).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame, parquet path or :class:`Sessions`
        Click log (DESIGN §2): ``session``, ``query``, ``position``, ``doc``, ``click``.
    model : str
        One of :data:`FIT_MODELS`: ``pbm`` (Craswell et al. (2008)), ``ubm``
        (Dupret & Piwowarski (2008)), ``cascade`` (Craswell et al. (2008)),
        ``dcm`` (Guo et al. (2009)), ``sdbn`` / ``dbn`` (Chapelle & Zhang
        (2009)), ``trust`` (two-class trust bias; Agarwal et al. (2019b)).
    shrinkage : float
        Pseudo-observations :math:`m` pulling every per-pair probability
        towards the pooled estimate (0: maximum likelihood).
    max_iter, tol : int, float, optional
        EM stops when no parameter moves by more than ``tol`` (defaults per model).

    Returns
    -------
    FittedClickModel
        With ``summary()``, ``to_frame()``, ``parameters()``, ``evaluate(log)``,
        ``sample(log, seed=)``, ``relevance()`` and ``click_model()``.

    Examples
    --------
    >>> import clickrank as cr
    >>> from clickrank.clickmodels import fit_click_model
    >>> from clickrank.policies import DeterministicPolicy
    >>> data = cr.synthetic(20, 10, seed=0)
    >>> log = cr.simulate(data, policy=DeterministicPolicy(data.X[:, 0]),
    ...                   click_model="dbn", n_sessions=2000, top_k=5, seed=0)
    >>> fit_click_model(log, "dbn").name
    'dbn'
    """
    check_choice(model, FIT_MODELS, name="model")
    sessions = log if isinstance(log, Sessions) else sessions_from_log(log)
    if sessions.test.any():
        sessions = sessions.train()
    if sessions.n_unique == 0:
        raise EstimationError("no sessions to fit")
    kw: dict[str, Any] = {"shrinkage": float(shrinkage)}
    if max_iter is not None:
        kw["max_iter"] = int(max_iter)
    if tol is not None:
        kw["tol"] = float(tol)
    t0 = time.perf_counter()
    fitted = _fitter(model)(sessions, **kw)
    fitted.info["seconds"] = round(time.perf_counter() - t0, 3)
    return fitted


@dataclass(frozen=True, eq=False)
class ClickModelComparison(Result):
    """Click models fitted on training sessions and evaluated on test sessions.

    Attributes
    ----------
    fits : dict
        Model name -> :class:`FittedClickModel`.
    evaluations : dict
        Model name -> :class:`ClickModelEvaluation` on the test sessions (on
        the training sessions, in-sample, when ``test_fraction`` was 0).
    n_train, n_test : int
        Training and test sessions.
    test_fraction, seed : float, int
    seconds : dict
        Model name -> fit time in seconds.
    """

    fits: dict[str, FittedClickModel]
    evaluations: dict[str, ClickModelEvaluation]
    n_train: int
    n_test: int
    test_fraction: float
    seed: int
    seconds: dict[str, float] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "clickrank.click_model_comparison"

    def conf_int(self, alpha: float = 0.05) -> pl.DataFrame:
        r"""Normal interval of each model's mean log-likelihood per (test) session.

        :math:`\bar\ell \pm z_{1-\alpha/2}\,\mathrm{sd}(\ell)/\sqrt{n}` over the
        (weighted) sessions; columns ``model``, ``estimate``, ``lower``,
        ``upper``, ``alpha``. For the difference of two models use
        :meth:`difference` (paired, much narrower).
        """
        from scipy.stats import norm

        a = check_alpha(alpha)
        z = float(norm.isf(a / 2))
        rows = []
        for m, ev in self.evaluations.items():
            w, ll = ev.session_weight, ev.session_log_likelihood
            n = float(w.sum())
            mean = float((w * ll).sum() / n) if n else math.nan
            var = float((w * (ll - mean) ** 2).sum() / max(n - 1, 1)) if n else math.nan
            se = math.sqrt(var / n) if n else math.nan
            rows.append(
                {
                    "model": m,
                    "estimate": mean,
                    "lower": mean - z * se,
                    "upper": mean + z * se,
                    "alpha": a,
                }
            )
        return pl.DataFrame(rows)

    @classmethod
    def from_dict(cls, d: dict) -> ClickModelComparison:
        """Not available: the dict keeps the fitted parameters' tables, not the fitted models."""
        raise NotImplementedError(
            "a ClickModelComparison cannot be rebuilt from its dict (the fitted models are "
            "not serialized); refit with compare_click_models"
        )

    @property
    def in_sample(self) -> bool:
        """True when there were no test sessions (evaluated on the training sessions)."""
        return self.n_test == 0

    @property
    def best(self) -> str:
        """The model with the lowest conditional perplexity (module docstring).

        Models within a relative :math:`10^{-7}` of the lowest value tie (a
        model that nests the data's model fits it exactly as well); the one
        with the fewest parameters wins the tie.
        """
        low = min(e.conditional_perplexity for e in self.evaluations.values())
        tied = [
            m for m, e in self.evaluations.items() if e.conditional_perplexity <= low * (1 + 1e-7)
        ]
        return min(tied, key=lambda m: self.fits[m].n_params)

    def recommend(self, log: str = "LOG.parquet", data: str = "DATA") -> dict[str, Any]:
        """The correction the best model calls for, and how to run it.

        Parameters
        ----------
        log, data : str
            The log and the training data as the printed command names them
            (placeholders by default; ``clickrank fit-clicks`` passes its LOG).

        Returns
        -------
        dict
            ``model`` (the best), ``correction`` (the target function),
            ``reason``, ``command`` (the ``clickrank`` command line(s) to run),
            ``call`` (the Python call, with ``fit`` = the fitted best model),
            ``note`` (None: the command corrects with the best model itself,
            through ``--click-model`` when it is not the target's default) and
            ``warning`` (:meth:`reliability`, or None).
        """
        best = self.best
        corr = CORRECTIONS[best]
        ev = self.evaluations[best]
        others = sorted(
            (e.conditional_perplexity, m) for m, e in self.evaluations.items() if m != best
        )
        runner = f"; next {others[0][1]} {others[0][0]:.4f}" if others else ""
        how = {
            "ips": "clickrank.targets.ips(data, log, fit.globals['theta'])",
            "cascade_ips": "clickrank.targets.cascade_ips(data, log, fit)",
            "fitted_relevance": "clickrank.targets.fitted_relevance(data, fit)",
            "affine": "clickrank.targets.affine(data, log, fit)",
        }[corr]
        target = corr.replace("_", "-")
        train = f"clickrank train --data {data} --log {log} --target {target}"
        if corr == "ips":
            # the PBM's theta is what the EM propensity estimator fits
            command = (
                f"clickrank propensity {log} --method em --out theta.json\n"
                f"{train} --propensities theta.json --out ips/"
            )
        else:
            refit = _CLI_REFIT.get(target)
            model = f" --set click_model={best}" if refit is not None and refit != best else ""
            command = f"{train}{model} --out {target}/"
        note = None
        warning = self.reliability()
        return {
            "model": best,
            "correction": corr,
            "command": command,
            "call": how,
            "note": note,
            "warning": warning,
            "reason": f"lowest {'in-sample' if self.in_sample else 'test'} conditional "
            f"perplexity: {best} {ev.conditional_perplexity:.4f}{runner}",
        }

    def reliability(self) -> str | None:
        r"""Why the comparison should not be trusted, or None.

        Two checks. **Sparse logs**: every model but the position-only ones
        has one or two parameters per (query, doc) pair; when the median pair
        has fewer than :data:`SPARSE_IMPRESSIONS` training impressions, or more
        than a fifth of the held-out impressions show a pair never seen in
        training, the held-out perplexity measures how each model guesses
        the click probability of results it has (almost) never seen (its
        prior, the clipping, a per-rank click floor such as the trust model's
        :math:`\beta_k`), not how users examine a list. **No separation**: the
        paired difference of the best and the runner-up in log-likelihood per
        test session (:meth:`difference`) is within two standard errors.
        """
        best = self.best
        fit, ev = self.fits[best], self.evaluations[best]
        imp = np.asarray(fit.impressions, dtype=np.float64)
        imp = imp[imp > 0]
        median = float(np.median(imp)) if imp.size else 0.0
        reasons = []
        if median < SPARSE_IMPRESSIONS or ev.unseen_share > 0.2:
            reasons.append(
                f"the log is sparse: {fit.n_params:,} {best} parameters from "
                f"{self.n_train:,} sessions, a median of {median:g} training impressions per "
                f"(query, doc) pair, and {ev.unseen_share:.0%} of the evaluated impressions "
                "show a pair never seen in training; the perplexities then measure how each "
                "model guesses the clicks on results it has barely seen (its prior and "
                "clipping; the trust model's per-rank click floor keeps its guesses away "
                "from 0 and 1), not how users examine a list. Fit more sessions, or pool "
                "the per-document estimates with --shrinkage"
            )
        rivals = [m for m in self.evaluations if m != best]
        if rivals and not self.in_sample:
            runner = min(rivals, key=lambda m: self.evaluations[m].conditional_perplexity)
            d, se = self.difference(best, runner)
            if se > 0 and abs(d) < 2 * se:
                reasons.append(
                    f"{best} and {runner} are not separated: their log-likelihood per test "
                    f"session differs by {d:+.4f} (standard error {se:.4f})"
                )
        if not reasons:
            return None
        return "the comparison is unreliable: " + "; ".join(reasons) + "."

    def difference(self, a: str, b: str) -> tuple[float, float]:
        r"""Mean log-likelihood per test session of model ``a`` minus model ``b``, and its SE.

        Paired over the same sessions: with :math:`d_s = \ell_a(s) - \ell_b(s)`,
        the mean :math:`\bar d` and :math:`\mathrm{se} = \mathrm{sd}(d)/\sqrt{n}`
        (sessions are independent). :math:`\bar d > 0` favours ``a``; a
        :math:`|\bar d|` within two or three standard errors does not separate them.
        """
        ea, eb = self.evaluations[a], self.evaluations[b]
        w = ea.session_weight
        d = ea.session_log_likelihood - eb.session_log_likelihood
        n = float(w.sum())
        mean = float((w * d).sum() / n)
        var = float((w * (d - mean) ** 2).sum() / max(n - 1, 1))
        return mean, float(np.sqrt(var / n))

    def to_frame(self) -> pl.DataFrame:
        """One row per model: parameters, fit statistics and test metrics."""
        rows = []
        for name, fit in self.fits.items():
            ev = self.evaluations[name]
            rows.append(
                {
                    "model": name,
                    "parameters": fit.n_params,
                    "iterations": fit.iterations,
                    "converged": fit.converged,
                    "seconds": self.seconds.get(name, np.nan),
                    "train_log_likelihood": fit.log_likelihood,
                    "log_likelihood_per_session": ev.log_likelihood_per_session,
                    "perplexity": ev.perplexity,
                    "conditional_perplexity": ev.conditional_perplexity,
                    "ctr_rmse": ev.ctr_rmse,
                }
            )
        return pl.DataFrame(rows)

    def by_rank(self) -> pl.DataFrame:
        """Perplexity and conditional perplexity per model and rank (long format)."""
        return pl.concat([ev.to_frame() for ev in self.evaluations.values()])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (no per-pair parameters)."""
        return {
            "n_train": self.n_train,
            "n_test": self.n_test,
            "test_fraction": self.test_fraction,
            "seed": self.seed,
            "in_sample": self.in_sample,
            "best": self.best,
            "recommendation": self.recommend(),
            "models": self.to_frame().to_dicts(),
            "evaluations": {m: e.to_dict() for m, e in self.evaluations.items()},
            "parameters": {m: f.parameters().to_dicts() for m, f in self.fits.items()},
        }

    def summary(self) -> str:
        """The comparison table and the recommended correction, as text."""
        return "\n".join(self.table_lines() + self.recommendation_lines())

    def table_lines(self) -> list[str]:
        """The comparison table, as lines of text."""
        where = "training sessions (in-sample)" if self.in_sample else "test sessions"
        lines = [
            f"Click models fitted on {self.n_train:,} sessions, evaluated on "
            f"{max(self.n_test, self.n_train) if self.in_sample else self.n_test:,} "
            f"{where}:",
            f"  {'model':<8} {'params':>8} {'LL/session':>11} {'perplexity':>11} "
            f"{'cond. ppl':>10} {'CTR RMSE':>9} {'seconds':>8}",
        ]
        for r in self.to_frame().iter_rows(named=True):
            lines.append(
                f"  {r['model']:<8} {r['parameters']:>8,} "
                f"{r['log_likelihood_per_session']:>11.4f} {r['perplexity']:>11.4f} "
                f"{r['conditional_perplexity']:>10.4f} {r['ctr_rmse']:>9.4f} "
                f"{r['seconds']:>8.2f}"
            )
        return lines

    def recommendation_lines(self, log: str = "LOG.parquet", data: str = "DATA") -> list[str]:
        """The recommendation as text: the best model, the command to run, the caveats."""
        rec = self.recommend(log=log, data=data)
        lines = [
            f"Best: {rec['model']} ({rec['reason']}).",
            f"Correction: {rec['correction']}. Run:",
            *[f"  {c}" for c in rec["command"].split("\n")],
            f"In Python (fit = the fitted {rec['model']}): {rec['call']}",
        ]
        if rec["note"]:
            lines.append(f"Note: {rec['note']}.")
        if rec["warning"]:
            lines.append(f"Warning: {rec['warning']}")
        return lines

    def plot(self, *, conditional: bool = True, path: str | Path | None = None, ax: Any = None):
        """Perplexity by rank, one line per model (a matplotlib Figure; PNG written atomically).

        By default the conditional perplexity, the criterion :attr:`best` picks
        the model by (``conditional=False``: the marginal perplexity). Lines
        that overlap stay apart: each model has its own marker and dash
        pattern and is drawn slightly shifted along the rank axis; the best
        model is drawn thicker, on top.
        """
        from ..._core._figures import finish as _finish
        from ..._core._figures import new_axes as _new_axes

        fig, ax, own = _new_axes(ax, (6.4, 4.0))
        key = "conditional_perplexity_by_rank" if conditional else "perplexity_by_rank"
        markers, dashes = "osD^vP*X", ["-", "--", "-.", ":"]
        n, best = len(self.evaluations), self.best
        for i, (name, ev) in enumerate(self.evaluations.items()):
            v = getattr(ev, key)
            mean = ev.conditional_perplexity if conditional else ev.perplexity
            shift = (i - (n - 1) / 2) * min(0.08, 0.4 / max(n, 1))
            ax.plot(
                np.arange(1, v.size + 1) + shift,
                v,
                marker=markers[i % len(markers)],
                ms=4,
                lw=2.4 if name == best else 1.2,
                ls=dashes[i % len(dashes)],
                color=f"C{i}",
                alpha=0.9,
                zorder=3 if name == best else 2,
                label=f"{name} ({mean:.4f})" + (" best" if name == best else ""),
            )
        ax.set_xlabel("rank")
        ax.set_ylabel(("conditional " if conditional else "") + "perplexity (1 = perfect)")
        where = "training (in-sample)" if self.in_sample else f"{self.n_test:,} test"
        ax.set_title(
            f"Click-model {'conditional ' if conditional else ''}perplexity by rank, "
            f"{where} sessions",
            fontsize=10,
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, title="model (mean over ranks)", title_fontsize=8)
        return _finish(fig, path, own=own)


def compare_click_models(
    log: Any,
    models: Sequence[str] = DEFAULT_MODELS,
    *,
    test_fraction: float = 0.25,
    seed: int = 0,
    shrinkage: float = 0.0,
    eps: float = 1e-6,
    progress: Any = None,
) -> ClickModelComparison:
    """Fit ``models`` on the training sessions of ``log`` and evaluate them on its test sessions.

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log (DESIGN §2).
    models : sequence of str
        Names from :data:`FIT_MODELS`.
    test_fraction : float
        Share of sessions held out (by session id and ``seed``); 0 evaluates
        in-sample.
    seed : int
        Seed of the split.
    shrinkage : float
        Passed to every fit (:func:`fit_click_model`).
    eps : float
        Probability clipping of the evaluation (:meth:`FittedClickModel.evaluate`).
    progress : callable, optional
        Called with a message after every fit.

    Returns
    -------
    ClickModelComparison
    """
    models = list(dict.fromkeys(models))
    if not models:
        raise InputError("models must name at least one click model")
    for m in models:
        check_choice(m, FIT_MODELS, name="models")
    sessions = sessions_from_log(log, test_fraction=test_fraction, seed=seed)
    train, test = sessions.train(), sessions.test_sessions()
    if train.n_unique == 0:
        raise EstimationError("no training sessions; lower test_fraction")
    target = test if test.n_unique else train
    fits, evals, secs = {}, {}, {}
    for m in models:
        t0 = time.perf_counter()
        fit = fit_click_model(train, m, shrinkage=shrinkage)
        secs[m] = round(time.perf_counter() - t0, 3)
        fits[m] = fit
        evals[m] = fit.evaluate(target, eps=eps)
        if progress is not None:
            progress(f"{m}: {secs[m]:.1f} s, test perplexity {evals[m].perplexity:.4f}")
    return ClickModelComparison(
        fits=fits,
        evaluations=evals,
        n_train=train.n_sessions,
        n_test=test.n_sessions,
        test_fraction=float(test_fraction),
        seed=int(seed),
        seconds=secs,
    )
