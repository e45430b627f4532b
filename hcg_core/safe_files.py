"""Writing files without losing any: atomic writes with the user's umask.

``atomic_write_bytes`` writes a temporary file beside the target and renames it into place, with
the mode of the file it replaces or the user's umask; ``hcg_core.store`` builds its versioned
graph directories on it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import StoreError

# Test seam: when set, called as ``hook(step, path)`` before every file write ("write") this module
# makes, and the store's publish ("swap") and removals ("remove"). tests/test_store_faults.py
# raises from it (or kills the process) to prove that a failure at any step loses no graph and no
# user file.
_fault_hook: Callable[[str, Path], None] | None = None


def fault_step(step: str, path: Path) -> None:
    """The test seam (``_fault_hook``), before each write here and other modules' own steps
    (``store`` publishing a version)."""
    if _fault_hook is not None:
        _fault_hook(step, path)


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (os.umask is not atomic)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _new_file_mode(path: Path, like: Path | None = None) -> int:
    """Keep the mode of the file being replaced (a hand-edited 0644 stays 0644), else the umask's."""
    for old in (path, like):
        if old is not None:
            with contextlib.suppress(OSError):
                return stat.S_IMODE(old.stat().st_mode)
    return 0o666 & ~_umask()


def atomic_write_bytes(
    path: str | os.PathLike, data: bytes, *, like: str | os.PathLike | None = None
) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder and an atomic rename.

    The file gets the mode of the file it replaces (or of ``like``), else the user's umask
    (0644 under umask 022), as editors and git expect; ``mkstemp`` alone would make it 0600.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fault_step("write", path)
    mode = _new_file_mode(path, Path(like) if like is not None else None)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):  # POSIX; elsewhere the OS default applies
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(
    path: str | os.PathLike, text: str, *, like: str | os.PathLike | None = None
) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), like=like)


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_writable_dir(path: str | os.PathLike, *, what: str = "folder") -> Path:
    """Create ``path`` (and its parents) if needed and prove a file can be written in it.

    Run before a long or paid step, so that a read-only disk or a path under a file fails in a
    second, not after the work. Raises ``StoreError`` with the OS's reason.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".hcg-probe-", dir=path)
        try:
            os.write(fd, b"probe")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise StoreError(f"cannot write the {what} here: {os_reason(exc)}", path=path) from None
    return path


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
