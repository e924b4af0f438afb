"""No package of clickrank imports another package's private module or name.

What several packages use is public inside the project: a module may import the
private modules and names (``_x``) of its own top-level package and those of the shared
private core, ``clickrank._core`` (``clickrank._core._validation``,
``clickrank._core._io``, ...), which every package may import.
The rule and its check are ``benchmarks/code_health.py``'s
:func:`private_imports` (loaded from its path, as ``tests/test_layers.py`` does).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SPEC = importlib.util.spec_from_file_location(
    "_code_health", ROOT / "benchmarks" / "code_health.py"
)
HEALTH = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(HEALTH)

#: Private imports still known, as (importer, imported): the modules being rewritten
#: import the old private paths until they move to the public ones. An entry that no
#: longer occurs fails the test, so the set cannot go stale.
KNOWN: set[tuple[str, str]] = set()


def private_imports() -> set[tuple[str, str]]:
    """Every cross-package private import of the package, as (importer, imported)."""
    found = set()
    for path in sorted((ROOT / "clickrank").rglob("*.py")):
        for edge in HEALTH.private_imports(path, HEALTH.module_name(path)):
            importer, imported = edge.split(" -> ")
            found.add((importer, imported))
    return found


def test_no_package_imports_another_packages_private_module_or_name():
    found = private_imports()
    new = sorted(found - KNOWN)
    assert new == [], "import these through a public module or name:\n" + "\n".join(
        f"  {a} -> {b}" for a, b in new
    )
    stale = sorted(KNOWN - found)
    assert stale == [], f"fixed: remove from KNOWN: {stale}"


def _edges(tmp_path, source: str, name: str) -> list[str]:
    path = tmp_path / "m.py"
    path.write_text(source)
    return HEALTH.private_imports(path, name)


def test_the_shared_core_is_open_to_every_package(tmp_path):
    source = (
        "from .._core._io import _ledger\n"
        "from .._core._budget import check_budget\n"
        "from clickrank._core._random import session_uniforms\n"
        "from .._version import __version__\n"
    )
    assert _edges(tmp_path, source, "clickrank.targets.m") == []


def test_another_packages_private_module_is_counted(tmp_path):
    source = "from ..engine._join import x\nfrom ..targets._stats import y\n"
    assert _edges(tmp_path, source, "clickrank.targets.m") == [
        "clickrank.targets.m -> clickrank.engine._join"
    ]
