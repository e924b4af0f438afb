"""The propensities the learner uses, and where they come from."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._core._validation import EstimationError, InputError

__all__ = ["resolve_propensities", "check_log_context", "context_line"]


def check_log_context(
    log: Any, context: Any, propensities: Any, features: Any = None
) -> tuple[Any, Any, Any]:
    """The context columns and context features of a fit, checked against the log's schema
    before any work, and the propensities it uses.

    ``context`` and ``features`` None or empty pool: per-context propensities give their
    pooled curve. With ``features``, propensities given with a model of the same features
    keep it; others give their pooled curve.
    """
    from ..propensity import ContextModel, check_context, check_features

    curves = getattr(propensities, "contexts", None)
    context, features = (None if v is not None and not isinstance(v, str) and len(v) == 0
                         else v for v in (context, features))  # fmt: skip
    if context is not None and features is not None:
        raise InputError(
            "context and context_features: give one (a curve per value of a context with few "
            "values, or a model of a context's features)"
        )
    if features is not None:
        cols = check_features(log, features)
        keep = curves is None or (isinstance(curves, ContextModel) and curves.columns == cols)
        return None, cols, propensities if keep else replace(propensities, contexts=None)
    if context is None or isinstance(curves, ContextModel):  # a feature model is not per value
        pooled = propensities if curves is None else replace(propensities, contexts=None)
        return (None if context is None else check_context(log, context)), None, pooled
    return check_context(log, context), None, propensities


def context_line(theta: Any, context: tuple[str, ...], features: bool = False) -> str:
    """One line on how the fit corrects per context: the curves it uses, and the test
    (``features``: ``context`` are the features of a model of θ)."""
    cols = ", ".join(context)
    curves = getattr(theta, "contexts", None)
    if features:
        if curves is None:
            return (
                f"context features {cols}: the propensities hold one curve, used for every context"
            )
        return (f"context features {cols}: θ per impression from the model's curves at "
                f"{len(curves.values):,} contexts; {curves.verdict()}")  # fmt: skip
    if theta is None:
        return f"context {cols}: no propensities; Unbiased LambdaMART learns biases per context"
    if curves is None:
        return (f"context {cols}: the propensities hold one curve, used for every context; "
                "Unbiased LambdaMART learns biases per context")  # fmt: skip
    return (f"context {cols}: θ per impression from {len(curves.values)} context curves "
            f"(shrunk toward a common one); {curves.verdict()}")  # fmt: skip


def resolve_propensities(data: Any, log: Any, propensities: Any, method: str | None,
                         seed: int, context: tuple[str, ...] | None = None,
                         features: tuple[str, ...] | None = None,
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
    features : tuple of str, optional
        Context features: the same estimate, holding a model of θ in them.

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
    if features is not None:  # the same pooled curve, holding the model in the features
        kw["context_features"] = features
    try:
        theta = estimate_propensities(log, method=method, context=context, **kw)
    except EstimationError as err:
        if method != "auto":
            raise
        why = str(err).removeprefix("auto: no propensity source: ")
        return None, PropensitySource("none", None, why)
    return theta, PropensitySource.of(theta, f"estimated from the log ({method})")
