"""Pure conversions between LlamaIndex nodes and hcg_core types (no models, no I/O).

Provenance choice: a retrieved node is a *shallow copy* of the docstore node (same ``node_id``,
relationships and text) whose metadata gains ``hcg_*`` keys; those keys are added to
``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys`` so the answer LLM sees only the
passage text, as the paper prescribes. The docstore's own object is never mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from hcg_core.types import Chunk, RetrievedChunk


def _json_safe(metadata: Mapping[str, Any]) -> dict[str, Any]:
    # The core store writes chunk metadata as JSON; LlamaIndex allows only flat scalars anyway,
    # but a reader may have put something odd there.
    return {
        str(k): v
        for k, v in metadata.items()
        if v is None or isinstance(v, (str, int, float, bool))
    }


def node_to_chunk(node: BaseNode) -> Chunk:
    """A docstore node as a core Chunk: same id, plain text (no metadata header), its ref doc."""
    return Chunk(
        id=node.node_id,
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        doc_id=node.ref_doc_id or "",
        metadata=_json_safe(node.metadata),
    )


def stored_id(rc: RetrievedChunk) -> str:
    """The docstore node a result comes from: the chunk itself, or the chunk a passage is part of."""
    parent = (rc.chunk.metadata or {}).get("passage_of")
    if isinstance(parent, str) and rc.chunk.id.startswith(parent + "#p"):
        return parent
    return rc.chunk.id


def with_provenance(node: BaseNode, rc: RetrievedChunk, served_by: str) -> NodeWithScore:
    """Wrap a docstore node for a result; see the module docstring for why it is a copy.

    For a passage (hybrid mode packs parts of stored chunks) the copy holds the passage's text and
    id, keeps the node's relationships (so its source document is still known), drops the
    character offsets (they were the whole node's), and names the node in ``hcg_passage_of``.
    """
    extra = rc.provenance(served_by)
    passage: dict[str, Any] = {}
    if rc.chunk.id != node.node_id:
        extra["hcg_passage_of"] = node.node_id
        passage = {
            "id_": rc.chunk.id,
            "text": rc.chunk.text,
            "start_char_idx": None,
            "end_char_idx": None,
        }
    hidden = [k for k in extra if k not in node.excluded_llm_metadata_keys]
    hidden_embed = [k for k in extra if k not in node.excluded_embed_metadata_keys]
    copy = node.model_copy(
        update={
            "metadata": {**node.metadata, **extra},
            "excluded_llm_metadata_keys": [*node.excluded_llm_metadata_keys, *hidden],
            "excluded_embed_metadata_keys": [*node.excluded_embed_metadata_keys, *hidden_embed],
            **passage,
        }
    )
    return NodeWithScore(node=copy, score=float(rc.score))
