"""Framework-free structured-output logic shared by every StructuredLLM implementation.

``parse_reply`` turns a model's text into a validated pydantic instance (JSON, possibly wrapped in
a code fence, prose or after a ``<think>`` block); list items that do not validate are dropped one
by one (and counted) rather than rejecting the whole reply. ``complete_validated`` re-asks with the
validation error appended, up to a bound, then raises ``LLMOutputError``. ``compact_schema`` is
the short schema text put into the prompt wherever ``response_format`` cannot carry the schema
(``json_object`` mode, a framework model's text path). The OpenAI client, the LlamaIndex and the
LangChain wrappers all use these, so behaviour is the same whichever model is plugged in:
``framework_reply`` is the wrappers' one way of asking a framework model, and
``as_structured_llm`` their one way of taking a model argument.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from ..bounded import check_depth
from ..errors import LLMError, LLMOutputError

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_REASKS = 2
REASK_TEMPLATE = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with one JSON object only, matching the required schema exactly; use only the "
    "allowed names."
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
# Reasoning models put their thoughts first; an unclosed block (a cut reply) runs to the end.
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(</\1>|\Z)", re.S | re.I)
SCHEMA_HINT = "Reply with one JSON object of this shape (? marks an optional field):"
MAX_ENUM_SHOWN = 200  # enum values spelled out in a compact schema; the rest are elided


def capped_list(max_items: int, *, required: bool = True) -> Any:
    """A pydantic ``Field`` for a list the prompt limits: the limit is the schema's ``maxItems``
    (the model sees it, strict mode included), not a validation rule, so a longer reply is not
    re-asked for its length; the caller keeps what it can use."""
    extra = {"maxItems": max(1, int(max_items))}
    if required:
        return Field(json_schema_extra=extra)
    return Field(default_factory=list, json_schema_extra=extra)


def named_choice(names: Sequence[str]) -> Any:
    """A ``str`` type whose schema is an enum of ``names`` (a schema-following server keeps to
    them) but which validates any string, so the caller can repair a near-miss from a lenient
    server ("Lake Tai hu") instead of losing the item. A plain str when ``names`` is empty."""
    if not names:
        return str
    return Annotated[str, Field(json_schema_extra={"enum": list(names)})]


def capped_text(max_chars: int, default: str = "") -> Any:
    """A pydantic ``Field`` for a string the prompt limits: ``maxLength`` in the schema (the model
    sees it), not a validation rule, so a longer reply is kept (the caller may cut it)."""
    return Field(default, json_schema_extra={"maxLength": max(1, int(max_chars))})


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the LLM (and hashed into the cache key)."""
    return model.model_json_schema()


def strip_think(text: str) -> str:
    """Drop ``<think>...</think>`` (and ``<thinking>``, ``<reasoning>``) blocks.

    >>> strip_think('<think>use {a} or {b}?</think>{"ok": 1}')
    '{"ok": 1}'
    """
    return _THINK.sub("", text or "")


def extract_json(text: str) -> Any:
    """Parse JSON from a model's text: the whole text, a fenced block, or the outermost {...}."""
    text = strip_think(text or "").strip()
    candidates = [text]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    last: Exception | None = None
    for cand in candidates:
        try:
            value = json.loads(cand)
            if isinstance(value, (dict, list)):  # a ValueError, "nesting deeper than N levels"
                check_depth(value, MAX_REPLY_DEPTH)
        except ValueError as exc:
            last = exc
            continue
        except RecursionError:  # deeper than the C parser recurses: no reply nests so
            last = ValueError(f"nesting deeper than {MAX_REPLY_DEPTH} levels")
            continue
        return value
    raise ValueError(f"reply is not JSON ({last}); it began {text[:80]!r}")


# Far above any response schema (they nest 3 or 4 deep) and far below Python's recursion limit,
# which pydantic's validation and any later walk of the value would otherwise reach.
MAX_REPLY_DEPTH = 64


