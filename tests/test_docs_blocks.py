"""Every fenced ``python`` and ``bash`` block of README.md and docs/*.md runs as written.

A page's blocks run in order, in one temporary folder and (for Python) one namespace,
the way a reader pastes them one after the other into one terminal and one Python
session: a block may use what an earlier block of the same page made (``log``,
``clicks.parquet``), never what another page made. Python blocks in doctest form
(``>>>``) are checked as doctests; bash blocks run with ``bash -euo pipefail`` and
the ``clickrank`` command of this interpreter first on ``PATH``.

A block that cannot run as written is marked on the line before its opening fence::

    <!-- fragment: the reason it does not run -->

(an HTML comment, so the rendered page does not show it; the reason is required).
The public data sets are found the documented way: ``$CLICKRANK_SHARED_DATA``, else
``../shared/data`` next to the checkout; the test sets ``CLICKRANK_SHARED_DATA`` to
that folder, and a page whose blocks read it is skipped, with the reason, when it is
absent. docs/installation.md ("Documentation examples") says the same for contributors.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The run follows the machine's load, as a user's does (its numbers do not depend on the
#: threads; tests/conftest.py).
pytestmark = pytest.mark.usefixtures("follow_load")

ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``$CLICKRANK_SHARED_DATA``, else ``../shared/data`` next to the checkout (as conftest)."""
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
FENCE = re.compile(r"^(\s*)```(\w+)\s*$")
FRAGMENT = re.compile(r"^\s*<!--\s*fragment:\s*(?P<reason>.*?)\s*-->\s*$")
#: Pages whose blocks read the shared data sets (skipped without them).
NEEDS_SHARED = re.compile(r"CLICKRANK_SHARED_DATA")
#: Pages whose blocks take more than ~15 s on 2 cores (``tasks.py test --quick`` skips them).
SLOW = {"README.md", "cli.md", "lambdamart.md"}
#: Pages not checked yet, and why (each entry is a debt, to be removed).
PENDING: dict[str, str] = {}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "python" or "bash"
    code: str
    fragment: str | None  # the reason, for a block marked as a fragment

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(page: Path) -> list[Block]:
    """The fenced python/bash blocks of a markdown page, with their fragment markers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, lang = len(m.group(1)), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        if lang in LANGS:
            prev = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            marker = FRAGMENT.match(prev)
            code = "\n".join(ln[indent:] for ln in lines[i + 1 : j])
            reason = marker.group("reason") if marker else None
            out.append(Block(page, i + 1, LANGS[lang], code, reason))
        i = j + 1
    return out


ALL = {page: blocks(page) for page in PAGES}


def test_every_fragment_says_why():
    for page_blocks in ALL.values():
        for b in page_blocks:
            assert b.fragment is None or len(b.fragment) >= 10, f"{b}: give the fragment a reason"


def test_the_marker_is_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "text\n\n<!-- fragment: needs a cluster -->\n```bash\nspark-submit x\n```\n\n"
        "```python\nprint(1)\n```\n\n   ```py\n   x = 1\n   ```\n```toml\na = 1\n```\n"
    )
    got = blocks(page)
    assert [(b.line, b.lang, b.code, b.fragment) for b in got] == [
        (4, "bash", "spark-submit x", "needs a cluster"),
        (8, "python", "print(1)", None),
        (12, "python", "x = 1", None),
    ]


def _run_python(block: Block, namespace: dict) -> None:
    if block.code.lstrip().startswith(">>>"):
        parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(verbose=False)
        test = parser.get_doctest(block.code, namespace, str(block), str(block.page), block.line)
        buf = io.StringIO()
        runner.run(test, out=buf.write, clear_globs=False)
        assert runner.failures == 0, f"{block}: doctest failed\n{buf.getvalue()}"
        namespace.update(test.globs)  # a copy of namespace, with what the block defined
        return
    code = compile(block.code, str(block), "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, namespace)  # noqa: S102 - the documentation's own example


def _run_bash(block: Block, env: dict, cwd: Path) -> None:
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, (
        f"{block}: exit {res.returncode}\n--- stdout\n{res.stdout[-3000:]}\n"
        f"--- stderr\n{res.stderr[-3000:]}"
    )


def _env(shared: Path) -> dict:
    bindir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        "CLICKRANK_SHARED_DATA": str(shared),
        "MPLBACKEND": "Agg",
    }


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else [])
        for p in PAGES
        if ALL[p]
    ],
)
def test_the_blocks_of_a_page_run_as_written(page, tmp_path, monkeypatch):
    if page.name in PENDING:
        pytest.skip(f"{page.name}: {PENDING[page.name]}")
    runnable = [b for b in ALL[page] if b.fragment is None]
    if not runnable:
        return  # every block is a fragment, with its reason (test_every_fragment_says_why)
    shared = shared_data_dir().resolve()
    if any(NEEDS_SHARED.search(b.code) for b in runnable) and not shared.is_dir():
        pytest.skip(f"{page.name} reads the shared data, not found at {shared}")
    env = _env(shared)
    monkeypatch.setenv("CLICKRANK_SHARED_DATA", str(shared))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for b in runnable:
        t0 = time.perf_counter()
        if b.lang == "python":
            _run_python(b, namespace)
        else:
            _run_bash(b, env, tmp_path)
        print(f"{b}: {time.perf_counter() - t0:.1f} s")
