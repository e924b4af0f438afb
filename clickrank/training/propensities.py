"""The propensities the learner uses, and where they come from."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._core._validation import EstimationError

__all__ = ["resolve_propensities", "check_log_context", "context_line"]


def check_log_context(log: Any, context: Any, propensities: Any) -> tuple[Any, Any]:
    """The context columns of a fit, checked against the log's schema before any work, and
    the propensities it uses.

    ``context`` None or an empty list pools: per-context propensities give their pooled
    curve.
    """
    from ..propensity import check_context

    curves = getattr(propensities, "contexts", None)
    if context is not None and not isinstance(context, str) and len(context) == 0:
        context = None
    if context is None:
        return None, propensities if curves is None else replace(propensities, contexts=None)
    return check_context(log, context), propensities


def context_line(theta: Any, context: tuple[str, ...]) -> str:
    """One line on how the fit corrects per context: the curves it uses, and the test."""
    cols = ", ".join(context)
    curves = getattr(theta, "contexts", None)
    if theta is None:
        return f"context {cols}: no propensities; Unbiased LambdaMART learns biases per context"
    if curves is None:
        return (f"context {cols}: the propensities hold one curve, used for every context; "
                "Unbiased LambdaMART learns biases per context")  # fmt: skip
    return (f"context {cols}: θ per impression from {len(curves.values)} context curves "
            f"(shrunk toward a common one); {curves.verdict()}")  # fmt: skip


def resolve_propensities(data: Any, log: Any, propensities: Any, method: str | None,
                         seed: int, context: tuple[str, ...] | None = None,
                         ) -> tuple[Any, Any]:  # fmt: skip
    """The propensities given, or estimated from what the log holds, or None.

    Parameters
    ----------
    data : RankingData
        The training queries (regression EM reads their features).
    log : DataFrame
        The click log.
    propensities : array-like or Propensities, optional
        Given to ``fit``: used as they are.
    method : str or None
        :func:`clickrank.propensity.estimate_propensities`'s method when none are given
        (``"auto"``: from what the log holds; a failure of ``"auto"`` means none); None:
        never estimate.
    seed : int
        Regression EM's seed.
    context : tuple of str, optional
        Context columns: the estimate holds a curve per context.

    Returns
    -------
    theta : array-like, Propensities or None
    source : clickrank.propensity.PropensitySource
        Where they came from and why.
    """
    from ..propensity import Propensities, PropensitySource, estimate_propensities

    if propensities is not None:
        src = (PropensitySource.of(propensities, "passed to fit")
               if isinstance(propensities, Propensities)
               else PropensitySource("given", None, "passed to fit"))  # fmt: skip
        return propensities, src
    if method is None:
        return None, PropensitySource("none", None, "none given and propensity_method=None")
    # point estimates: no bootstrap of EM or regression EM, and no second smoothing of
    # regression EM's relevance model (it widens intervals only)
    kw: dict[str, Any] = {"n_boot": 0} if method == "em" else {}
    if method in ("auto", "regression-em"):
        kw = {"n_boot": 0, "seed": seed, "data": data, "sensitivity": 0}
    try:
        theta = estimate_propensities(log, method=method, context=context, **kw)
    except EstimationError as err:
        if method != "auto":
            raise
        why = str(err).removeprefix("auto: no propensity source: ")
        return None, PropensitySource("none", None, why)
    return theta, PropensitySource.of(theta, f"estimated from the log ({method})")
