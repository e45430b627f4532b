"""Content-addressed on-disk cache of validated LLM replies: sha256(model, messages, schema) -> JSON.

One file per key, written atomically (temp file + rename), so a killed build leaves only whole
entries behind and a rerun repeats at most the calls that were in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1


def cache_key(model: str, messages: Sequence[dict[str, str]], schema: dict[str, Any]) -> str:
    """The hex sha256 of a canonical JSON of the request's content (model, messages, schema)."""
    payload = json.dumps(
        {"v": CACHE_FORMAT, "model": model, "messages": list(messages), "schema": schema},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _atomic_write_text(path: Path, text: str) -> None:
    # Private on purpose: the cache must not depend on the store module's import order.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResponseCache:
    """A directory of ``<key[:2]>/<key>.json`` files, each a validated reply as plain JSON."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored reply, or None when absent or unreadable (a bad entry is just a miss)."""
        path = self._path(key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))["reply"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, reply: Any, *, model: str = "") -> None:
        record = {"format": CACHE_FORMAT, "model": model, "reply": reply}
        _atomic_write_text(self._path(key), json.dumps(record, ensure_ascii=False, sort_keys=True))

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json")) if self.directory.exists() else 0
