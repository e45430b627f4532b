"""Stage 1 + Stage 2 entry point: chunks -> (spec, causal graph, evidence, embeddings, report).

``build_graph`` dispatches to the LLM-free builder when no LLM is given, and to the paper's LLM
pipeline otherwise. Both return the same artefact, which ``hcg_core.store.save_graph`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import DEFAULT_TIER
from ..errors import BuildError, InputError
from ..ports import Embedder, StructuredLLM
from ..types import BuildResult, Chunk, DomainSpec, OutcomeConfig


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
    if llm is None:
        from .offline import build_offline

        return build_offline(
            chunks,
            embedder=embedder,
            tier=tier,
            outcome=outcome,
            spec=spec,
            progress=progress,
            **options,
        )
    from .llm_pipeline import build_with_llm

    return build_with_llm(
        chunks,
        embedder=embedder,
        llm=llm,
        tier=tier,
        outcome=outcome,
        spec=spec,
        progress=progress,
        **options,
    )


__all__ = ["BuildResult", "build_graph"]
