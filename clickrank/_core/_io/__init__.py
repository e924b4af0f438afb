"""File IO shared by the modules: atomic output, ownership of outputs, JSON input.

Atomic output
    Every file clickrank writes goes through :func:`atomic_write`: the content
    goes to a hidden temporary file in the destination folder, named
    ``.NAME.clickrank-PID-XXXXXXXX.tmp``, which is then renamed onto the
    destination (``os.replace`` is atomic on POSIX and Windows), so a reader
    never sees a half-written file and a failure leaves nothing behind. A
    temporary file left by a process that was killed (its PID is gone) is
    removed the next time clickrank writes into that folder
    (:func:`clean_stale`); nothing else is ever matched.

Ownership
    clickrank replaces or deletes only what it wrote itself. Each folder it
    writes into gets a small ledger, :data:`LEDGER` (``.clickrank.json``),
    that records the name, size, modification time and (for files up to
    8 MiB) a BLAKE2 digest of every file clickrank published there. A file is
    *clickrank's* if its folder's ledger lists it with the same size and the
    same modification time or digest; a folder is clickrank's if it has a
    ledger and everything below it is clickrank's. A file that is not (a
    user's file, or one edited since) is never overwritten or deleted:
    :func:`check_output` and :func:`atomic_write` refuse with one line, and
    ``--force`` does not change that.

Input
    :func:`read_json` reads UTF-8 JSON and names the file, line and encoding
    problem in its errors.
"""

from .. import _signals
from ._checks import check_folder_output, check_output, check_writable
from ._ledger import (
    LEDGER,
    LEDGER_LIMIT,
    check_ledger,
    clear_owned,
    first_foreign,
    is_owned,
    publish,
    record,
    remove_owned,
)
from ._lock import lock_output, locking, release_locks
from ._read import check_input, parquet_parts, read_json, read_text, special_kind
from ._temp import _discard_live, clean_stale, discard, is_temp_name, temp_path
from ._write import (
    atomic_write,
    atomic_write_json,
    atomic_write_text,
    json_default,
    output_errors,
)

# a signal that ends the process removes its temporary files, then its locks (the kernel
# would release them; this also removes the lock files)
_signals.at_finish(_discard_live)
_signals.at_finish(release_locks)

__all__ = [
    "check_input",
    "parquet_parts",
    "special_kind",
    "LEDGER",
    "LEDGER_LIMIT",
    "check_ledger",
    "atomic_write",
    "atomic_write_text",
    "atomic_write_json",
    "json_default",
    "publish",
    "read_json",
    "read_text",
    "temp_path",
    "discard",
    "is_temp_name",
    "clean_stale",
    "is_owned",
    "first_foreign",
    "record",
    "clear_owned",
    "remove_owned",
    "check_output",
    "check_folder_output",
    "check_writable",
    "output_errors",
    "lock_output",
    "locking",
    "release_locks",
]
