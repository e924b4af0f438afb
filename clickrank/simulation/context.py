r"""The context of a session: a categorical column drawn per session, and its click model.

Position bias often depends on where a list is shown: few phone users scroll past
rank 3, while on a desktop rank 8 is still read. A :class:`Context` draws one value
per session from given shares (``device``: 30 % ``phone``, 70 % ``desktop``), logs it
in a column of that name, and lets the value's own click model click, so a simulated
log carries a known examination curve per context.

The value of session :math:`s` is the inverse CDF of the shares at a uniform that
depends only on ``(seed, s)`` (stream :data:`STREAM_CONTEXT`; the ``i``-th context of
a simulation reads the session's draw ``i``), so the column does not depend on
``chunk_size`` or ``n_jobs``. Clicks keep the stream of a simulation without
context: a context whose models all equal ``click_model`` gives the same clicks as
no context at all.

Real traffic mixes its contexts differently from query to query (navigational
queries come from phones more often). With ``query_concentration`` :math:`\kappa`
each query :math:`q` draws its own shares :math:`\pi_q \sim
\mathrm{Dirichlet}(\kappa\,\pi)` around the given ones :math:`\pi` (gamma quantiles
of uniforms that depend only on ``(seed, q)``, stream :data:`STREAM_CONTEXT_MIX`), and
its sessions draw their value from :math:`\pi_q`: the smaller :math:`\kappa`, the
more a query's sessions come from one context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core._random import session_uniforms
from .._core._validation import InputError
from ..clicklog import LOG_SCHEMA

__all__ = ["Context", "STREAM_CONTEXT", "STREAM_CONTEXT_MIX", "RESERVED_COLUMNS"]

#: Draw stream of the context values (draw ``i`` of a session: the ``i``-th context).
STREAM_CONTEXT = 224
#: Draw stream of the queries' own shares (``query_concentration``), keyed by query.
STREAM_CONTEXT_MIX = 225

#: Columns a simulated log already has (the log's own, :data:`~clickrank.clicklog.LOG_SCHEMA`):
#: a context cannot take their names.
RESERVED_COLUMNS = tuple(LOG_SCHEMA)


@dataclass(frozen=True, eq=False)
class Context:
    """A categorical column of the log, one value per session, with a click model per value.

    Parameters
    ----------
    name : str
        The column's name in the log (e.g. ``"device"``); not one of the log's own
        columns (:data:`RESERVED_COLUMNS`).
    shares : mapping of str to float
        Each value's share of the sessions (non-negative, normalized to sum to 1;
        values with share 0 never occur). Their order is the order the values are
        drawn in (the inverse CDF), so a reordered mapping gives another log.
    click_models : mapping of str to click model or str, optional
        The click model of the sessions with each value (an object following the
        :class:`~clickrank.clickmodels.ClickModel` protocol or a name for
        :func:`~clickrank.clickmodels.make_click_model`). Values left out click by
        ``simulate``'s ``click_model``. At most one context of a simulation has
        click models.
    query_concentration : float, optional
        κ of the queries' own shares (module docstring); None (default):
        every query has ``shares``.

    Examples
    --------
    >>> from clickrank.clickmodels import PBM, PowerLaw
    >>> device = Context("device", {"phone": 0.3, "desktop": 0.7},
    ...                  {"phone": PBM(PowerLaw(2.0)), "desktop": PBM(PowerLaw(0.5))})
    >>> device.values
    ('phone', 'desktop')
    """

    name: str
    shares: Mapping[str, float]
    click_models: Mapping[str, Any] | None = None
    query_concentration: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"Context name must be a non-empty string, got {self.name!r}")
        if self.name in RESERVED_COLUMNS:
            raise InputError(
                f"Context name {self.name!r} is a column of the log already; "
                f"use another name (not one of {', '.join(RESERVED_COLUMNS)})"
            )
        if not isinstance(self.shares, Mapping) or not self.shares:
            raise InputError(
                f"Context {self.name!r}: shares must be a non-empty mapping value -> share, "
                f"got {self.shares!r}"
            )
        values = tuple(self.shares)
        if not all(isinstance(v, str) and v for v in values):
            raise InputError(f"Context {self.name!r}: values must be non-empty strings")
        try:
            w = np.array([float(self.shares[v]) for v in values])
        except (TypeError, ValueError):
            raise InputError(f"Context {self.name!r}: shares must be numbers") from None
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise InputError(
                f"Context {self.name!r}: shares must be finite, >= 0 and not all 0; "
                f"got {dict(zip(values, w.tolist(), strict=True))}"
            )
        models = dict(self.click_models or {})
        unknown = [v for v in models if v not in self.shares]
        if unknown:
            raise InputError(
                f"Context {self.name!r}: click_models names {unknown[0]!r}, which has no "
                f"share; the values are {', '.join(values)}"
            )
        kappa = self.query_concentration
        if kappa is not None and (
            isinstance(kappa, bool) or not isinstance(kappa, (int, float))
            or not np.isfinite(kappa) or kappa <= 0
        ):  # fmt: skip
            raise InputError(
                f"Context {self.name!r}: query_concentration must be a number > 0 (or None), "
                f"got {kappa!r}"
            )
        w = w / w.sum()
        w.flags.writeable = False
        object.__setattr__(self, "shares", dict(zip(values, w.tolist(), strict=True)))
        object.__setattr__(self, "click_models", models)
        object.__setattr__(self, "_cdf", np.cumsum(w))

    @property
    def values(self) -> tuple[str, ...]:
        """The context's values, in the order of ``shares``."""
        return tuple(self.shares)

    def query_shares(self, seed: int, n_queries: int, draw: int = 0) -> np.ndarray | None:
        """Each query's shares ``[n_queries, V]`` (None without ``query_concentration``)."""
        if self.query_concentration is None:
            return None
        from scipy.stats import gamma

        V = len(self.shares)
        u = session_uniforms(seed, np.arange(n_queries), V, STREAM_CONTEXT_MIX, offset=draw * V)
        shape = self.query_concentration * np.array(list(self.shares.values()))
        g = gamma.ppf(u, np.maximum(shape, 1e-300))  # a share of 0 stays 0
        g[:, shape == 0] = 0.0
        total = g.sum(axis=1, keepdims=True)
        return np.divide(g, total, out=np.tile(shape / shape.sum(), (n_queries, 1)),
                         where=total > 0)  # fmt: skip

    def codes(
        self,
        seed: int,
        sessions: np.ndarray,
        draw: int = 0,
        queries: np.ndarray | None = None,
        query_shares: np.ndarray | None = None,
    ) -> np.ndarray:
        """Index into :attr:`values` of each session, int64 ``[S]`` (draw ``draw`` of the
        session on :data:`STREAM_CONTEXT`), by the shares of its query when
        ``query_shares`` (:meth:`query_shares`) and the sessions' ``queries`` are given."""
        u = session_uniforms(seed, sessions, 1, STREAM_CONTEXT, offset=draw)[:, 0]
        last = len(self.shares) - 1
        if query_shares is None:
            return np.minimum(np.searchsorted(self._cdf, u, side="right"), last)
        cdf = np.cumsum(query_shares[np.asarray(queries, dtype=np.int64)], axis=1)
        return np.minimum((u[:, None] >= cdf).sum(axis=1), last).astype(np.int64)

    def describe(self) -> dict[str, Any]:
        """JSON-ready description (the log's metadata)."""
        return {
            "name": self.name,
            "shares": dict(self.shares),
            "click_models": {v: repr(m) for v, m in self.click_models.items()},
            **({} if self.query_concentration is None
               else {"query_concentration": self.query_concentration}),
        }  # fmt: skip

    def __repr__(self) -> str:
        shares = ", ".join(f"{v}={s:.3g}" for v, s in self.shares.items())
        models = "".join(f"; {v}: {m!r}" for v, m in self.click_models.items())
        return f"Context({self.name!r}: {shares}{models})"


