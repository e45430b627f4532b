"""Deterministic fakes that ship with the library, for tests and offline demos.

- ``ScriptedLLM``: a StructuredLLM whose replies come from a responder function (no network).
- ``StubLLMServer``: a small OpenAI-compatible HTTP server on 127.0.0.1 (port 0) whose replies come
  from the same kind of responder, with fault injection (429 + Retry-After, 500/503, slow replies,
  malformed JSON, json_schema rejection) and provider quirks (400 for any temperature, 400
  "context length exceeded" above a prompt size, a reply cut with ``finish_reason: "length"``, a
  ``<think>`` block with braces, a refusal, another 400), and a count of every request it saw.

A responder is ``f(request: LLMRequest) -> dict | str``: a dict is sent as JSON, a str verbatim.
Responders should depend only on the request's content, so replies are reproducible.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from pydantic import BaseModel

from .llm.accounting import Ledger
from .llm.structured import DEFAULT_MAX_REASKS, complete_validated, schema_for
from .prompts import SCHEMA_MARKER

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LLMRequest:
    """What a responder sees: the schema's name, the schema, and the chat messages."""

    schema_name: str
    schema: dict[str, Any]
    messages: tuple[dict[str, str], ...]

    @property
    def prompt(self) -> str:
        """The first user message: the original question, also inside a re-ask."""
        return next((m.get("content", "") for m in self.messages if m.get("role") == "user"), "")

    def enum(self, *path: str) -> list[str]:
        """The allowed values of a Literal field, found by property names through ``$defs``.

        ``request.enum("links", "target")`` follows ``properties.links -> items -> $ref ->
        properties.target`` and returns its ``enum`` (or ``[const]``).
        """
        node = self._field(*path)
        if node.get("type") == "array":
            node = _resolve(node.get("items", {}), self.schema.get("$defs", {}))
        if "enum" in node:
            return list(node["enum"])
        if "const" in node:
            return [node["const"]]
        return []

    def slots(self, *path: str) -> dict[str, list[str]]:
        """The per-dimension fields of an object (``slots("variables", "entities")``): each
        field's name and its enum, as ``enum`` finds them."""
        return {k: self.enum(*path, k) for k in self._field(*path).get("properties", {})}

    def _field(self, *path: str) -> dict[str, Any]:
        """The schema node at ``path`` (property names, through arrays' items and ``$defs``)."""
        node: Any = self.schema
        defs = self.schema.get("$defs", {})
        for key in path:
            node = _resolve(node, defs)
            if node.get("type") == "array":
                node = _resolve(node.get("items", {}), defs)
            node = node.get("properties", {}).get(key, {})
        return _resolve(node, defs)


def _resolve(node: Any, defs: dict) -> Any:
    if isinstance(node, dict) and "$ref" in node:
        return defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    if isinstance(node, dict) and "anyOf" in node:
        for alt in node["anyOf"]:
            if alt.get("type") != "null":
                return _resolve(alt, defs)
    return node


Responder = Callable[[LLMRequest], "dict[str, Any] | str"]


@dataclass(eq=False)
class ScriptedLLM:
    """A StructuredLLM answered by ``responder``; counts calls in ``ledger`` like the real client.

    >>> from pydantic import BaseModel
    >>> class Yes(BaseModel):
    ...     ok: bool
    >>> llm = ScriptedLLM(lambda req: {"ok": True})
    >>> llm.complete([{"role": "user", "content": "?"}], Yes).ok, llm.ledger.total("calls")
    (True, 1)
    """

    responder: Responder
    _: KW_ONLY
    name: str = "scripted"
    max_reasks: int = DEFAULT_MAX_REASKS
    ledger: Ledger = field(default_factory=Ledger)
    requests: list[LLMRequest] = field(default_factory=list, init=False)

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        schema = schema_for(response_model)

        async def send(msgs: list[dict[str, str]]) -> str:
            req = LLMRequest(response_model.__name__, schema, tuple(dict(m) for m in msgs))
            self.requests.append(req)
            self.ledger.add(calls=1)
            reply = self.responder(req)
            return reply if isinstance(reply, str) else json.dumps(reply)

        return await complete_validated(
            send,
            messages,
            response_model,
            max_reasks=self.max_reasks,
            on_reask=lambda exc: self.ledger.add(reasks=1),
            on_dropped=lambda n: self.ledger.add(dropped_items=n),
            schema_hint=False,  # the responder sees the schema itself, like a json_schema server
        )

    def complete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        from .llm.bridge import run_sync

        return run_sync(lambda: self.acomplete(messages, response_model))


# -- the stub server ------------------------------------------------------------------------------


