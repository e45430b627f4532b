"""Pure conversions between LlamaIndex nodes and hcg_core types (no models, no I/O).

Provenance choice: a retrieved node is a *shallow copy* of the docstore node (same ``node_id``,
relationships and text) whose metadata gains ``hcg_*`` keys; those keys are added to
``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys`` so the answer LLM sees only the
node text, as the paper prescribes. The docstore's own object is never mutated.

Fusion: LlamaIndex's ``QueryFusionRetriever`` merges results by ``node.hash``, which covers the
text and every metadata key, so the copy's provenance keys (and a window's text trimmed under a
word budget) would make it another item than the same node found by a vector or BM25 retriever.
The copy is therefore an instance of a subclass of the node's own class (``isinstance`` holds,
the class name and serialisation are the original's) whose ``hash`` is the stored node's
(``stored_hash_node``). A passage (a finer unit with its own id) keeps its own hash.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, NodeWithScore
from pydantic import BaseModel, PrivateAttr

from hcg_core.contract import json_metadata
from hcg_core.corpus import leading_front_matter
from hcg_core.types import Chunk, RetrievedChunk


def node_to_chunk(node: BaseNode) -> Chunk:
    """A docstore node as a core Chunk: same id, plain text (no metadata header, no YAML front
    matter), its ref doc.

    Metadata follows the adapters' one rule (:func:`hcg_core.contract.json_metadata`).
    """
    metadata = json_metadata(node.metadata, who=f"node {node.node_id}")
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    # A node of the user's that opens with YAML front matter is ranked without it (it comes back
    # whole: results are the docstore's nodes).
    skip = leading_front_matter(text, who=f"node {node.node_id}")
    # The node's place in its document: the ranker skips and follows overlapping windows by it.
    start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
    if isinstance(start, int) and isinstance(end, int):
        metadata = {**metadata, "start_char_idx": start + skip, "end_char_idx": end}
    return Chunk(
        id=node.node_id,
        text=text[skip:],
        doc_id=node.ref_doc_id or "",
        metadata=metadata,
    )


# node class -> its subclass whose hash is the stored node's (made once per class).
_STORED_HASH_CLASSES: dict[type, type] = {}


def _stored_hash_class(cls: type) -> type:
    sub = _STORED_HASH_CLASSES.get(cls)
    if sub is not None:
        return sub
    own_hash = cls.hash  # the class's property: the fallback when no stored hash was set

    def hash_(self: Any) -> str:
        return self._hcg_stored_hash or own_hash.__get__(self, cls)

    def reduce(self: Any) -> tuple:
        # Pickled by the original class, so a fresh process rebuilds the subclass.
        return (_restore, (cls, self.__getstate__()))

    sub = type(
        cls.__name__,
        (cls,),
        {
            "__module__": __name__,
            "__qualname__": f"stored_hash_node[{cls.__qualname__}]",
            "__doc__": f"A returned {cls.__name__} whose hash is the docstore node's.",
            "_hcg_stored_hash": PrivateAttr(default=""),
            "hash": property(hash_, doc="The stored node's hash (what fusion merges by)."),
            "__reduce__": reduce,
        },
    )
    _STORED_HASH_CLASSES[cls] = sub
    return sub


def _restore(cls: type, state: dict) -> BaseNode:
    sub = _stored_hash_class(cls)
    node = sub.__new__(sub)
    node.__setstate__(state)  # LlamaIndex's: re-runs __init__, which resets private attributes
    node._hcg_stored_hash = (state.get("__pydantic_private__") or {}).get("_hcg_stored_hash", "")
    return node


def stored_hash_node(node: BaseNode, stored_hash: str) -> BaseNode:
    """``node`` (a copy of a docstore node) as an instance that hashes as ``stored_hash``.

    >>> from llama_index.core.schema import TextNode
    >>> stored = TextNode(text="Salt raises blood pressure.", id_="n1")
    >>> copy = stored.model_copy(update={"metadata": {"hcg_score": 0.9}})
    >>> copy.hash == stored.hash, stored_hash_node(copy, stored.hash).hash == stored.hash
    (False, True)
    """
    base = type(node)
    base = next((c for c in base.__mro__ if c not in _STORED_HASH_CLASSES.values()), base)
    sub = _stored_hash_class(base)
    out = sub.__new__(sub)
    # pydantic's own state copy (shallow, no validation), not LlamaIndex's pickling one.
    BaseModel.__setstate__(out, BaseModel.__getstate__(node))
    out._hcg_stored_hash = stored_hash
    return out


def stored_id(rc: RetrievedChunk) -> str:
    """The docstore node a result comes from: the chunk itself, or the chunk a passage is part of."""
    return rc.parent_id or rc.chunk.id


def with_provenance(node: BaseNode, rc: RetrievedChunk, served_by: str) -> NodeWithScore:
    """Wrap a docstore node for a result; see the module docstring for why it is a copy.

    A part of the node (without the words an earlier result returned, or the paragraphs the
    query picked of a node that runs on across a blank line) keeps the node's id and
    relationships; its text and character offsets are the part's.
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
        if start is not None:  # the span is in the ranked text, after any front matter
            start += leading_front_matter(node.get_content(metadata_mode=MetadataMode.NONE))
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
    if rc.chunk.id == node.node_id:  # the stored unit, whole or trimmed: fused as the stored one
        copy = stored_hash_node(copy, node.hash)
    return NodeWithScore(node=copy, score=float(rc.score))
