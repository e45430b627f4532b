"""A StructuredLLM over any OpenAI-compatible chat-completions server (OpenAI, Azure, Ollama, vLLM,
LM Studio, a LiteLLM proxy), with its own retry loop, a concurrency bound, a cache and a ledger.

The SDK's own retries are switched off (``max_retries=0``) so that every request the server sees is
counted here, and ``Retry-After`` is honoured exactly. Provider quirks are handled per cause of a
400 (see ``classify_bad_request``): only a complaint about the response format steps that request
kind down a mode (strict schema, schema, JSON object, plain text); a rejected temperature is
dropped; a context-length 400 and a reply cut at the token limit raise errors the pipeline answers
by splitting the batch; any other 400 fails that one item with the provider's message.

What a request learns about the provider holds for every request, including those already in
flight: each 400 is judged against the settings that request was sent with, so a request that
went out with a temperature before another one learnt it is rejected is resent without it, not
failed. The token limit is the user's ``max_tokens`` when given, else the budget the pipeline set
for the request (``budget.completion_budget``), scaled per request kind after cut replies.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import time
import weakref
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, TypeVar
from urllib.parse import urlparse

from pydantic import BaseModel

from ..embedders._common import check_count
from ..errors import (
    ConfigError,
    LLMContextLengthError,
    LLMError,
    LLMProtocolError,
    LLMRefusalError,
    LLMRejectedError,
    LLMTruncatedError,
    LLMUnavailableError,
    MissingAPIKeyError,
)
from ..safe_text import env_secrets, host_of, redact, sends_to_openai
from .accounting import Ledger
from .bridge import run_sync
from .budget import requested_tokens
from .cache import ResponseCache, cache_key
from .structured import DEFAULT_MAX_REASKS, complete_validated, schema_for, strict_schema

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_CONCURRENCY = 8
# The key sent to a server that is not OpenAI's when none is set: the SDK wants one.
NO_KEY = "not-needed"
DEFAULT_TIMEOUT = 60.0  # seconds for a whole request, headers and body (a slow trickle included)
# A connection that is not up within this (or the timeout, if shorter) will not come up: a dead
# host must not hold each attempt for the whole request timeout.
CONNECT_TIMEOUT = 10.0
DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_BASE = 1.0  # seconds; doubled per attempt, with jitter
DEFAULT_BACKOFF_MAX = 60.0  # cap on one wait, Retry-After included
DEFAULT_TEMPERATURE = 0.0  # None: never sent (some models reject any temperature)
MAX_TOKENS_CEILING = 32768  # a reply cut at the limit doubles max_tokens up to this, then splits
BREAKER_COOLDOWN = 60.0  # seconds a server taken to be down is not tried again
MAX_RESENDS = 8  # settings changes (mode, temperature, token limit) tried for one item
# Response modes, most to least structured; a request kind steps down only on a 400 about it.
RESPONSE_MODES = ("json_schema_strict", "json_schema", "json_object", "text")

_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length",
    "tokens exceed",
)
_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "json schema",
    "json_object",
    "structured output",
)


def classify_bad_request(message: str) -> str:
    """What a 400 is about: ``context``, ``temperature``, ``max_tokens``, ``response_format``
    or ``other`` (only the first three change what is sent; ``other`` fails the item).

    >>> classify_bad_request("This model's maximum context length is 8192 tokens")
    'context'
    >>> classify_bad_request("Unsupported value: 'temperature' does not support 0.0")
    'temperature'
    >>> classify_bad_request("response_format json_schema is not supported")
    'response_format'
    >>> classify_bad_request("messages[1].content must be a string")
    'other'
    """
    text = (message or "").lower()
    if any(w in text for w in _CONTEXT_WORDS):
        return "context"
    if "temperature" in text:
        return "temperature"
    if "max_tokens" in text or "max_completion_tokens" in text:
        return "max_tokens"
    if any(w in text for w in _FORMAT_WORDS) or ("schema" in text and "strict" in text):
        return "response_format"
    return "other"


_REFUSAL_WORDS = ("not supported", "unsupported", "does not support", "unknown", "not allowed")


def _refuses_json_schema(message: str) -> bool:
    """Whether a response-format 400 refuses ``json_schema`` as such (not just a strict schema).

    >>> _refuses_json_schema("response_format json_schema is not supported")
    True
    >>> _refuses_json_schema("Invalid schema for response_format 'R': 'required' is missing")
    False
    """
    text = message.lower()
    return "json_schema" in text and any(w in text for w in _REFUSAL_WORDS)


class _Resend(Exception):
    """Internal: the request must be sent again with changed settings (re-keyed for the cache)."""


def _check_base_url(base_url: str | None) -> None:
    if base_url is None:
        return
    try:
        parsed = urlparse(base_url)
        ok = parsed.scheme in ("http", "https") and bool(parsed.hostname)
        parsed.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(
            f"--llm-base-url {redact(repr(base_url))} is not an http(s) URL; pass the server's "
            "base URL, e.g. http://localhost:11434/v1"
        )


# What the SDK raises on a 200 whose body is not JSON (JSONDecodeError), nests deeper than its
# parser recurses (RecursionError) or is not a completion.
_NOT_A_COMPLETION = (ValueError, AttributeError, TypeError, RecursionError)


class _WholeRequestTimeout(TimeoutError):
    """The request did not complete within ``timeout`` seconds, however the bytes trickled in."""


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


@dataclass(eq=False, repr=False)
class OpenAIStructuredLLM:
    """Structured output from an OpenAI-compatible server.

    Each request kind (response schema) starts with ``response_format`` ``json_schema`` in strict
    form; a 400 about the response format steps that kind down to a non-strict schema, then
    ``json_object`` and plain text, where the compact schema goes into the prompt. Replies are
    validated here item by item; replies that fail are re-asked with the error appended
    (``max_reasks``), then ``LLMOutputError`` is raised.

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
        temperature: sent unless None; dropped for good, for every request of this client,
            when the provider rejects it.
        max_tokens: the completion limit sent; it wins over the budget a pipeline step sets
            per request (``completion_budget``); with neither, the server's default. A reply cut
            at the limit doubles the limit (up to ``MAX_TOKENS_CEILING``) for that request kind.
        ledger: where calls, tokens and retries are counted (per stage); one is made if None.

    Example::

        llm = OpenAIStructuredLLM("llama3.1", base_url="http://localhost:11434/v1", api_key="x")
        reply = llm.complete([{"role": "user", "content": "..."}], MyModel)
    """

    model: str
    _: KW_ONLY
    base_url: str | None = None
    api_key: str | None = None
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    cache_dir: str | os.PathLike[str] | None = None
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_max: float = DEFAULT_BACKOFF_MAX
    max_reasks: int = DEFAULT_MAX_REASKS
    temperature: float | None = DEFAULT_TEMPERATURE
    max_tokens: int | None = None
    ledger: Ledger | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("model name is empty; pass the server's model, e.g. 'gpt-4o-mini'")
        check_count(self.max_concurrency, "max_concurrency")
        check_count(self.max_retries, "max_retries", 0)
        check_count(self.max_reasks, "max_reasks", 0)
        check_count(self.max_tokens, "max_tokens", none_ok=True)
        if not 0 < self.timeout < math.inf:
            raise ConfigError(f"timeout must be a finite number of seconds > 0, got {self.timeout}")
        if (temperature := self.temperature) is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not math.isfinite(temperature)
            or not 0 <= temperature <= 2
        ):
            raise ConfigError(
                f"temperature must be a number in [0, 2] (or None), got {temperature!r}"
            )
        _check_base_url(self.base_url)
        self.api_key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if not self.api_key:
            # Checked here, before any call: with a placeholder key OpenAI would refuse only the
            # first request, after the corpus was read and chunked.
            if sends_to_openai(self.base_url):
                raise MissingAPIKeyError(
                    f"no API key for {host_of(self.base_url or os.environ.get('OPENAI_BASE_URL'))}"
                    ": set OPENAI_API_KEY (or pass api_key); a local server given by base_url "
                    "needs none"
                )
            self.api_key = NO_KEY  # local servers ignore the key but the SDK wants one
        self.timeout = float(self.timeout)
        self.cache = ResponseCache(self.cache_dir) if self.cache_dir is not None else None
        self.ledger = self.ledger if self.ledger is not None else Ledger()
        self.name = f"openai-compatible:{self.model}"
        # Provider quirks learnt while running: per request kind (schema name) the response mode
        # and how often cut replies doubled its token limit; for the whole provider, whether a
        # temperature is accepted and the name of the token-limit parameter.
        self.modes: dict[str, str] = {}
        self._kind_scale: dict[str, int] = {}
        self.send_temperature = self.temperature is not None
        self._max_tokens_param = "max_tokens"
        # Failed attempts (connection errors, timeouts) since the last reply from the server, over
        # all requests: at max_retries + 1 the server is taken to be down and every request
        # fails at once for BREAKER_COOLDOWN seconds, instead of each one waiting out its retries.
        self._dead_attempts = 0
        self._down_until = 0.0
        # The SDK's HTTP client and the semaphore belong to one event loop; the sync bridge may
        # run each build on a fresh loop, so keep one pair per loop.
        self._per_loop: weakref.WeakKeyDictionary[Any, tuple[Any, asyncio.Semaphore]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def json_schema_supported(self) -> bool:
        """False once any request kind had to leave the JSON-schema modes."""
        return all(m.startswith("json_schema") for m in self.modes.values())

    # -- the StructuredLLM seam --------------------------------------------------------------
    def _limit(self, kind: str) -> int | None:
        """The token limit to send: the user's, else the request's budget, times the kind's
        scale (doubled per reply cut at the limit), never above the ceiling (or the user's)."""
        base = self.max_tokens if self.max_tokens is not None else requested_tokens.get()
        if base is None:
            return None
        return min(max(MAX_TOKENS_CEILING, base), base * self._kind_scale.get(kind, 1))

    def _sampling(self, kind: str) -> dict[str, Any]:
        return {
            "temperature": self.temperature if self.send_temperature else None,
            self._max_tokens_param: self._limit(kind),
        }

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        """Return a validated ``response_model`` instance (from the cache when possible)."""
        schema = schema_for(response_model)
        kind = response_model.__name__
        for _ in range(MAX_RESENDS):
            mode = self.modes.get(kind, RESPONSE_MODES[0])
            key = None
            if self.cache is not None:
                key = cache_key(
                    self.model,
                    messages,
                    schema,
                    base_url=self.base_url,
                    sampling=self._sampling(kind),
                    mode=mode,
                )
                cached = self.cache.load(key, response_model)
                if cached is not None:
                    self.ledger.add(cache_hits=1)
                    return cached

            async def send(msgs: list[dict[str, str]], mode: str = mode) -> str:
                return await self._send(msgs, response_model, schema, mode)

            try:
                result = await complete_validated(
                    send,
                    messages,
                    response_model,
                    max_reasks=self.max_reasks,
                    on_reask=lambda exc: self.ledger.add(reasks=1),
                    on_dropped=lambda n: self.ledger.add(dropped_items=n),
                    schema_hint=not mode.startswith("json_schema"),
                )
            except _Resend:
                continue
            if key is not None:
                self.cache.put(key, result.model_dump(mode="json"), model=self.model)
            return result
        raise LLMRejectedError(f"{self.name}: no request settings the provider accepts for {kind}")

    def complete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        """Sync form of ``acomplete`` (works inside a running event loop too)."""

        async def once() -> M:
            try:
                return await self.acomplete(messages, response_model)
            finally:
                await self.aclose()  # this loop ends here; its HTTP client must not outlive it

        return run_sync(once)

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
                api_key=self.api_key,
                base_url=self.base_url,
                max_retries=0,
                # The SDK's own Timeout: openai 1.x and 2.x wrap httpx, 3.x httpx2, and each
                # rejects the other's class.
                timeout=openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
            )
            state = (client, asyncio.Semaphore(self.max_concurrency))
            self._per_loop[loop] = state
        return state

    def _request_options(
        self, response_model: type[BaseModel], schema: dict, mode: str
    ) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if mode.startswith("json_schema"):
            strict = mode == "json_schema_strict"
            options["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": response_model.__name__,
                    "schema": strict_schema(schema) if strict else schema,
                    "strict": strict,
                },
            }
        elif mode == "json_object":
            options["response_format"] = {"type": "json_object"}
        sampling = self._sampling(response_model.__name__)
        options.update((name, value) for name, value in sampling.items() if value is not None)
        return options

    def _backoff(self, attempt: int, server_wait: float | None) -> float:
        own = self.backoff_base * (2**attempt) * random.uniform(0.5, 1.0)
        return min(self.backoff_max, max(own, server_wait or 0.0))

    def _resend(self) -> _Resend:
        self.ledger.add(resends=1)
        return _Resend()

    def _on_bad_request(self, exc: Any, kind: str, mode: str, sent: dict[str, Any]) -> None:
        """Adapt to a 400 and raise ``_Resend``, or raise the error that fails the item.

        ``sent`` holds the options this request went out with: what it complains about is judged
        against them, not against what the client sends now, since another request in flight may
        already have learnt the same lesson (then this one is simply resent with the new settings).
        """
        message = self._mask(str(getattr(exc, "message", "") or exc))
        cause = classify_bad_request(message)
        if cause == "context":
            raise LLMContextLengthError(f"{self.name}: request too long (400): {message}") from exc
        if cause == "temperature" and "temperature" in sent:
            self.send_temperature = False
            raise self._resend() from exc
        if cause == "max_tokens" and "max_tokens" in sent:
            self._max_tokens_param = "max_completion_tokens"
            raise self._resend() from exc
        if cause == "response_format" and mode != RESPONSE_MODES[-1]:
            step = RESPONSE_MODES.index(mode) + 1
            if mode == "json_schema_strict" and _refuses_json_schema(message):
                step += 1  # json_schema itself is refused, not its strict form: skip both
            now = RESPONSE_MODES.index(self.modes.get(kind, RESPONSE_MODES[0]))
            self.modes[kind] = RESPONSE_MODES[max(step, now)]  # never back up a step
            raise self._resend() from exc
        raise LLMRejectedError(f"{self.name} rejected the request (400): {message}") from exc

    def _on_truncated(self, kind: str, sent: dict[str, Any]) -> None:
        """A reply cut at the token limit: resend with the kind's limit doubled, up to the
        ceiling (a concurrent cut of the same kind doubles it once, not twice)."""
        self.ledger.add(truncated=1)
        limit = sent.get("max_tokens", sent.get("max_completion_tokens"))
        ceiling = max(MAX_TOKENS_CEILING, self.max_tokens or 0)
        if limit is not None and limit < ceiling:
            scale = self._kind_scale.get(kind, 1)
            if self._limit(kind) == limit:  # not yet raised by another cut reply
                self._kind_scale[kind] = scale * 2
            raise self._resend()
        raise LLMTruncatedError(
            f"{self.name}: the reply for {kind} stopped at the token limit "
            f"({limit if limit is not None else 'server default'})"
        )

    async def _send(
        self,
        messages: list[dict[str, str]],
        response_model: type[BaseModel],
        schema: dict,
        mode: str,
    ) -> str:
        client, semaphore = self._loop_state()
        kind = response_model.__name__
        attempt = 0
        while True:
            async with semaphore:
                self._check_down()
                # Built once a slot is free, so it holds what requests before it learnt.
                options = self._request_options(response_model, schema, mode)
                try:
                    # The SDK's timeout bounds each read, so a server trickling one byte a
                    # second never trips it: the whole request is bounded here.
                    resp = await asyncio.wait_for(
                        client.chat.completions.create(
                            model=self.model, messages=messages, **options
                        ),
                        self.timeout,
                    )
                except Exception as exc:
                    error, wait = self._failed(exc, kind, mode, options)
                else:
                    return self._reply(resp, kind, options)
            if self._dead_attempts > self.max_retries:
                self._down_until = time.monotonic() + BREAKER_COOLDOWN
            if attempt >= self.max_retries or self._down_until > time.monotonic():
                # A Retry-After beyond the cap on one wait: say when a rerun can succeed.
                asked = (
                    f" (the server asks to wait {wait:,.0f} s; each retry waited at most "
                    f"{self.backoff_max:g} s)"
                    if wait is not None and wait > self.backoff_max
                    else ""
                )
                raise LLMUnavailableError(
                    f"{self.name}: giving up after {attempt + 1} attempts: "
                    f"{type(error).__name__}: {self._mask(str(error))}{asked}; rerun the build "
                    "to resume (finished calls are cached)"
                ) from error
            self.ledger.add(retries=1)
            await asyncio.sleep(self._backoff(attempt, wait))
            attempt += 1

    def _failed(
        self, exc: Exception, kind: str, mode: str, sent: dict[str, Any]
    ) -> tuple[Exception, float | None]:
        """Count a request that raised ``exc``; return the error to retry on (with the wait the
        server asked for), or raise the error that fails the item or stops the build."""
        import openai

        known = (openai.APIConnectionError, openai.APIStatusError, TimeoutError, *_NOT_A_COMPLETION)
        if not isinstance(exc, known):
            raise exc  # not a failed request: it propagates as it is, uncounted
        if isinstance(exc, asyncio.TimeoutError):
            exc = _WholeRequestTimeout(f"no complete reply within {self.timeout:g} s (--timeout)")
        # A lost connection may never have reached the server: not counted as a call (a
        # timeout of the SDK's, a connection error too, did reach it).
        if not isinstance(exc, openai.APIConnectionError) or isinstance(
            exc, openai.APITimeoutError
        ):
            self.ledger.add(calls=1)
        if isinstance(exc, openai.BadRequestError):
            self._on_bad_request(exc, kind, mode, sent)
        if isinstance(exc, (TimeoutError, openai.APIConnectionError)):
            self._dead_attempts += 1
            return exc, None
        self._dead_attempts = 0  # the server answered: it is up
        if isinstance(exc, (openai.RateLimitError, openai.InternalServerError)):
            return exc, _retry_after(getattr(exc, "response", None))
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code in (413, 422):  # too large / unprocessable: this item only
                self._on_bad_request(exc, kind, mode, sent)
            raise LLMError(
                f"{self.name} at {self._where} answered {exc.status_code}: "
                f"{self._mask(str(exc.message))}; check the model name, URL and API key"
            ) from None
        raise LLMProtocolError(  # what is left of ``known``: _NOT_A_COMPLETION
            f"{self.name}: the server's 200 reply is not an OpenAI chat completion "
            f"({type(exc).__name__}: {redact(str(exc)[:200], self._secrets)}); check "
            "that the base URL is the server's /v1 API"
        ) from None

    def _reply(self, resp: Any, kind: str, sent: dict[str, Any]) -> str:
        """The text of a chat completion. ``LLMProtocolError`` when the 200 reply has another
        shape (the SDK builds its objects without validating them); a refusal or a reply cut at
        the token limit raises too."""
        self._account(resp)
        self._dead_attempts = 0
        choices = getattr(resp, "choices", None)
        if isinstance(choices, list) and not choices:
            raise LLMProtocolError(
                "the server's 200 reply is not an OpenAI chat completion (its 'choices' list is "
                "empty: no answer); check the model name and the server's log"
            )
        if not isinstance(choices, list):
            raise LLMProtocolError(
                f"the server's 200 reply is not an OpenAI chat completion (no 'choices' list; got "
                f"a {type(resp).__name__}); check that the base URL ends in /v1"
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if message is None or not (content is None or isinstance(content, str)):
            raise LLMProtocolError(
                "the server's 200 reply is not an OpenAI chat completion (choices[0].message."
                "content is not text)"
            )
        if refusal := getattr(message, "refusal", None):
            raise LLMRefusalError(f"{self.name} refused: {self._mask(str(refusal)[:300])}")
        if getattr(choice, "finish_reason", None) == "length":
            self._on_truncated(kind, sent)
        return content or ""

    @property
    def _secrets(self) -> tuple[str | None, ...]:
        return (self.api_key, *env_secrets())

    def _mask(self, text: str) -> str:
        """A provider's or the SDK's text with the key and URL credentials masked (a provider
        may echo the Authorization header in its 401)."""
        return redact(text, self._secrets)

    @property
    def _where(self) -> str:
        return redact(self.base_url or os.environ.get("OPENAI_BASE_URL") or "api.openai.com")

    def _check_down(self) -> None:
        """Fail at once while the server is taken to be down (see ``_dead_attempts``)."""
        if self._down_until > time.monotonic():
            raise LLMUnavailableError(
                f"{self.name}: the server at {self._where} did not answer the last "
                f"{self._dead_attempts} attempts (connection failed or timed out); not tried "
                "again for now; rerun the build to resume (finished calls are cached)"
            ) from TimeoutError("server down")

    def _account(self, resp: Any) -> None:
        usage = getattr(resp, "usage", None)
        self.ledger.add(
            calls=1,
            prompt_tokens=_token_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_token_count(getattr(usage, "completion_tokens", 0)),
        )

    async def aclose(self) -> None:
        """Close the HTTP client of the current loop (optional; clients are per loop)."""
        loop = asyncio.get_running_loop()
        state = self._per_loop.pop(loop, None)
        if state is not None:
            await state[0].close()

    def __repr__(self) -> str:
        return (
            f"OpenAIStructuredLLM(model={self.model!r}, base_url={redact(repr(self.base_url))}, "
            f"max_concurrency={self.max_concurrency})"
        )


# A count a server reports above this is damaged, not a reply's size (no model's context holds
# a billion tokens); such a count, a negative one or a non-number is counted as 0 so the ledger
# stays a sum of real figures (a string here failed the build with a TypeError).
_MAX_REPORTED_TOKENS = 10**9


def _token_count(value: Any) -> int:
    """A ``usage`` token count as the ledger adds it: a whole number from 0 to the cap, else 0.

    >>> _token_count(12), _token_count("lots"), _token_count(-5), _token_count(None)
    (12, 0, 0, 0)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not (0 <= value <= _MAX_REPORTED_TOKENS):  # NaN fails this test too
        return 0
    return int(value)
