"""Helpers of the safety tests: one-line errors, untouched files, read-only and full folders."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clickrank._core._io import LEDGER, is_temp_name

#: The CLI run as a child process (signals, read-only and full file systems).
CLI = [sys.executable, "-c", "from clickrank.cli import main; main()"]


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file below ``root``: relative path -> (content digest, mtime_ns).

    clickrank's ledger is left out (it records what clickrank wrote, and a
    command may add to it); everything else must stay byte- and time-identical.
    """
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != LEDGER:
            out[str(p.relative_to(root))] = (
                hashlib.sha256(p.read_bytes()).hexdigest(),
                p.stat().st_mtime_ns,
            )
    return out


def one_line_error(res, code: int = 1) -> str:
    """Assert exit ``code``, no traceback, and exactly one ``Error:`` line; return it."""
    assert res.exit_code == code, (res.exit_code, res.output)
    assert "Traceback" not in res.output, res.output
    text = res.stderr if hasattr(res, "stderr") and res.stderr else res.output
    errors = [ln for ln in text.splitlines() if ln.startswith("Error")]
    assert len(errors) == 1, text
    assert text.rstrip().splitlines()[-1] == errors[0], text
    return errors[0]


def no_temp_files(root: Path) -> bool:
    """True if no clickrank temporary file or folder is left below ``root``."""
    return not any(is_temp_name(p.name) for p in root.rglob("*"))


def run_cli(
    args: list[str],
    *,
    mount: tuple[str, Path] | None = None,
    size: str = "32k",
    timeout: float = 120,
    **kw,
) -> subprocess.CompletedProcess:
    """Run ``clickrank ARGS`` in a child process, optionally inside a mount.

    ``mount=("ro", folder)`` makes ``folder`` read-only, ``("full", folder)``
    mounts a tmpfs of ``size`` on it (32 KiB: less than clickrank's 64 KiB
    write probe, so the disk counts as full): as root in a user and mount namespace
    (``unshare -rm``), so nothing outside the child sees it; as another user,
    a read-only folder is ``chmod 555``. Skips the test where neither works.
    """
    cmd = [*CLI, *args]
    if mount is None:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    kind, folder = mount
    if os.geteuid() != 0 and kind == "ro":
        folder.chmod(0o555)
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        finally:
            folder.chmod(0o755)
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip(f"cannot make a {kind} file system here (needs unshare as root)")
    how = (
        f"mount --bind -o ro '{folder}' '{folder}'"
        if kind == "ro"
        else f"mount -t tmpfs -o size={size} tmpfs '{folder}'"
    )
    script = f"{how} && exec " + " ".join(f"'{c}'" for c in cmd)
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )
    if "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"cannot make a {kind} file system here: {proc.stderr.strip()}")
    return proc


def one_line_error_of(proc: subprocess.CompletedProcess) -> str:
    """:func:`one_line_error` for a child process."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error")]
    assert len(errors) == 1, proc.stderr
    return errors[0]
