"""Stage 1 + Stage 2 entry point: chunks -> (spec, causal graph, evidence, embeddings, report).

``build_graph`` dispatches to the LLM-free builder when no LLM is given, and to the paper's LLM
pipeline otherwise. Both return the same artefact, which ``hcg_core.store.save_graph`` writes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..config import DEFAULT_TIER
from ..corpus import count_not_english
from ..embedders.factory import reads_one_language
from ..errors import BuildError, InputError
from ..ports import Embedder, StructuredLLM
from ..types import BuildResult, Chunk, DomainSpec, OutcomeConfig

logger = logging.getLogger(__name__)


def build_graph(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    llm: StructuredLLM | None = None,
    tier: str = DEFAULT_TIER,
    outcome: OutcomeConfig | None = None,
    spec: DomainSpec | None = None,
    progress: bool | None = None,
    **options: Any,
) -> BuildResult:
    """Build a causal graph over ``chunks``.

    Args:
        chunks: the corpus, already chunked (see ``hcg_core.corpus``).
        embedder: embeds chunks and variables (stored with the graph).
        llm: a structured-output LLM; ``None`` selects the offline, LLM-free builder.
        tier: scaling tier (XS, S, M, L) capping the spec's metrics and dimensions.
        outcome: the causal sinks to build toward; generated when ``None``.
        spec: a given (possibly hand-edited) spec; Stage 1 is skipped when set.
        progress: show progress bars; ``None`` means only when stderr is a terminal.
        options: builder settings: ``config=`` an ``OfflineBuildConfig`` (no ``llm``) or an
            ``LLMBuildConfig`` (with ``llm``), and/or their field names as keywords (an unknown
            name is a ``ConfigError``).
    """
    if not chunks:
        raise BuildError("no chunks to build from: the corpus is empty")
    seen: set[str] = set()
    for c in chunks:
        if c.id in seen:
            raise InputError(
                f"two chunks share the id {c.id!r}; chunk ids must be unique "
                "(drop the repeated passage or give it its own id)"
            )
        seen.add(c.id)
    note = language_warning(chunks, embedder)
    if note:  # said before the build, which may be long (or paid), and kept in its report
        logger.warning(note)
    if llm is None:
        from .offline import build_offline as build
    else:
        from .llm_pipeline import build_with_llm as build

        options["llm"] = llm
    options.update(embedder=embedder, tier=tier, outcome=outcome, spec=spec, progress=progress)
    result = build(chunks, **options)
    if note:
        result.report.setdefault("warnings", []).append(note)
    return result


# A warning is worth its noise once a twentieth of the corpus is out of the embedder's reach.
NOT_ENGLISH_WARN_SHARE = 0.05


def language_warning(chunks: Sequence[Chunk], embedder: Embedder) -> str | None:
    """A warning when many chunks are not English and the embedder matches one language only.

    An English question reaches a Turkish abstract through neither BM25 nor an English embedding
    model, only through the character n-grams the hybrid ranker compares (cognates, names); on the
    HolisQA psychology set that is still most of what every retriever misses (docs/evaluation.md). The multilingual embedder fixes it, at about 8x the embedding time.
    """
    if not reads_one_language(embedder):
        return None
    n = count_not_english(c.text for c in chunks)
    if n < 3 or n < NOT_ENGLISH_WARN_SHARE * len(chunks):
        return None
    return (
        f"{n:,} of {len(chunks):,} chunks ({n / len(chunks):.0%}) do not read as English; the "
        f"embedder {embedder.name!r} and BM25 match words within one language, so a question in "
        "English reaches them only by the word pieces they share with it: for a corpus in several "
        "languages build with the multilingual embedder (--embedder multilingual, "
        "MultilingualE5Embedder; docs/embedders.md)"
    )


__all__ = ["BuildResult", "build_graph"]