def parse_reply(text: str, response_model: type[M]) -> M:
    """Validate a text reply against ``response_model``; raise ValueError with a short reason."""
    return validate_items(extract_json(text), response_model)[0]


def validate_items(data: Any, response_model: type[M]) -> tuple[M, int]:
    """Validate ``data``; when only items of top-level lists fail, drop those items and count them.

    One off-vocabulary name then costs one item, not the whole reply. A reply whose failing lists
    lose every item is still an error (the re-ask may do better).
    """
    try:
        return response_model.model_validate(data), 0
    except ValidationError as exc:
        if not isinstance(data, dict):
            raise
        bad: dict[str, set[int]] = {}
        for err in exc.errors():
            loc = err.get("loc", ())
            field = loc[0] if loc else None
            if (
                len(loc) < 2
                or not isinstance(field, str)
                or not isinstance(loc[1], int)
                or not isinstance(data.get(field), list)
            ):
                raise  # not an item error: the reply as a whole is wrong
            bad.setdefault(field, set()).add(loc[1])
        fixed = dict(data)
        for field, idx in bad.items():
            kept = [x for i, x in enumerate(data[field]) if i not in idx]
            if not kept:
                raise
            fixed[field] = kept
        return response_model.model_validate(fixed), sum(len(i) for i in bad.values())


def _compact(node: Any, defs: dict[str, Any], depth: int = 0) -> str:
    if depth > 8:
        return "..."
    if "$ref" in node:
        return _compact(defs.get(node["$ref"].rsplit("/", 1)[-1], {}), defs, depth + 1)
    if "anyOf" in node:
        return " | ".join(_compact(a, defs, depth + 1) for a in node["anyOf"])
    if "const" in node:
        return json.dumps(node["const"], ensure_ascii=False)
    if "enum" in node:
        vals = [json.dumps(v, ensure_ascii=False) for v in node["enum"]]
        more = len(vals) - MAX_ENUM_SHOWN
        return "|".join(vals[:MAX_ENUM_SHOWN]) + (f"|...({more} more)" if more > 0 else "")
    kind = node.get("type")
    if kind == "array":
        most = f" (at most {node['maxItems']})" if "maxItems" in node else ""
        return f"[{_compact(node.get('items', {}), defs, depth + 1)}, ...]{most}"
    if kind == "object" or "properties" in node:
        required = set(node.get("required", ()))
        parts = [
            f"{json.dumps(k)}{'' if k in required else '?'}: {_compact(v, defs, depth + 1)}"
            for k, v in node.get("properties", {}).items()
        ]
        return "{" + ", ".join(parts) + "}"
    if kind == "number" and ("minimum" in node or "maximum" in node):
        return f"number {node.get('minimum', '')}..{node.get('maximum', '')}"
    return kind if kind in ("string", "integer", "number", "boolean") else "any"


def compact_schema(response_model: type[BaseModel]) -> str:
    """A short, TypeScript-like rendering of the model's schema with its enums, for a prompt.

    >>> from typing import Literal
    >>> from pydantic import create_model
    >>> R = create_model("R", name=(Literal["a", "b"], ...), note=(str, ""))
    >>> compact_schema(R)
    '{"name": "a"|"b", "note"?: string}'
    """
    schema = schema_for(response_model)
    return _compact(schema, schema.get("$defs", {}))


def with_schema_hint(
    messages: Sequence[dict[str, str]], response_model: type[BaseModel]
) -> list[dict[str, str]]:
    """The messages with the compact schema appended to the last user message."""
    out = [dict(m) for m in messages]
    hint = f"\n\n{SCHEMA_HINT}\n{compact_schema(response_model)}"
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = f"{m.get('content', '')}{hint}"
            return out
    return [*out, {"role": "user", "content": hint.strip()}]


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy fit for ``strict: true`` structured outputs: every object closed, every property
    required, no ``default`` (a reply then always spells every field; validation is unchanged)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items() if k != "default"}
        if "const" in out:  # not every strict implementation takes const; a one-value enum is
            out["enum"] = [out.pop("const")]
        if out.get("type") == "object" or "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out.get("properties", {}))
        return out

    return walk(schema)


