"""The run configuration: :class:`ExperimentConfig`, :func:`load_config`, TOML output, seeds."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .._core._io import read_text, special_kind
from .._core._validation import ConfigError, DataFormatError
from ..specs import dumps_toml
from ._checks import _check_values, _Checker
from ._schema import _SEED_KEYS, _check_keys, _merge


def default_config_text() -> str:
    """The embedded default configuration (``clickrank/configs/default.toml``), with comments."""
    return resources.files("clickrank").joinpath("configs/default.toml").read_text("utf-8")


# -- the configuration object ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ExperimentConfig:
    """A validated run configuration (defaults merged with the user's keys).

    Use :func:`load_config` to build one. ``values`` maps each section name to
    a dict of keys (``values["seed"]`` is the master seed); data paths are
    absolute. Treat it as read-only.

    Attributes
    ----------
    values : dict
    origin : str
        Where it came from (a file path, ``"<default>"`` or ``"<dict>"``).
    """

    values: dict
    origin: str = "<default>"

    def __getitem__(self, section: str) -> Any:
        return self.values[section]

    def to_dict(self) -> dict:
        """A deep copy of the values (JSON- and TOML-ready)."""
        return json.loads(json.dumps(self.values))

    def to_toml(self) -> str:
        """The effective configuration as TOML (readable by :func:`load_config`)."""
        return dumps_toml(self.values)

    def seed(self, section: str) -> int:
        """Seed of a stage: the section's own ``seed``, else derived from the master seed."""
        own = self.values.get(section, {}).get("seed")
        if own is not None:
            return int(own)
        return _derive(self.values["seed"], _SEED_KEYS[section])

    def section_key(self, *sections: str) -> dict:
        """The named sections with their resolved seeds (input of the stage hashes)."""
        out = {}
        for s in sections:
            sec = dict(self.values[s])
            if s in _SEED_KEYS:
                sec["seed"] = self.seed(s)
            out[s] = sec
        return out

    def hash(self) -> str:
        """SHA-256 of the whole configuration (first 16 hex digits)."""
        return _digest(self.values)

    def __repr__(self) -> str:
        return f"ExperimentConfig(origin={self.origin!r}, hash={self.hash()})"


#: The fuller versions of the stages the default keeps light (``clickrank run --full``,
#: ``load_config(..., full=True)``): keys a config sets itself keep its value.
FULL: dict[str, dict[str, Any]] = {
    "learning_curve": {"sessions": [10_000, 30_000, 100_000, 300_000]},
}


def load_config(
    config: Any = None, *, base_dir: str | os.PathLike | None = None, full: bool = False
) -> ExperimentConfig:
    """Read and validate a run configuration; defaults come from the embedded default.toml.

    Parameters
    ----------
    config : None, path, dict or ExperimentConfig
        None: the embedded default. A path: a TOML file. A dict: the same
        structure as the TOML (sections as nested dicts). Only the keys given
        override the defaults.
    base_dir : path, optional
        Folder that relative data paths are resolved against: default the
        folder of the config file (the current folder for a dict).
    full : bool
        Apply :data:`FULL` (the fuller learning curve) under the config's own
        keys: what the config sets wins.

    Raises
    ------
    ConfigError
        One line naming the section and key: unknown key (with the closest
        valid key), wrong type, value out of range, missing data file.
        Nothing is written.
    """
    if isinstance(config, ExperimentConfig):
        return config
    defaults = tomllib.loads(default_config_text())
    if config is None:
        user: dict = {}
        origin = "<default>"
        folder = Path.cwd()
    elif isinstance(config, Mapping):
        user = json.loads(json.dumps(config))  # a deep, plain copy
        origin = "<dict>"
        folder = Path.cwd()
    elif isinstance(config, (str, os.PathLike)):
        path = Path(config)
        origin = str(path)
        if special_kind(path) is None and not path.is_file():
            raise ConfigError(f"{origin}: config file not found")
        try:
            user = tomllib.loads(read_text(path, what="TOML"))
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{origin}: not valid TOML: {err}") from None
        except DataFormatError as err:
            raise ConfigError(str(err)) from None
        except OSError as err:
            raise ConfigError(f"{origin}: cannot read the config file: {err}") from None
        folder = path.resolve().parent
    else:
        raise ConfigError(
            f"config must be a TOML path, a dict or None, got {type(config).__name__}"
        )
    if base_dir is not None:
        folder = Path(base_dir)
    _check_keys(user, origin)
    if full:
        defaults = _merge(defaults, FULL)
        origin += " --full"
    values = _merge(defaults, user)
    if not values.get("context"):  # no context: the configuration (and its hash) as without
        values.pop("context", None)
    _check_values(_Checker(values, user, origin), folder)
    return ExperimentConfig(values, origin)


# -- hashes and seeds ------------------------------------------------------------------------


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _derive(seed: int, key: int) -> int:
    """An independent 32-bit seed for sub-stream ``key`` of ``seed`` (SeedSequence)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(key),))
    return int(ss.generate_state(1, dtype=np.uint32)[0])
