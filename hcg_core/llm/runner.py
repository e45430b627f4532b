"""Asking one pipeline item: catch what an item may fail with, count it, and let the build go on.

Output that never validates (``LLMOutputError``), a server that stays down for one request
(``LLMUnavailableError``) and a 400 about that request (``LLMRejectedError``) fail that item only,
recorded with a short cause so the CLI can group them; anything else (a bad key, an unknown model)
stops the build, because every other item would fail the same way. ``ask_split`` halves a batch
whose request was too long or whose reply was cut at the token limit. ``ResilientLLM`` gives a
framework model (LlamaIndex, LangChain) the retries, cache and accounting of the HTTP client.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass, field
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import (
    LLMContextLengthError,
    LLMOutputError,
    LLMProtocolError,
    LLMRefusalError,
    LLMRejectedError,
    LLMTruncatedError,
    LLMUnavailableError,
)
from ..ports import StructuredLLM
from ..safe_text import env_secrets, redact
from .accounting import Ledger, current_stage
from .cache import ResponseCache, cache_key
from .structured import schema_for

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
MAX_FAILURE_RECORDS = 50  # failures listed in the report (all are counted, by cause)
MAX_SPLIT_DEPTH = 5  # a batch is halved at most this often (1/32 of it)
DEFAULT_FRAMEWORK_RETRIES = 4
DEFAULT_FRAMEWORK_BACKOFF = 1.0  # seconds, doubled per attempt, with jitter
DEFAULT_FRAMEWORK_BACKOFF_MAX = 60.0  # cap on one wait
_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_TRANSIENT_NAMES = ("timeout", "ratelimit", "connection", "unavailable", "overloaded", "internal")


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_transient(exc: BaseException) -> bool:
    """Whether a framework model's error is worth a retry: 429, 5xx, timeouts, lost connections.

    Looks through the cause chain (adapters wrap provider errors in ``LLMError``).
    """
    for e in _chain(exc):
        if isinstance(e, LLMUnavailableError | TimeoutError | ConnectionError):
            return True
        status = getattr(e, "status_code", None) or getattr(
            getattr(e, "response", None), "status_code", None
        )
        if isinstance(status, int):
            return status in _TRANSIENT_STATUS
        if any(n in type(e).__name__.lower() for n in _TRANSIENT_NAMES):
            return True
    return False


def failure_cause(exc: BaseException) -> str:
    """A short cause for grouping failures: the same cause reads the same for every item."""
    if isinstance(exc, LLMUnavailableError):
        inner = [type(e).__name__ for e in _chain(exc)][1:]
        causes = (_UNAVAILABLE_CAUSES[name] for name in inner if name in _UNAVAILABLE_CAUSES)
        return next(causes, "server unavailable after retries")
    for kind, cause in _CAUSES:
        if isinstance(exc, kind):
            return cause
    return type(exc).__name__


# Why a server stayed unavailable: the first of these types in LLMUnavailableError's cause chain.
_UNAVAILABLE_CAUSES = {
    "APIConnectionError": "server unreachable (connection failed)",
    "APITimeoutError": "server too slow (request timed out)",
    "_WholeRequestTimeout": "server too slow (request timed out)",
    "InternalServerError": "server errors (HTTP 5xx)",
    "RateLimitError": "rate limited (HTTP 429)",
}
# Checked in this order: a subclass before the class it refines.
_CAUSES: tuple[tuple[type[Exception], str], ...] = (
    (LLMRefusalError, "the model refused"),
    (LLMProtocolError, "reply is not an OpenAI chat completion (not JSON, or no choices)"),
    (LLMTruncatedError, "reply cut at the token limit"),
    (LLMOutputError, "reply never matched the schema (malformed or invalid JSON)"),
    (LLMContextLengthError, "request longer than the model's context"),
    (LLMRejectedError, "provider rejected the request (HTTP 400)"),
)


@dataclass
class Failures:
    """Failed items: all counted by cause, the first ``MAX_FAILURE_RECORDS`` described."""

    records: list[dict[str, Any]] = field(default_factory=list)
    causes: Counter[str] = field(default_factory=Counter)
    _stages: dict[str, set[str]] = field(default_factory=dict)
    _examples: dict[str, str] = field(default_factory=dict)

    def add(self, item: str, exc: Exception) -> None:
        cause = failure_cause(exc)
        error = redact(f"{type(exc).__name__}: {exc}", env_secrets())[:500]
        self.causes[cause] += 1
        self._stages.setdefault(cause, set()).add(current_stage.get())
        self._examples.setdefault(cause, error)
        if len(self.records) < MAX_FAILURE_RECORDS:
            record = {"stage": current_stage.get(), "item": item, "cause": cause, "error": error}
            self.records.append(record)

    def __len__(self) -> int:
        return sum(self.causes.values())

    def grouped(self) -> list[dict[str, Any]]:
        """One entry per cause, most frequent first: count, stages, one example error."""
        return [
            {
                "cause": cause,
                "items": n,
                "stages": sorted(self._stages.get(cause, ())),
                "example": self._examples.get(cause, ""),
            }
            for cause, n in sorted(self.causes.items(), key=lambda kv: (-kv[1], kv[0]))
        ]


ITEM_ERRORS = (LLMOutputError, LLMUnavailableError, LLMRejectedError)


async def gather_or_cancel(*aws: Awaitable[T]) -> list[T]:
    """``asyncio.gather`` that, when one awaitable raises (an error that stops the build: a 401,
    a full disk under the cache), cancels the others and waits for them before re-raising.

    Plain ``gather`` leaves them running against a client that is then closed; their errors
    were never retrieved and asyncio printed them at shutdown.
    """
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


@dataclass(eq=False, repr=False)
class ResilientLLM:
    """A framework model (LlamaIndex, LangChain, any StructuredLLM without a ledger) with the care
    the HTTP client gives: retries with backoff on transient errors, the reply cache (resume),
    and accounting (``calls`` are requests made, retries included; tokens are not visible).
    """

    inner: StructuredLLM
    ledger: Ledger | None = None
    _: KW_ONLY
    cache_dir: str | os.PathLike[str] | None = None
    max_retries: int = DEFAULT_FRAMEWORK_RETRIES
    backoff_base: float = DEFAULT_FRAMEWORK_BACKOFF
    backoff_max: float = DEFAULT_FRAMEWORK_BACKOFF_MAX

    def __post_init__(self) -> None:
        self.ledger = self.ledger if self.ledger is not None else Ledger()
        self.name = self.inner.name
        self.cache = ResponseCache(self.cache_dir) if self.cache_dir is not None else None

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        key = None
        if self.cache is not None:
            schema = schema_for(response_model)
            key = cache_key(self.name, messages, schema, mode="framework")
            cached = self.cache.load(key, response_model)
            if cached is not None:
                self.ledger.add(cache_hits=1)
                return cached
        attempt = 0
        while True:
            self.ledger.add(calls=1)
            try:
                result = await self.inner.acomplete(messages, response_model)
                break
            except Exception as exc:
                if not is_transient(exc):
                    raise
                if attempt >= self.max_retries:
                    raise LLMUnavailableError(
                        f"{self.name}: giving up after {attempt + 1} attempts: "
                        f"{type(exc).__name__}: {exc}; rerun the build to resume"
                    ) from exc
                self.ledger.add(retries=1)
                wait = self.backoff_base * (2**attempt) * random.uniform(0.5, 1.0)
                await asyncio.sleep(min(self.backoff_max, wait))
                attempt += 1
        if key is not None:
            self.cache.put(key, result.model_dump(mode="json"), model=self.name)
        return result


def metered(
    llm: StructuredLLM, *, cache_dir: str | os.PathLike[str] | None = None
) -> tuple[StructuredLLM, Ledger]:
    """The LLM to use and the ledger that counts its calls (its own when it keeps one).

    An LLM without a ledger (a framework wrapper) is wrapped in ``ResilientLLM``.
    """
    ledger = getattr(llm, "ledger", None)
    if isinstance(ledger, Ledger):
        return llm, ledger
    wrapped = ResilientLLM(llm, cache_dir=cache_dir)
    return wrapped, wrapped.ledger


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


async def _once_more_if_refused(call: Callable[[], Awaitable[T]], ledger: Ledger) -> T:
    """``call()``; a refusal is asked again once (a model may refuse a request it answers on a
    second try), counted as a re-ask; a second refusal propagates."""
    try:
        return await call()
    except LLMRefusalError:
        ledger.add(reasks=1)
        return await call()


async def ask_item(
    llm: StructuredLLM,
    messages: Sequence[dict[str, str]],
    response_model: type[M],
    *,
    item: str,
    ledger: Ledger,
    failures: Failures,
) -> M | None:
    """The validated reply, or None when this item failed (counted as ``failed``) or was
    refused twice (counted as ``refused``: dropped, the build goes on within a limit).

    A batch of one: ``ask_split`` cannot halve it, so a request too long or a reply cut fails it.
    """
    [(_, reply)] = await ask_split(
        [item],
        lambda _: llm.acomplete(messages, response_model),
        item=item,
        ledger=ledger,
        failures=failures,
    )
    return reply


async def ask_split(
    items: Sequence[T],
    ask: Callable[[Sequence[T]], Awaitable[Any]],
    *,
    item: str,
    ledger: Ledger,
    failures: Failures,
    depth: int = 0,
) -> list[tuple[list[T], Any | None]]:
    """``ask(items)`` for a batch; halve it when the request is too long or the reply was cut.

    Returns (sub-batch, reply or None) pairs covering ``items`` in order; a failed sub-batch is
    counted and recorded once, under ``item``; one refused twice is counted as ``refused``.
    """
    items = list(items)
    try:
        return [(items, await _once_more_if_refused(lambda: ask(items), ledger))]
    except LLMRefusalError:
        ledger.add(refused=1)
        return [(items, None)]
    except ITEM_ERRORS as exc:
        too_long = isinstance(exc, (LLMContextLengthError, LLMTruncatedError))
        if too_long and len(items) > 1 and depth < MAX_SPLIT_DEPTH:
            ledger.add(splits=1)
            mid = len(items) // 2
            half = partial(ask_split, ask=ask, item=item, ledger=ledger, failures=failures)
            halves = await gather_or_cancel(
                half(items[:mid], depth=depth + 1), half(items[mid:], depth=depth + 1)
            )
            return [*halves[0], *halves[1]]
        ledger.add(failed=1)
        failures.add(item, exc)
        return [(items, None)]
    finally:
        bar = stage_bar.get()
        if bar is not None and depth == 0:
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