def describe_error(exc: Exception, limit: int = 1200) -> str:
    """A compact validation message to put back into the prompt."""
    if isinstance(exc, ValidationError):
        parts = [
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()[:12]
        ]
        msg = "; ".join(parts)
    else:
        msg = str(exc)
    return msg[:limit]


def reask_messages(
    messages: Sequence[dict[str, str]], bad_reply: str, exc: Exception
) -> list[dict[str, str]]:
    """The original request plus the rejected reply and the validation error."""
    return [
        *messages,
        {"role": "assistant", "content": (bad_reply or "")[:4000]},
        {"role": "user", "content": REASK_TEMPLATE.format(error=describe_error(exc))},
    ]


async def complete_validated(
    send: Callable[[list[dict[str, str]]], Awaitable[str]],
    messages: Sequence[dict[str, str]],
    response_model: type[M],
    *,
    max_reasks: int = DEFAULT_MAX_REASKS,
    on_reask: Callable[[Exception], None] | None = None,
    on_dropped: Callable[[int], None] | None = None,
    schema_hint: bool = True,
) -> M:
    """Ask via ``send`` (messages -> reply text) until the reply validates, at most ``max_reasks`` more.

    ``schema_hint`` (default on) appends the compact schema to the prompt, for text paths where
    the request cannot carry it; a client that sends the schema itself passes False; ``on_dropped(n)`` hears how many invalid list items a kept reply lost.

    Raises:
        LLMOutputError: when the last reply still does not validate; the message carries the error.
    """
    messages = with_schema_hint(messages, response_model) if schema_hint else list(messages)
    msgs = list(messages)
    last_exc: Exception | None = None
    for attempt in range(max_reasks + 1):
        text = await send(msgs)
        try:
            result, dropped = validate_items(extract_json(text), response_model)
            if dropped and on_dropped is not None:
                on_dropped(dropped)
            return result
        except (ValueError, ValidationError) as exc:  # ValidationError is a ValueError too
            last_exc = exc
            if attempt < max_reasks:
                if on_reask is not None:
                    on_reask(exc)
                msgs = reask_messages(messages, text, exc)
    raise LLMOutputError(
        f"reply for {response_model.__name__} failed validation after {max_reasks} re-asks: "
        f"{describe_error(last_exc) if last_exc else 'no reply'}"
    )


async def framework_reply(
    structured: Callable[[], Awaitable[Any]] | None,
    send: Callable[[list[dict[str, str]]], Awaitable[str]],
    messages: Sequence[dict[str, str]],
    response_model: type[M],
    *,
    name: str,
    soft_errors: tuple[type[Exception], ...],
) -> M:
    """A framework model's validated reply: first the framework's own structured output
    (``structured()``, when given); when that raises one of ``soft_errors`` (it cannot produce a
    valid object), the re-ask loop over the model's text (``send``), so re-asks behave as with
    every other provider. Any other error is kept, typed: an ``LLMError`` naming ``name``."""
    if structured is not None:
        try:
            out = await structured()
            return out if isinstance(out, response_model) else response_model.model_validate(out)
        except soft_errors:
            pass
    try:
        return await complete_validated(send, messages, response_model)
    except LLMError:
        raise
    except Exception as exc:  # a transport or provider error: keep it, typed
        raise LLMError(f"{name} failed: {exc}") from exc


def as_structured_llm(llm: Any, framework_class: type, wrap: Callable[[Any], Any]) -> Any:
    """``None`` stays ``None`` (the offline builder); a core ``StructuredLLM`` (not an instance of
    the framework's model class) passes as it is; anything else is wrapped with ``wrap``."""
    if llm is None:
        return None
    if not isinstance(llm, framework_class) and hasattr(llm, "acomplete") and hasattr(llm, "name"):
        return llm
    return wrap(llm)