@dataclass
class FaultPlan:
    """Deterministic faults by request number n (1-based, in arrival order): every k-th request.

    ``script`` maps exact request numbers to a fault and wins over the ``*_every`` rules. Unless
    ``allow_consecutive``, a fault never hits two requests in a row, so a retry gets through.
    Faults: rate_limit (429 + Retry-After), server_error (500), unavailable (503 + Retry-After),
    slow (reply after ``slow_seconds``), malformed (200 with broken JSON), unauthorized (401),
    length (200 with half the reply and finish_reason "length"), think (200 with a ``<think>``
    block holding braces before the JSON), fence (200 with the JSON in a ```json code fence),
    refusal (200 with message.refusal set and no content), bad_request (400 about the request
    itself, not its format); unauthorized and bad_request only by ``script``.
    """

    rate_limit_every: int = 0
    server_error_every: int = 0
    unavailable_every: int = 0
    slow_every: int = 0
    malformed_every: int = 0
    slow_seconds: float = 0.5
    retry_after: str = "0.01"
    reject_json_schema: bool = False
    reject_json_object: bool = False
    reject_strict: bool = False
    reject_temperature: bool = False
    context_limit_chars: int = 0
    length_every: int = 0
    think_every: int = 0
    fence_every: int = 0
    refusal_every: int = 0
    allow_consecutive: bool = False
    script: dict[int, str] = field(default_factory=dict)

    def fault_for(self, n: int) -> str | None:
        if n in self.script:
            return self.script[n]
        # The ``<fault>_every`` fields, tried in the order they are declared.
        for f in fields(self):
            every = getattr(self, f.name)
            if f.name.endswith("_every") and every and n % every == 0:
                return f.name.removesuffix("_every")
        return None


def _tokens(text: str) -> int:
    # A fixed, documented approximation (4 characters a token), so tests can recompute it.
    return math.ceil(len(text) / 4) if text else 0


