"""One writer at a time per graph directory: an advisory lock file that dies with its holder.

``graph_lock(directory)`` holds an exclusive ``flock`` on ``directory/.hcg-lock`` for a
read-modify-write (``hcg add``, ``remove``, ``apply``, a rebuild, an adapter's save). The kernel
drops the lock when its process exits, killed or not, so a crash never leaves the graph locked.
A second writer waits up to a timeout (``DEFAULT_LOCK_TIMEOUT``, the ``HCG_LOCK_TIMEOUT``
environment variable, or the caller's value), then fails with ``GraphLockedError`` naming the
holder's pid and host, which the holder wrote into the lock file. Readers never lock.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .bounded import loads_json
from .errors import ConfigError, GraphLockedError, HCGError, StoreError

try:  # POSIX; elsewhere saves are not serialised (no portable lock that dies with its process)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".hcg-lock"
DEFAULT_LOCK_TIMEOUT = 30.0
LOCK_TIMEOUT_ENV = "HCG_LOCK_TIMEOUT"
_POLL_SECONDS = 0.05

# (real directory, thread) -> [fd, depth]: a thread that holds the lock may take it again (the
# CLI locks around load + edit + save, and the save locks too). Another thread of the same
# process opens its own descriptor, and flock makes it wait like another process.
_held: dict[tuple[str, int], list[int]] = {}


def lock_timeout(value: float | None = None) -> float:
    """The lock timeout in seconds: ``value``, else ``$HCG_LOCK_TIMEOUT``, else 30."""
    source = "the lock timeout"
    if value is None:
        raw = os.environ.get(LOCK_TIMEOUT_ENV)
        if raw is None or not raw.strip():
            return DEFAULT_LOCK_TIMEOUT
        source = f"${LOCK_TIMEOUT_ENV}"
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{source} is {raw!r}; expected a number of seconds") from None
    if isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{source} is {value!r}; expected a finite number of seconds >= 0")
    return float(value)


def lock_holder(directory: str | os.PathLike) -> str:
    """What the lock file says of its current holder ("pid 12 on host h since ..."), or ""."""
    try:
        text = (Path(directory) / LOCK_NAME).read_text(encoding="utf-8") or "{}"
        data = loads_json(text[:65536], path=Path(directory) / LOCK_NAME)  # bounded, typed
    except (OSError, ValueError, HCGError):
        return ""
    if not isinstance(data, dict) or "pid" not in data:
        return ""
    return f"pid {data.get('pid')} on host {data.get('host')} since {data.get('since')}"


@contextlib.contextmanager
def graph_lock(directory: str | os.PathLike, *, timeout: float | None = None) -> Iterator[None]:
    """Hold ``directory``'s writer lock (created with the folder if needed) for the block."""
    directory = Path(directory)
    key = (os.path.realpath(directory), threading.get_ident())
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    wait = lock_timeout(timeout)
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            directory / LOCK_NAME,
            os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0),
            0o666,
        )
    except OSError as exc:
        raise StoreError(
            f"cannot lock the graph directory for writing: {exc.strerror or exc}", path=directory
        ) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = lock_holder(directory)
                    who = holder or "holder unknown"
                    raise GraphLockedError(
                        f"another process is writing this graph directory ({who}); waited "
                        f"{wait:g} s. Retry when it is done, or raise the wait "
                        f"(--lock-timeout, ${LOCK_TIMEOUT_ENV})",
                        path=directory,
                        holder=holder,
                    ) from None
                time.sleep(_POLL_SECONDS)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with contextlib.suppress(OSError):  # the holder's name is a courtesy, not the lock
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        _held[key] = [fd, 1]
        try:
            yield
        finally:
            del _held[key]
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def add_lock_timeout_argument(parser: Any) -> None:
    """``--lock-timeout`` for a command that writes a graph directory (an argparse parser)."""

    def seconds(text: str) -> float:
        try:
            return lock_timeout(float(text))
        except (ValueError, ConfigError):
            raise argparse.ArgumentTypeError(
                f"{text!r} must be a finite number of seconds, 0 or more"
            ) from None

    parser.add_argument(
        "--lock-timeout",
        type=seconds,
        default=None,
        help=f"seconds to wait while another process writes the graph directory (default "
        f"${LOCK_TIMEOUT_ENV}, else {DEFAULT_LOCK_TIMEOUT:g})",
    )
