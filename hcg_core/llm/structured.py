"""Framework-free structured-output logic shared by every StructuredLLM implementation.

``parse_reply`` turns a model's text into a validated pydantic instance (JSON, possibly wrapped in
a code fence or prose); ``complete_validated`` re-asks with the validation error appended, up to a
bound, then raises ``LLMOutputError``. The OpenAI client, the LlamaIndex and the LangChain wrappers
all use these, so re-ask behaviour is the same whichever model is plugged in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import LLMOutputError

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_REASKS = 2
REASK_TEMPLATE = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with one JSON object only, matching the required schema exactly; use only the "
    "allowed names."
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the LLM (and hashed into the cache key)."""
    return model.model_json_schema()


def extract_json(text: str) -> Any:
    """Parse JSON from a model's text: the whole text, a fenced block, or the outermost {...}."""
    text = (text or "").strip()
    candidates = [text]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    last: Exception | None = None
    for cand in candidates:
        try:
            return json.loads(cand)
        except ValueError as exc:
            last = exc
    raise ValueError(f"reply is not JSON ({last}); it began {text[:80]!r}")


def parse_reply(text: str, response_model: type[M]) -> M:
    """Validate a text reply against ``response_model``; raise ValueError with a short reason."""
    data = extract_json(text)
    return response_model.model_validate(data)


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
) -> M:
    """Ask via ``send`` (messages -> reply text) until the reply validates, at most ``max_reasks`` more.

    Raises:
        LLMOutputError: when the last reply still does not validate; the message carries the error.
    """
    msgs = list(messages)
    last_exc: Exception | None = None
    for attempt in range(max_reasks + 1):
        text = await send(msgs)
        try:
            return parse_reply(text, response_model)
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
