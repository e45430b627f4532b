"""The LLM seam's implementations and plumbing: the OpenAI-compatible client, structured-output
parsing with re-asks, the on-disk reply cache, per-stage accounting, and the sync bridge.

Nothing here imports LlamaIndex or LangChain; the adapters ask their models through
``structured.framework_reply`` (structured output, then ``complete_validated``; docs/llm.md).
"""

from .accounting import COUNTERS, Ledger, current_stage, stage
from .bridge import run_sync
from .cache import ResponseCache, cache_key
from .openai_compat import OpenAIStructuredLLM, classify_bad_request
from .runner import ResilientLLM
from .structured import (
    compact_schema,
    complete_validated,
    extract_json,
    parse_reply,
    schema_for,
    strict_schema,
)

__all__ = [
    "COUNTERS",
    "Ledger",
    "OpenAIStructuredLLM",
    "ResilientLLM",
    "ResponseCache",
    "cache_key",
    "classify_bad_request",
    "compact_schema",
    "complete_validated",
    "current_stage",
    "extract_json",
    "parse_reply",
    "run_sync",
    "schema_for",
    "stage",
    "strict_schema",
]
