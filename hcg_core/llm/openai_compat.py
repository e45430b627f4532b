"""A StructuredLLM over any OpenAI-compatible chat-completions server (OpenAI, Azure, Ollama, vLLM,
LM Studio, a LiteLLM proxy), with its own retry loop, a concurrency bound, a cache and a ledger.

The SDK's own retries are switched off (``max_retries=0``) so that every request the server sees is
counted here, and ``Retry-After`` is honoured exactly.
"""

from __future__ import annotations

import asyncio
import os
import random
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import ConfigError, LLMError, LLMUnavailableError
from .accounting import Ledger
from .bridge import run_sync
from .cache import ResponseCache, cache_key
from .structured import DEFAULT_MAX_REASKS, complete_validated, schema_for

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_CONCURRENCY = 8
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_BASE = 1.0  # seconds; doubled per attempt, with jitter
DEFAULT_BACKOFF_MAX = 60.0  # cap on one wait, Retry-After included


def _retry_after(response: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``retry-after``), if any."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None


class OpenAIStructuredLLM:
    """Structured output from an OpenAI-compatible server.

    Each request asks for ``response_format={"type": "json_schema", ...}`` built from the pydantic
    model; if the server rejects that (HTTP 400), this client switches to ``{"type":
    "json_object"}`` for good and validates the reply itself. Replies that fail validation are
    re-asked with the error appended (``max_reasks``), then ``LLMOutputError`` is raised.

    Args:
        model: the server's model name.
        base_url: e.g. ``http://localhost:11434/v1`` for Ollama; None means OpenAI.
        api_key: defaults to ``$OPENAI_API_KEY``; local servers accept any value.
        max_concurrency: requests in flight at once.
        timeout: seconds per request; a timeout is retried like a 5xx.
        max_retries: retries per request on 429, 5xx, timeouts and connection errors.
        cache_dir: on-disk reply cache; a rebuild with the same inputs then makes zero calls.
        backoff_base / backoff_max: exponential backoff (with jitter) bounds, in seconds.
        max_reasks: re-asks after a reply fails validation.
        ledger: where calls, tokens and retries are counted (per stage); one is made if None.

    Example::

        llm = OpenAIStructuredLLM("llama3.1", base_url="http://localhost:11434/v1", api_key="x")
        reply = llm.complete([{"role": "user", "content": "..."}], MyModel)
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        cache_dir: str | os.PathLike[str] | None = None,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        max_reasks: int = DEFAULT_MAX_REASKS,
        temperature: float = 0.0,
        ledger: Ledger | None = None,
    ) -> None:
        if not model:
            raise ConfigError("model name is empty; pass the server's model, e.g. 'gpt-4o-mini'")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive seconds, got {timeout}")
        if max_retries < 0 or max_reasks < 0:
            raise ConfigError("max_retries and max_reasks must be >= 0")
        self.model = model
        self.base_url = base_url
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not self._api_key:
            if base_url is None:
                raise ConfigError(
                    "no API key: set OPENAI_API_KEY or pass api_key (any value works for a "
                    "local server given by base_url)"
                )
            self._api_key = "not-needed"  # local servers ignore the key but the SDK wants one
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_reasks = max_reasks
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.temperature = temperature
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.ledger = ledger if ledger is not None else Ledger()
        self.name = f"openai-compatible:{model}"
        self.json_schema_supported = True
        # The SDK's HTTP client and the semaphore belong to one event loop; the sync bridge may
        # run each build on a fresh loop, so keep one pair per loop.
        self._per_loop: weakref.WeakKeyDictionary[Any, tuple[Any, asyncio.Semaphore]] = (
            weakref.WeakKeyDictionary()
        )

    # -- the StructuredLLM seam --------------------------------------------------------------
    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        """Return a validated ``response_model`` instance (from the cache when possible)."""
        schema = schema_for(response_model)
        key = cache_key(self.model, messages, schema) if self.cache is not None else None
        if key is not None:
            cached = self.cache.get(key)
            if cached is not None:
                try:
                    result = response_model.model_validate(cached)
                except ValueError:
                    result = None  # schema changed under the same key: ask again
                if result is not None:
                    self.ledger.add(cache_hits=1)
                    return result

        async def send(msgs: list[dict[str, str]]) -> str:
            return await self._send(msgs, response_model, schema)

        result = await complete_validated(
            send,
            messages,
            response_model,
            max_reasks=self.max_reasks,
            on_reask=lambda exc: self.ledger.add(reasks=1),
        )
        if key is not None:
            self.cache.put(key, result.model_dump(mode="json"), model=self.model)
        return result

    def complete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        """Sync form of ``acomplete`` (works inside a running event loop too)."""
        return run_sync(lambda: self.acomplete(messages, response_model))

    # -- HTTP ---------------------------------------------------------------------------------
    def _loop_state(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        state = self._per_loop.get(loop)
        if state is None:
            try:
                import openai
            except ImportError as exc:  # the openai SDK is an optional extra
                raise ConfigError(
                    "the OpenAI-compatible client needs the openai package: "
                    "pip install 'hcg-rag[openai]'"
                ) from exc
            client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
            state = (client, asyncio.Semaphore(self.max_concurrency))
            self._per_loop[loop] = state
        return state

    def _response_format(self, response_model: type[BaseModel], schema: dict) -> dict:
        if self.json_schema_supported:
            return {
                "type": "json_schema",
                "json_schema": {"name": response_model.__name__, "schema": schema, "strict": False},
            }
        return {"type": "json_object"}

    def _backoff(self, attempt: int, server_wait: float | None) -> float:
        own = self.backoff_base * (2**attempt) * random.uniform(0.5, 1.0)
        return min(self.backoff_max, max(own, server_wait or 0.0))

    async def _send(
        self, messages: list[dict[str, str]], response_model: type[BaseModel], schema: dict
    ) -> str:
        import openai

        client, semaphore = self._loop_state()
        attempt = 0
        while True:
            fmt = self._response_format(response_model, schema)
            wait: float | None = None
            async with semaphore:
                try:
                    resp = await client.chat.completions.create(
                        model=self.model,
                        messages=messages,
                        temperature=self.temperature,
                        response_format=fmt,
                    )
                except openai.BadRequestError as exc:
                    self.ledger.add(calls=1)
                    if fmt["type"] == "json_schema":
                        # The server does not do json_schema: fall back once, for good.
                        self.json_schema_supported = False
                        continue
                    raise LLMError(f"{self.name} rejected the request (400): {exc}") from exc
                except (
                    openai.RateLimitError,
                    openai.InternalServerError,
                    openai.APITimeoutError,
                ) as exc:
                    self.ledger.add(calls=1)
                    wait = _retry_after(getattr(exc, "response", None))
                    error: Exception = exc
                except openai.APIConnectionError as exc:
                    # The request may never have reached the server: not counted as a call.
                    error = exc
                except openai.APIStatusError as exc:
                    self.ledger.add(calls=1)
                    raise LLMError(
                        f"{self.name} at {self.base_url or 'api.openai.com'} answered "
                        f"{exc.status_code}: {exc.message}; check the model name, URL and API key"
                    ) from exc
                else:
                    self._account(resp)
                    content = resp.choices[0].message.content if resp.choices else None
                    return content or ""
            if attempt >= self.max_retries:
                raise LLMUnavailableError(
                    f"{self.name}: giving up after {attempt + 1} attempts: {error}; rerun the "
                    "build to resume (finished calls are cached)"
                ) from error
            self.ledger.add(retries=1)
            await asyncio.sleep(self._backoff(attempt, wait))
            attempt += 1

    def _account(self, resp: Any) -> None:
        usage = getattr(resp, "usage", None)
        self.ledger.add(
            calls=1,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        )

    async def aclose(self) -> None:
        """Close the HTTP client of the current loop (optional; clients are per loop)."""
        loop = asyncio.get_running_loop()
        state = self._per_loop.pop(loop, None)
        if state is not None:
            await state[0].close()

    def __repr__(self) -> str:
        return (
            f"OpenAIStructuredLLM(model={self.model!r}, base_url={self.base_url!r}, "
            f"max_concurrency={self.max_concurrency})"
        )


def llm_from_cli(
    *,
    base_url: str | None,
    model: str,
    api_key: str | None = None,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    cache_dir: str | os.PathLike[str] | None = None,
) -> OpenAIStructuredLLM:
    """What ``hcg build --llm-base-url URL --llm-model NAME`` constructs (key from OPENAI_API_KEY)."""
    return OpenAIStructuredLLM(
        model,
        base_url=base_url,
        api_key=api_key,
        max_concurrency=max_concurrency,
        timeout=timeout,
        max_retries=max_retries,
        cache_dir=Path(cache_dir) if cache_dir is not None else None,
    )
