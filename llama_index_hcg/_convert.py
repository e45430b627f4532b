"""Pure conversions between LlamaIndex nodes and hcg_core types (no models, no I/O).

Provenance choice: a retrieved node is a *shallow copy* of the docstore node (same ``node_id``,
relationships and text) whose metadata gains ``hcg_*`` keys; those keys are added to
``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys`` so the answer LLM sees only the
node text, as the paper prescribes. The docstore's own object is never mutated.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, NodeWithScore

from hcg_core.contract import json_metadata
from hcg_core.types import Chunk, RetrievedChunk


def node_to_chunk(node: BaseNode) -> Chunk:
    """A docstore node as a core Chunk: same id, plain text (no metadata header), its ref doc.

    Metadata follows the adapters' one rule (:func:`hcg_core.contract.json_metadata`).
    """
    metadata = json_metadata(node.metadata, who=f"node {node.node_id}")
    # The node's place in its document: the ranker skips and follows overlapping windows by it.
    start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
    if isinstance(start, int) and isinstance(end, int):
        metadata = {**metadata, "start_char_idx": start, "end_char_idx": end}
    return Chunk(
        id=node.node_id,
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        doc_id=node.ref_doc_id or "",
        metadata=metadata,
    )


def stored_id(rc: RetrievedChunk) -> str:
    """The docstore node a result comes from: the chunk itself, or the chunk a passage is part of."""
    return rc.parent_id or rc.chunk.id


def with_provenance(node: BaseNode, rc: RetrievedChunk, served_by: str) -> NodeWithScore:
    """Wrap a docstore node for a result; see the module docstring for why it is a copy.

    A part of the node (under a word budget: without the sentences an earlier result returned,
    or a window's picked half) keeps the node's id and relationships; its text and character
    offsets are the part's.
    For a passage (a finer unit, returned only when ``HybridConfig.passage_words`` asks for it)
    the copy holds the passage's text and id, keeps the node's relationships (so ``ref_doc_id``
    still names its document), adds a PARENT relationship to the docstore node (also named in
    ``hcg_parent_id``), and drops the character offsets (they were the whole node's).
    """
    extra = rc.provenance(served_by)
    passage: dict[str, Any] = {}
    span = rc.details.get("span")
    if rc.chunk.id == node.node_id and span is not None:
        # Part of the node under a word budget: the node's own id, the part's text, and the
        # character offsets moved to it.
        start = node.start_char_idx
        passage = {
            "text": rc.chunk.text,
            "start_char_idx": None if start is None else start + span[0],
            "end_char_idx": None if start is None else start + span[1],
        }
    elif rc.chunk.id != node.node_id:
        relationships = dict(node.relationships)
        relationships[NodeRelationship.PARENT] = node.as_related_node_info()
        passage = {
            "id_": rc.chunk.id,
            "text": rc.chunk.text,
            "start_char_idx": None,
            "end_char_idx": None,
            "relationships": relationships,
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
