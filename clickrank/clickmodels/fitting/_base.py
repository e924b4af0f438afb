r"""Fitted click models: parameters with standard errors, evaluation, sampling, relevance.

Evaluation (Dupret & Piwowarski (2008); Chuklin et al. (2015),
ch. 4). For test sessions :math:`s` and rank
:math:`r`, with :math:`q_{sr}` the model's click probability and
:math:`c_{sr}` the observed click,

.. math::
    \mathrm{ppl}_r = 2^{-\frac{1}{N_r}\sum_s c_{sr}\log_2 q_{sr}
                     + (1 - c_{sr})\log_2(1 - q_{sr})},
    \qquad \mathrm{ppl} = \frac{1}{K}\sum_r \mathrm{ppl}_r

(:math:`N_r` sessions show rank :math:`r`; 1 is a perfect prediction, 2 a
coin flip). *Perplexity* uses the marginal :math:`q_{sr} = P(C_r = 1)` given
the list only; *conditional perplexity* uses :math:`P(C_r = 1 \mid C_{<r})`,
given the observed clicks above, whose product over ranks is the session
likelihood (the *log-likelihood* is :math:`\sum_s \sum_r \ln` of those
terms). *CTR prediction error* is the impression-weighted root mean squared
difference between the observed click-through rate of every (query, doc,
rank) cell of the test sessions and the model's mean marginal click
probability there. Probabilities are clipped to :math:`[\epsilon, 1 -
\epsilon]` (``eps``, default :math:`10^{-6}`) before taking logarithms, so
that a click the model deems impossible costs :math:`\log_2(1/\epsilon)`
bits instead of an infinite loss; pairs not seen in training get the
model's prior (the pooled estimate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import norm

from ..._core._validation import InputError, check_probability
from ._sessions import Sessions, sessions_from_log

__all__ = ["FittedClickModel", "ClickModelEvaluation", "PairLookup", "STREAM_SAMPLE"]

#: Stream of the uniforms behind :meth:`FittedClickModel.sample`.
STREAM_SAMPLE = 202
_EPS = 1e-6


@dataclass(frozen=True, eq=False)
class PairLookup:
    """A relevance map whose "labels" are pair indices: ``values[int(label)]``.

    Lets the simulation models of :mod:`clickrank.clickmodels` (``PBM``,
    ``DBN``, ...) run with per-(query, doc) parameters: pass the pair indices
    of :class:`~clickrank.clickmodels.fitting.Sessions` as the label matrix.
    NaN (an empty slot) maps to 0.
    """

    values: np.ndarray

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels, dtype=np.float64)
        nan = np.isnan(labels)
        idx = np.where(nan, 0, labels).astype(np.int64)
        out = self.values[idx]
        out[nan] = 0.0
        return out


@dataclass(frozen=True, eq=False)
class ClickModelEvaluation:
    r"""How well a fitted click model predicts the clicks of a set of sessions.

    Attributes
    ----------
    model : str
    n_sessions : int
    log_likelihood : float
        :math:`\sum_s \ln P(\text{clicks of } s)` (natural log).
    perplexity, conditional_perplexity : float
        Means over ranks of the per-rank values.
    perplexity_by_rank, conditional_perplexity_by_rank : numpy.ndarray
        ``[K]``.
    ctr_rmse : float
        Impression-weighted RMSE of the per-(query, doc, rank) click-through rate.
    sessions_by_rank : numpy.ndarray
        ``[K]`` sessions that showed each rank.
    unseen_share : float
        Share of the impressions whose (query, doc) pair the model never saw
        in training (they get the prior).
    session_log_likelihood, session_weight : numpy.ndarray
        Log-likelihood of every distinct evaluated session and its
        multiplicity (for paired comparisons of models on the same sessions).
    """

    model: str
    n_sessions: int
    log_likelihood: float
    perplexity: float
    perplexity_by_rank: np.ndarray
    conditional_perplexity: float
    conditional_perplexity_by_rank: np.ndarray
    ctr_rmse: float
    sessions_by_rank: np.ndarray
    unseen_share: float
    session_log_likelihood: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    session_weight: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @property
    def log_likelihood_per_session(self) -> float:
        """Mean log-likelihood of a session."""
        return self.log_likelihood / max(self.n_sessions, 1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {
            "model": self.model,
            "n_sessions": self.n_sessions,
            "log_likelihood": self.log_likelihood,
            "log_likelihood_per_session": self.log_likelihood_per_session,
            "perplexity": self.perplexity,
            "conditional_perplexity": self.conditional_perplexity,
            "ctr_rmse": self.ctr_rmse,
            "unseen_share": self.unseen_share,
            "perplexity_by_rank": self.perplexity_by_rank.tolist(),
            "conditional_perplexity_by_rank": self.conditional_perplexity_by_rank.tolist(),
            "sessions_by_rank": self.sessions_by_rank.tolist(),
        }

    def to_frame(self) -> pl.DataFrame:
        """One row per rank: sessions, perplexity, conditional perplexity."""
        K = self.perplexity_by_rank.size
        return pl.DataFrame(
            {
                "model": [self.model] * K,
                "rank": np.arange(1, K + 1),
                "sessions": self.sessions_by_rank,
                "perplexity": self.perplexity_by_rank,
                "conditional_perplexity": self.conditional_perplexity_by_rank,
            }
        )

    def summary(self) -> str:
        """A short readable description."""
        return (
            f"{self.model}: perplexity {self.perplexity:.4f}, conditional perplexity "
            f"{self.conditional_perplexity:.4f}, log-likelihood/session "
            f"{self.log_likelihood_per_session:.4f}, CTR RMSE {self.ctr_rmse:.4f} "
            f"({self.n_sessions:,} sessions; {self.unseen_share:.1%} of impressions of "
            "unseen pairs)"
        )


@dataclass(frozen=True, eq=False)
class FittedClickModel:
    r"""A click model fitted to a log: per-(query, doc) and global parameters.

    Build one with :func:`~clickrank.clickmodels.fit_click_model`. Per-pair
    arrays have one entry per row of ``pairs`` (the last entry of
    ``attractiveness`` / ``satisfaction`` is one past the end: the prior given
    to pairs that were not in the training sessions).

    Attributes
    ----------
    name : str
        ``"pbm"``, ``"ubm"``, ``"cascade"``, ``"dcm"``, ``"sdbn"``, ``"dbn"`` or ``"trust"``.
    pairs : polars.DataFrame
        ``query``, ``doc``.
    K : int
    attractiveness, attractiveness_se : numpy.ndarray
        :math:`\alpha_{qd}` ``[G + 1]`` (prior last) and its standard error ``[G]``.
    satisfaction, satisfaction_se : numpy.ndarray or None
        :math:`\sigma_{qd}` (DBN, SDBN), else None.
    globals, globals_se : dict of numpy.ndarray
        Global parameters by name (``theta``, ``gamma``, ``continuation``, ...).
    impressions, clicks : numpy.ndarray
        ``[G]`` training impressions and clicks per pair.
    n_sessions, n_unique : int
        Training sessions and distinct training sessions.
    iterations : int
    converged : bool
    log_likelihood : float
        Training log-likelihood at the estimate.
    shrinkage : float
        Pseudo-count strength of the prior on the per-pair parameters.
    info : dict
        Model-specific details (reference, seconds, warnings, ...).
    """

    name: str
    pairs: pl.DataFrame
    K: int
    attractiveness: np.ndarray
    attractiveness_se: np.ndarray
    globals: dict[str, np.ndarray]
    globals_se: dict[str, np.ndarray]
    impressions: np.ndarray
    clicks: np.ndarray
    n_sessions: int
    n_unique: int
    iterations: int
    converged: bool
    log_likelihood: float
    shrinkage: float = 0.0
    satisfaction: np.ndarray | None = None
    satisfaction_se: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    # -- per-session parameters (subclasses) ------------------------------------------------
    def conditional_probabilities(self, sessions: Sessions) -> np.ndarray:
        r""":math:`P(C_r = 1 \mid C_{<r})` for every displayed slot, float64 ``[U, K]``."""
        raise NotImplementedError

    def marginal_probabilities(self, sessions: Sessions) -> np.ndarray:
        r""":math:`P(C_r = 1)` given the list only, float64 ``[U, K]``."""
        raise NotImplementedError

    def examination(self, sessions: Sessions) -> np.ndarray:
        r"""Examination probability of every slot given the clicks above it, ``[U, K]``.

        :math:`P(E_r = 1 \mid A_{<r} = c_{<r})`: the probability that rank
        :math:`r` is examined if the documents above were attractive exactly
        where they were clicked (Vardasbi et al. (2020a)). Dividing a
        click by it is unbiased for the attractiveness whenever the model holds.
        """
        raise NotImplementedError

    def click_model(self) -> Any:
        """The fitted model as a simulation click model of :mod:`clickrank.clickmodels`.

        Its "labels" are pair indices (row numbers of ``pairs``, NaN for an
        empty slot): see :class:`PairLookup`.
        """
        raise NotImplementedError

    def relevance(self) -> pl.DataFrame:
        """Per-pair relevance estimates, usable as training labels.

        ``relevance`` is the attractiveness for the position-based models and
        the cascade/DCM, attractiveness × satisfaction for DBN/SDBN (the
        probability that a user who examines the document is satisfied by it,
        Chapelle & Zhang (2009), §5). The trust-bias fit stores the posterior
        probability of relevance as its "attractiveness".
        """
        a = self.attractiveness[:-1]
        rel = a if self.satisfaction is None else a * self.satisfaction[:-1]
        return self.pairs.with_columns(
            impressions=pl.Series(self.impressions),
            clicks=pl.Series(self.clicks),
            relevance=pl.Series(rel),
        )

    # -- shared machinery ---------------------------------------------------------------
    @property
    def n_pairs(self) -> int:
        """Number of (query, doc) pairs."""
        return int(self.pairs.height)

    @property
    def n_params(self) -> int:
        """Number of free parameters (pairs with training impressions, plus globals)."""
        seen = int((self.impressions > 0).sum())
        per_pair = 1 + (self.satisfaction is not None)
        n_global = sum(int(np.isfinite(v).sum()) for v in self.globals.values())
        return seen * per_pair + n_global

    def _aligned(self, sessions: Any) -> Sessions:
        if not isinstance(sessions, Sessions):
            sessions = sessions_from_log(sessions)
        if sessions.pairs is not self.pairs:
            sessions = sessions.align(self.pairs)
        if sessions.K > self.K:
            raise InputError(
                f"the sessions show {sessions.K} ranks; the {self.name} model was "
                f"fitted on lists of at most {self.K}"
            )
        return sessions

    def _lookup(self, values: np.ndarray, sessions: Sessions) -> np.ndarray:
        """Per-slot values ``[U, K]`` of a per-pair array (0 at empty slots)."""
        out = values[np.maximum(sessions.pair, 0)]
        out[sessions.pair < 0] = 0.0
        return out

    def evaluate(self, sessions: Any, *, eps: float = _EPS) -> ClickModelEvaluation:
        """Log-likelihood, perplexity (overall, by rank), conditional perplexity, CTR error.

        Parameters
        ----------
        sessions : Sessions or click log
            Test sessions (a log is reduced with :func:`sessions_from_log`).
        eps : float
            Probabilities are clipped to ``[eps, 1 - eps]`` (module docstring).
        """
        eps = check_probability(eps, name="eps")
        s = self._aligned(sessions)
        cond = self.conditional_probabilities(s)
        marg = self.marginal_probabilities(s)
        shown, c, w = s.shown, s.click, s.weight
        K = s.K
        n_rank = (w[:, None] * shown).sum(axis=0)

        def bits(p: np.ndarray) -> np.ndarray:
            p = np.clip(p, eps, 1 - eps)
            return np.where(shown, np.where(c, np.log2(p), np.log2(1 - p)), 0.0)

        with np.errstate(invalid="ignore", divide="ignore"):
            h_m = -(w[:, None] * bits(marg)).sum(axis=0) / n_rank
            h_c = -(w[:, None] * bits(cond)).sum(axis=0) / n_rank
        ppl, cppl = np.exp2(h_m), np.exp2(h_c)
        sess_ll = bits(cond).sum(axis=1) * math.log(2)
        ll = float((w * sess_ll).sum())
        # CTR error over (pair, rank) cells
        g = s.pair[shown]
        rank = np.broadcast_to(np.arange(K), s.pair.shape)[shown]
        ww = np.broadcast_to(w[:, None], s.pair.shape)[shown]
        key = g * K + rank
        uniq, inv = np.unique(key, return_inverse=True)
        n = np.bincount(inv, weights=ww, minlength=uniq.size)
        obs = np.bincount(inv, weights=ww * c[shown], minlength=uniq.size)
        pred = np.bincount(inv, weights=ww * marg[shown], minlength=uniq.size)
        rmse = float(np.sqrt(((obs - pred) ** 2 / n).sum() / n.sum())) if n.size else np.nan
        unseen = float(ww[g >= self.n_pairs].sum() / ww.sum()) if ww.size else 0.0
        if self.n_pairs and (g < self.n_pairs).any():
            seen_train = self.impressions[np.minimum(g, self.n_pairs - 1)] > 0
            unseen = float(ww[(g >= self.n_pairs) | ~seen_train].sum() / ww.sum())
        has = n_rank > 0
        return ClickModelEvaluation(
            model=self.name,
            n_sessions=s.n_sessions,
            log_likelihood=ll,
            perplexity=float(ppl[has].mean()),
            perplexity_by_rank=ppl,
            conditional_perplexity=float(cppl[has].mean()),
            conditional_perplexity_by_rank=cppl,
            ctr_rmse=rmse,
            sessions_by_rank=n_rank,
            unseen_share=unseen,
            session_log_likelihood=sess_ll,
            session_weight=w,
        )

    def sample(self, log: Any, *, seed: int = 0, chunk_size: int = 200_000) -> pl.DataFrame:
        """Simulate clicks on the lists of ``log`` from the fitted model.

        Every session of the log keeps its query and displayed documents and
        gets new clicks drawn by :meth:`click_model` (the simulation model of
        :mod:`clickrank.clickmodels` with the fitted parameters). A session's
        clicks depend only on ``seed`` and its session id
        (:mod:`clickrank._core._random`), so the result does not depend on
        ``chunk_size``.

        Returns
        -------
        polars.DataFrame
            The log sorted by (session, position) with ``click`` replaced.
        """
        from ..._core._random import session_uniforms
        from ...engine import as_lazy

        df = as_lazy(log).collect().sort("session", "position", maintain_order=True)
        s = self._aligned(sessions_from_log(df))
        if s.inverse is None or s.inverse.size == 0:
            raise InputError("the log has no sessions")
        sid = df["session"].cast(pl.UInt64).to_numpy()
        first = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
        model = self.click_model()
        nu = int(getattr(model, "n_uniforms", 1))
        K = s.K
        out = np.empty(df.height, dtype=bool)
        pos = 0
        for a in range(0, first.size, int(chunk_size)):
            idx = s.inverse[a : a + int(chunk_size)]
            pair = s.pair[idx]
            labels = np.where(pair >= 0, pair, np.nan).astype(np.float64)
            u = session_uniforms(seed, sid[first[a : a + int(chunk_size)]], K * nu, STREAM_SAMPLE)
            clicks = model.sample(labels, u.reshape(len(idx), K, nu))
            shown = pair >= 0
            block = clicks[shown]
            out[pos : pos + block.size] = block
            pos += block.size
        return df.with_columns(click=pl.Series(out))

    def _parameter_rows(self) -> list[tuple[str, int | None, float, float]]:
        rows = []
        for name, values in self.globals.items():
            se = self.globals_se.get(name, np.full(np.shape(values), np.nan))
            v = np.atleast_1d(values)
            e = np.atleast_1d(se)
            if v.ndim == 1:
                for i in range(v.size):
                    rows.append((name, i + 1 if v.size > 1 else None, float(v[i]), float(e[i])))
            else:  # UBM gamma[r, d]
                for r in range(v.shape[0]):
                    for d in range(r + 1):
                        rows.append(
                            (f"{name}[{r + 1},{d + 1}]", None, float(v[r, d]), float(e[r, d]))
                        )
        return rows

    def parameters(self, alpha: float = 0.05) -> pl.DataFrame:
        """Global parameters with standard errors and normal (Wald) ``1 - alpha`` intervals."""
        z = float(norm.isf(alpha / 2))
        rows = self._parameter_rows()
        return pl.DataFrame(
            {
                "parameter": [r[0] for r in rows],
                "rank": [r[1] for r in rows],
                "estimate": [r[2] for r in rows],
                "se": [r[3] for r in rows],
                "lower": [r[2] - z * r[3] for r in rows],
                "upper": [r[2] + z * r[3] for r in rows],
            },
            schema={
                "parameter": pl.String,
                "rank": pl.Int64,
                "estimate": pl.Float64,
                "se": pl.Float64,
                "lower": pl.Float64,
                "upper": pl.Float64,
            },
        )

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """``[G, 2]`` normal intervals of the attractiveness, clipped to [0, 1]."""
        z = float(norm.isf(alpha / 2))
        a, se = self.attractiveness[:-1], self.attractiveness_se
        return np.clip(np.column_stack([a - z * se, a + z * se]), 0.0, 1.0)

    def to_frame(self) -> pl.DataFrame:
        """One row per (query, doc): impressions, clicks, parameters and standard errors."""
        cols = {
            "impressions": self.impressions,
            "clicks": self.clicks,
            "attractiveness": self.attractiveness[:-1],
            "attractiveness_se": self.attractiveness_se,
        }
        if self.satisfaction is not None:
            cols["satisfaction"] = self.satisfaction[:-1]
            cols["satisfaction_se"] = self.satisfaction_se
        return self.pairs.with_columns(**{k: pl.Series(v) for k, v in cols.items()})

    def summary(self, alpha: float = 0.05) -> str:
        """Fit statistics and the global parameters with their intervals."""
        seen = int((self.impressions > 0).sum())
        lines = [
            f"{self.name.upper()} click model fitted by {self.info.get('method', 'EM')} "
            f"({self.info.get('reference', '')})",
            f"  sessions {self.n_sessions:,} ({self.n_unique:,} distinct), ranks 1..{self.K}, "
            f"(query, doc) pairs {seen:,}",
            f"  log-likelihood {self.log_likelihood:.2f} ({self.n_params:,} parameters), "
            f"{self.iterations} iteration(s), converged: {self.converged}",
        ]
        if self.shrinkage:
            lines.append(
                f"  per-pair prior: {self.shrinkage:g} pseudo-observations at the pooled estimate"
            )
        frame = self.parameters(alpha)
        if frame.height:
            lines.append(f"  global parameters ({1 - alpha:.0%} Wald intervals):")
            for r in frame.iter_rows(named=True):
                name = r["parameter"] + (f"[{r['rank']}]" if r["rank"] is not None else "")
                lines.append(
                    f"    {name:<18} {r['estimate']:.4f}  (se {r['se']:.4f})  "
                    f"[{r['lower']:.4f}, {r['upper']:.4f}]"
                )
        a = self.attractiveness[:-1][self.impressions > 0]
        if a.size:
            lines.append(
                f"  attractiveness: median {np.median(a):.3f}, range [{a.min():.3f}, {a.max():.3f}]"
            )
        for w in self.info.get("warnings", []):
            lines.append(f"  warning: {w}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"FittedClickModel({self.name!r}, pairs={self.n_pairs}, K={self.K}, "
            f"sessions={self.n_sessions}, log_likelihood={self.log_likelihood:.2f})"
        )