@dataclass(eq=False)
class StubLLMServer:
    """An OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1 for tests.

    Use as a context manager; ``base_url`` is ready once entered. Counters (thread-safe):
    ``calls`` (every completions request received), ``ok`` (200 replies), ``by_schema``,
    ``by_fault``, ``prompt_tokens`` / ``completion_tokens`` (summed over 200 replies).

    Example::

        with StubLLMServer(lambda req: {"ok": True}, faults=FaultPlan(rate_limit_every=3)) as srv:
            llm = OpenAIStructuredLLM("stub", base_url=srv.base_url, api_key="x")
    """

    responder: Responder
    _: KW_ONLY
    faults: FaultPlan | None = None  # None: no faults
    delay: float = 0.0
    model: str = "stub-model"

    def __post_init__(self) -> None:
        self.faults = self.faults or FaultPlan()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.reset_counts()

    def reset_counts(self) -> None:
        with self._lock:
            self.calls = 0
            self.ok = 0
            self.prompt_tokens = 0
            self.completion_tokens = 0
            self.by_schema: Counter[str] = Counter()
            self.by_fault: Counter[str] = Counter()
            # Per request: response_format type (+ "-strict"), the schema sent (or None),
            # temperature, token limit, the last message.
            self.log: list[dict[str, Any]] = []
            self._last_fault_n = -10

    # lifecycle
    def start(self) -> StubLLMServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def handle_one_request(self) -> None:
                # A client that gave up on a slow reply closes its socket; the reply written
                # after that makes its system answer with a reset, met here when reading the
                # next request. That is the client's timeout, not a server fault: end the
                # connection quietly (socketserver would print a traceback).
                try:
                    super().handle_one_request()
                except ConnectionResetError:
                    self.close_connection = True

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": stub.model, "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(*stub._handle(body))

            def _send(self, status: int, payload: Any, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                fixed = {"content-type": "application/json", "content-length": str(len(data))}
                # A client that timed out and hung up is the point of a slow reply: not an error.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    for k, v in {**fixed, **(headers or {})}.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # serve_forever checks for shutdown every poll_interval (0.5 s by default): each close()
        # waited that long, about half a second per test that starts a server.
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            daemon=True,
            name="stub-llm-server",
        ).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StubLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("StubLLMServer is not started; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # one request
    def _handle(self, body: dict) -> tuple[int, Any, dict]:
        fmt = body.get("response_format") or {}
        schema_block = fmt.get("json_schema") or {}
        messages = tuple(body.get("messages") or ())
        # json_object mode: the schema is not in the request; recognise it from the prompt.
        name = schema_block.get("name") or _schema_name_from_messages(messages)
        n, fault = self._record(body, fmt, name)
        if self.delay:
            time.sleep(self.delay)
        refused = self._refusal(body, name, fault)
        if refused is not None:
            with self._lock:
                self.by_fault["400: " + refused.split(":")[0]] += 1
            return 400, {"error": {"message": refused, "type": "invalid_request_error"}}, {}
        if fault in _ERROR_REPLIES:
            status, message, retry = _ERROR_REPLIES[fault]
            headers = {"retry-after": self.faults.retry_after} if retry else {}
            return status, {"error": message}, headers
        if fault == "slow":
            time.sleep(self.faults.slow_seconds)
        request = LLMRequest(name, schema_block.get("schema") or {}, tuple(map(dict, messages)))
        content, finish, refusal = self._content(request, fault)
        return 200, self._completion(body, n, messages, content, finish, refusal), {}

    def _record(self, body: dict, fmt: dict, name: str) -> tuple[int, str | None]:
        """Count and log a request (``fmt``: its ``response_format``); its number and the fault
        planned for it."""
        schema_block = fmt.get("json_schema") or {}
        messages = body.get("messages") or ()
        with self._lock:
            self.calls += 1
            n = self.calls
            strict = bool(schema_block.get("strict"))
            self.log.append(
                {
                    "schema": name,
                    "format": (fmt.get("type") or "text") + ("-strict" if strict else ""),
                    "json_schema": schema_block.get("schema") or None,
                    "temperature": body.get("temperature"),
                    "max_tokens": body.get("max_tokens", body.get("max_completion_tokens")),
                    "prompt": str(messages[-1].get("content", "")) if messages else "",
                }
            )
            self.by_schema[name] += 1
            fault = self.faults.fault_for(n)
            if (
                fault not in (None, "slow")
                and not self.faults.allow_consecutive
                and self._last_fault_n == n - 1
            ):
                fault = None  # never two faults in a row: a retry gets through
            if fault is not None:
                self._last_fault_n = n
                self.by_fault[fault] += 1
        return n, fault

    def _refusal(self, body: dict, name: str, fault: str | None) -> str | None:
        """The message of a 400 the provider quirks (or the ``bad_request`` fault) answer."""
        fmt = body.get("response_format") or {}
        faults, kind = self.faults, fmt.get("type")
        if faults.reject_json_schema and kind == "json_schema":
            return "response_format json_schema is not supported"
        if faults.reject_strict and (fmt.get("json_schema") or {}).get("strict"):
            return (
                f"Invalid schema for response_format '{name}': In context=(), 'minimum' is not "
                "permitted"
            )
        if faults.reject_json_object and kind == "json_object":
            return "response_format json_object is not supported by this model"
        if faults.reject_temperature and "temperature" in body:
            return "Unsupported value: 'temperature' does not support this value with this model"
        chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or ())
        if faults.context_limit_chars and chars > faults.context_limit_chars:
            return (
                f"This model's maximum context length is {faults.context_limit_chars // 4} "
                f"tokens; your messages resulted in {chars // 4} tokens"
            )
        if fault == "bad_request":
            return "messages: content flagged as invalid by the provider"
        return None

    def _content(self, request: LLMRequest, fault: str | None) -> tuple[str, str, str | None]:
        """The reply's content, finish reason and refusal, as ``fault`` shapes them."""
        if fault == "malformed":
            return '{"this is": not json', "stop", None
        if fault == "refusal":
            return "", "stop", "I can't help with that request."
        reply = self.responder(request)
        content = reply if isinstance(reply, str) else json.dumps(reply)
        if fault == "length":
            return content[: len(content) // 2], "length", None
        if fault == "think":
            return '<think>Should it be {a} or {b}? {"draft": 1}</think>\n' + content, "stop", None
        if fault == "fence":
            return f"```json\n{content}\n```", "stop", None
        return content, "stop", None

    def _completion(
        self, body: dict, n: int, messages: Sequence, content: str, finish: str, refusal: Any
    ) -> dict[str, Any]:
        """A chat.completion object, its token counts added to the server's."""
        prompt_tokens = _tokens("".join(str(m.get("content", "")) for m in messages))
        completion_tokens = _tokens(content)
        with self._lock:
            self.ok += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
        message = {"role": "assistant", "content": content or None, "refusal": refusal}
        return {
            "id": f"stub-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model") or self.model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


# The faults answered with an error status: (status, the error object, whether Retry-After).
_ERROR_REPLIES: dict[str, tuple[int, dict[str, str], bool]] = {
    "rate_limit": (429, {"message": "rate limited", "type": "rate_limit"}, True),
    "unauthorized": (401, {"message": "invalid api key"}, False),
    "server_error": (500, {"message": "internal error"}, False),
    "unavailable": (503, {"message": "overloaded"}, True),
}


def _schema_name_from_messages(messages: Sequence[dict]) -> str:
    # The pipeline's prompts state the schema name, so json_object mode can still be scripted.
    for m in messages:
        text = str(m.get("content", ""))
        if SCHEMA_MARKER in text:
            return text.split(SCHEMA_MARKER, 1)[1].split()[0].strip()
    return ""


__all__ = [
    "FaultPlan",
    "LLMRequest",
    "Responder",
    "ScriptedLLM",
    "StubLLMServer",
]
