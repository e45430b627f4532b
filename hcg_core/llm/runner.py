"""Asking one pipeline item: catch what an item may fail with, count it, and let the build go on.

Output that never validates (``LLMOutputError``) and a server that stays down for one request
(``LLMUnavailableError``) fail that item only; anything else (a wrong URL, a bad key) stops the
build, because every other item would fail the same way.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import LLMOutputError, LLMUnavailableError
from ..ports import StructuredLLM
from .accounting import Ledger, current_stage

M = TypeVar("M", bound=BaseModel)
MAX_FAILURE_RECORDS = 50  # failures listed in the report (all are counted)


class MeteredLLM:
    """Counts seam calls for an LLM that keeps no ledger of its own (e.g. a framework wrapper).

    Such an LLM's retries and tokens are invisible here, so ``calls`` means items asked.
    """

    def __init__(self, inner: StructuredLLM, ledger: Ledger) -> None:
        self.inner = inner
        self.ledger = ledger
        self.name = inner.name

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        self.ledger.add(calls=1)
        return await self.inner.acomplete(messages, response_model)


def metered(llm: StructuredLLM) -> tuple[StructuredLLM, Ledger]:
    """The LLM to use and the ledger that counts its calls (its own when it keeps one)."""
    ledger = getattr(llm, "ledger", None)
    if isinstance(ledger, Ledger):
        return llm, ledger
    ledger = Ledger()
    return MeteredLLM(llm, ledger), ledger


@dataclass
class Failures:
    """Failed items: all counted in the ledger, the first ``MAX_FAILURE_RECORDS`` described."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def add(self, item: str, exc: Exception) -> None:
        if len(self.records) < MAX_FAILURE_RECORDS:
            self.records.append(
                {
                    "stage": current_stage.get(),
                    "item": item,
                    "error": f"{type(exc).__name__}: {exc}"[:500],
                }
            )


# The progress bar of the running stage, if any; tasks started inside a stage inherit it.
stage_bar: ContextVar[Any | None] = ContextVar("hcg_stage_bar", default=None)


@contextmanager
def stage_progress(name: str, enabled: bool | None) -> Iterator[None]:
    """A tqdm bar counting the stage's finished items; ``None`` shows it only on a terminal."""
    if enabled is None:
        enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not enabled:
        yield
        return
    from tqdm import tqdm

    bar = tqdm(desc=name, unit="item", leave=True)
    token = stage_bar.set(bar)
    try:
        yield
    finally:
        stage_bar.reset(token)
        bar.close()


async def ask_item(
    llm: StructuredLLM,
    messages: Sequence[dict[str, str]],
    response_model: type[M],
    *,
    item: str,
    ledger: Ledger,
    failures: Failures,
) -> M | None:
    """The validated reply, or None when this item failed (counted as ``failed``)."""
    try:
        return await llm.acomplete(messages, response_model)
    except (LLMOutputError, LLMUnavailableError) as exc:
        ledger.add(failed=1)
        failures.add(item, exc)
        return None
    finally:
        bar = stage_bar.get()
        if bar is not None:
            bar.update(1)


class StageTimer:
    """Adds wall-clock seconds of a stage to the ledger."""

    def __init__(self, ledger: Ledger, name: str) -> None:
        self.ledger, self.name = ledger, name

    def __enter__(self) -> StageTimer:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.ledger.add(self.name, seconds=round(time.perf_counter() - self.t0, 3))
