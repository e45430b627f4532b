"""Per-stage accounting of LLM use: calls the server saw, tokens, retries, re-asks, cache hits, failures.

The current stage is a context variable, so concurrent tasks started inside ``stage("tier2")``
charge that stage without passing a ledger around.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

COUNTERS: tuple[str, ...] = (
    "calls",  # HTTP requests sent to the server (every retry and re-ask included)
    "prompt_tokens",  # from the server's ``usage``
    "completion_tokens",
    "retries",  # requests repeated after a 429, 5xx, timeout or connection error
    "reasks",  # requests repeated because the reply failed validation
    "cache_hits",  # items answered from the on-disk cache (no request)
    "failed",  # items given up on (recorded by the pipeline, the build goes on)
    "refused",  # items the model refused twice (asked, re-asked once): dropped, counted
    "dropped_items",  # list items of kept replies dropped because they did not validate
    "splits",  # batches split in two after a context-length 400 or a reply cut at the limit
    "truncated",  # replies cut at the token limit (resent with a larger limit, or split)
    "resends",  # requests sent again with other settings: a larger token limit after a cut
    # reply, no temperature, another response mode, max_completion_tokens
)

current_stage: contextvars.ContextVar[str] = contextvars.ContextVar(
    "hcg_llm_stage", default="other"
)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Charge every LLM call made inside this block (and tasks it starts) to stage ``name``."""
    token = current_stage.set(name)
    try:
        yield
    finally:
        current_stage.reset(token)


class Ledger:
    """Thread-safe counters per stage; ``snapshot()`` is JSON-ready."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, dict[str, float]] = {}

    def add(self, stage_name: str | None = None, **counts: float) -> None:
        name = stage_name or current_stage.get()
        unknown = set(counts) - set(COUNTERS) - {"seconds"}
        if unknown:
            raise ValueError(f"unknown ledger counters {sorted(unknown)}; use {COUNTERS}")
        with self._lock:
            row = self._stages.setdefault(name, dict.fromkeys(COUNTERS, 0))
            for key, value in counts.items():
                row[key] = row.get(key, 0) + value

    def get(self, stage_name: str, counter: str) -> float:
        with self._lock:
            return self._stages.get(stage_name, {}).get(counter, 0)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {name: dict(row) for name, row in sorted(self._stages.items())}

    def total(self, counter: str) -> float:
        with self._lock:
            return sum(row.get(counter, 0) for row in self._stages.values())
