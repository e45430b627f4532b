"""Content-addressed on-disk cache of validated LLM replies: sha256(provider base URL, model,
sampling settings, response mode, messages, schema) -> JSON.

One file per key, written atomically (temp file + rename), so a killed build leaves only whole
entries behind and a rerun repeats at most the calls that were in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ..bounded import loads_json
from ..errors import HCGError, LLMCacheError
from ..safe_files import atomic_write_text

CACHE_FORMAT = 2
M = TypeVar("M", bound=BaseModel)


def cache_key(
    model: str,
    messages: Sequence[dict[str, str]],
    schema: dict[str, Any],
    *,
    base_url: str | None = None,
    sampling: dict[str, Any] | None = None,
    mode: str = "",
) -> str:
    """The hex sha256 of a canonical JSON of everything that shapes a reply.

    ``base_url`` tells two servers with the same model name apart; ``sampling`` holds the
    temperature and token limit sent (None values are dropped); ``mode`` is the response mode
    (``json_schema_strict``, ``json_schema``, ``json_object``, or a framework's own).
    """
    payload = json.dumps(
        {
            "v": CACHE_FORMAT,
            "base_url": (base_url or "").rstrip("/"),
            "model": model,
            "sampling": {k: v for k, v in (sampling or {}).items() if v is not None},
            "mode": mode,
            "messages": list(messages),
            "schema": schema,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    """A directory of ``<key[:2]>/<key>.json`` files, each a validated reply as plain JSON."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def load(self, key: str, response_model: type[M]) -> M | None:
        """The stored reply validated as ``response_model``, or None when absent, unreadable or
        not valid (a bad entry is just a miss; a schema changed under the same key is asked
        again)."""
        path = self._path(key)
        try:
            reply = loads_json(path.read_text(encoding="utf-8"), path=path)["reply"]
            return response_model.model_validate(reply)
        except (OSError, ValueError, KeyError, TypeError, HCGError):
            return None

    def put(self, key: str, reply: Any, *, model: str = "") -> None:
        """Store one reply; ``LLMCacheError`` when the disk refuses (full, read-only).

        The entries already written stay whole (each is renamed into place complete), so a
        rerun after freeing space pays only for the replies that were not cached.
        """
        record = {"format": CACHE_FORMAT, "model": model, "reply": reply}
        path = self._path(key)
        try:
            atomic_write_text(path, json.dumps(record, ensure_ascii=False, sort_keys=True))
        except OSError as exc:
            raise LLMCacheError(
                f"cannot write the LLM reply cache ({exc.strerror or exc}); the {len(self):,} "
                "replies cached before are kept: free space and rerun to resume from them",
                path=self.directory,
            ) from None

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json")) if self.directory.exists() else 0
