"""Writing files without losing any: atomic writes with the user's umask, crash-safe folder swaps.

``atomic_write_bytes`` writes a temporary file beside the target and renames it into place, with
the mode of the file it replaces or the user's umask. ``make_staging`` / ``swap_in`` /
``keep_old_entries`` replace a whole folder: the new content is written into a temporary sibling
and exchanged with the old folder in one step, so a failure or a kill at any point leaves one
complete version in place. ``hcg_core.store`` uses them for graph directories.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import StoreError

# Staging folders are siblings named ``.<name>.hcg-tmp-<pid>-<random>`` holding this marker
# until they are complete; a marked one whose process is gone is a killed build's leftover.
STAGING_TAG = ".hcg-tmp-"
STAGING_MARK = ".hcg-staging"

# Test seam: when set, called as ``hook(step, path)`` before every file write ("write"), folder
# swap ("swap"), move ("move") and removal ("remove") that this module makes. tests/test_store_faults.py raises from it
# (or kills the process) to prove that a failure at any step loses no graph and no user file.
_fault_hook: Callable[[str, Path], None] | None = None


def _step(step: str, path: Path) -> None:
    if _fault_hook is not None:
        _fault_hook(step, path)


def fault_step(step: str, path: Path) -> None:
    """The test seam, for other modules' own steps (``store`` publishing a version)."""
    _step(step, path)


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
    _step("write", path)
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


# ---------------------------------------------------------------- crash-safe directory swaps


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_staging(real: Path) -> None:
    """Delete marked staging folders next to ``real`` left by builds that were killed."""
    prefix = f".{real.name}{STAGING_TAG}"
    with contextlib.suppress(OSError):
        for p in real.parent.iterdir():
            if not p.name.startswith(prefix) or p.is_symlink() or not (p / STAGING_MARK).is_file():
                continue
            pid = p.name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and not pid_alive(int(pid)):
                shutil.rmtree(p, ignore_errors=True)


def make_staging(real: Path) -> Path:
    remove_stale_staging(real)
    staging = Path(
        tempfile.mkdtemp(prefix=f".{real.name}{STAGING_TAG}{os.getpid()}-", dir=real.parent)
    )
    # mkdtemp makes 0700; the graph directory gets the old one's mode, else the umask's.
    with contextlib.suppress(OSError):
        mode = stat.S_IMODE(real.stat().st_mode) if real.is_dir() else 0o777 & ~_umask()
        os.chmod(staging, mode)
    (staging / STAGING_MARK).write_bytes(b"")
    return staging


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2); False where the OS cannot."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, TypeError):  # no libc, or a libc without renameat2
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def swap_in(staging: Path, real: Path) -> Path | None:
    """Put the complete ``staging`` folder at ``real``; return where the old folder went, if any.

    The swap is one atomic exchange where the OS offers it (Linux), so at every instant ``real``
    holds either the old graph or the new one; elsewhere it is two renames.
    """
    _step("swap", real)
    (staging / STAGING_MARK).unlink()
    fsync_dir(staging)
    if not real.exists():
        os.rename(staging, real)
        fsync_dir(real.parent)
        return None
    old = staging  # after the exchange, the staging path holds the old folder
    if not exchange(staging, real):
        old = real.parent / f".{real.name}.hcg-old-{os.getpid()}-{os.urandom(4).hex()}"
        os.rename(real, old)
        try:
            os.rename(staging, real)
        except OSError:
            os.rename(old, real)  # put the previous graph back before reporting the failure
            raise
    fsync_dir(real.parent)
    return old


def is_temp_name(name: str) -> bool:
    """A leftover of ``atomic_write_bytes`` (``.<name>.<random>.tmp``), never a user's file."""
    return name.startswith(".") and name.endswith(".tmp")


def keep_old_entries(old: Path, real: Path, *, replaced: frozenset[str]) -> None:
    """Move the old folder's entries the new graph lacks into it, then remove the old folder.

    They are the LLM reply cache and, under ``force``, a user's own files; the ``replaced`` names
    (the previous graph's own files) are dropped with the old folder. A failure leaves the rest in
    the old folder, whose path the error names.
    """
    try:
        for entry in sorted(old.iterdir()):
            target = real / entry.name
            if entry.name in replaced or entry.name == STAGING_MARK or is_temp_name(entry.name):
                continue  # the previous graph's own files (a stale report must not survive)
            if not target.exists() and not target.is_symlink():
                _step("move", target)
                os.rename(entry, target)
        _step("remove", old)
        shutil.rmtree(old)
    except OSError as exc:
        raise StoreError(
            f"the new graph is in place, but tidying the previous folder failed "
            f"({os_reason(exc)}); its remaining files are kept in {old}",
            path=real,
        ) from None


__all__ = [
    "fault_step",
    "fsync_dir",
    "remove_stale_staging",
    "STAGING_MARK",
    "STAGING_TAG",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_writable_dir",
    "keep_old_entries",
    "make_staging",
    "swap_in",
]