def as_contexts(context: Any) -> tuple[Context, ...]:
    """``simulate``'s ``context`` as a tuple of :class:`Context` (checked: distinct names,
    at most one with click models)."""
    if context is None:
        return ()
    items = (context,) if isinstance(context, Context) else context
    if not isinstance(items, Sequence) or not all(isinstance(c, Context) for c in items):
        raise InputError(
            "context must be a Context or a sequence of them (clickrank.simulation.Context), "
            f"got {type(context).__name__}"
        )
    names = [c.name for c in items]
    if len(set(names)) != len(names):
        raise InputError(f"context names must be distinct, got {names}")
    clicking = [c.name for c in items if c.click_models]
    if len(clicking) > 1:
        raise InputError(
            f"only one context may carry click models (got {', '.join(clicking)}): a "
            "session's click model must follow from one column; give the others shares only"
        )
    return tuple(items)


def context_clicks(
    contexts: tuple[Context, ...],
    model: Any,
    sampler: Callable[[Any], Callable[[int, np.ndarray, np.ndarray], np.ndarray]],
) -> Callable[[int, np.ndarray, np.ndarray, list[np.ndarray]], np.ndarray] | None:
    """``clicks(seed, sessions, labels, codes)`` that clicks each session by its context's
    model, or None when no context has click models (then ``model`` clicks everywhere).

    ``sampler(model)`` gives a model's ``clicks(seed, sessions, labels)``; ``codes`` are
    the contexts' codes per session, in the order of ``contexts``. Each value's sessions
    are clicked in one vectorized call (a loop over the values, not the sessions).
    """
    at = next((i for i, c in enumerate(contexts) if c.click_models), None)
    if at is None:
        return None
    ctx = contexts[at]  # without ``model`` every value has one (simulate checked it)
    per_value = [sampler(ctx.click_models.get(v, model)) for v in ctx.values]

    def clicks(seed: int, sessions: np.ndarray, labels: np.ndarray, codes: list) -> np.ndarray:
        code = codes[at]
        out = np.empty(labels.shape, dtype=np.bool_)
        for c, draw in enumerate(per_value):  # a loop over the context's values
            mask = code == c
            if mask.all():
                return draw(seed, sessions, labels)
            if mask.any():
                out[mask] = draw(seed, sessions[mask], np.ascontiguousarray(labels[mask]))
        return out

    return clicks
