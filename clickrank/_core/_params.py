"""scikit-learn's constructor contract, written once for every public estimator.

An estimator's ``__init__`` stores each argument unchanged under its own name
(conversion and checks happen in ``fit``), so that :func:`sklearn.base.clone`
rebuilds it from :meth:`Params.get_params` and finds the same objects again.
Extra keyword arguments (``**params``, passed on to LightGBM) are kept in
``self.params``. scikit-learn itself is not imported.
"""

from __future__ import annotations

import inspect
from typing import Any

from ._validation import InputError

__all__ = ["Params"]


class Params:
    """``get_params`` / ``set_params`` from the signature of ``__init__``."""

    @classmethod
    def _param_names(cls) -> tuple[tuple[str, ...], bool]:
        """The named parameters of ``__init__`` and whether it takes ``**params``."""
        sig = inspect.signature(cls.__init__)
        names = tuple(
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        )
        return names, any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters, as given (scikit-learn convention)."""
        names, extra = self._param_names()
        out = {k: getattr(self, k) for k in names}
        if extra:
            out.update(self.params)
        return out

    def set_params(self, **params: Any) -> Any:
        """Set constructor parameters; returns ``self``.

        Raises
        ------
        InputError
            For a name ``__init__`` does not take (an estimator with
            ``**params`` takes any name: it goes to ``params``).
        """
        names, extra = self._param_names()
        for k, v in params.items():
            if k in names:
                setattr(self, k, v)
            elif extra:
                self.params = {**self.params, k: v}
            else:
                raise InputError(
                    f"unknown parameter {k!r} for {type(self).__name__}; "
                    f"expected one of {', '.join(names)}"
                )
        return self
