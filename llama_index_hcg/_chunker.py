"""``HCGNodeParser``: hcg's structure-aware chunker as a LlamaIndex node parser.

The same chunker ``hcg build`` and the LangChain door use (``hcg_core.corpus.chunk_documents``):
blank-line blocks grouped up to ``chunk_words`` words, a paragraph of up to 3x that kept whole,
longer text windowed with ``overlap_words`` of overlap and ends at sentence ends. ``HCGIndex``
uses it when the user set no transformations (see ``default_transformations``), so the LlamaIndex
door indexes the units the CLI door does rather than LlamaIndex's ~750-word default nodes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.node_parser.interface import NodeParser
from llama_index.core.node_parser.node_utils import build_nodes_from_splits
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from hcg_core.corpus import (
    DEFAULT_CHUNK_WORDS,
    DEFAULT_OVERLAP_WORDS,
    chunk_documents,
    prepare_text,
    word_spans,
)
from hcg_core.types import SourceDocument

logger = logging.getLogger(__name__)


class HCGNodeParser(NodeParser):
    """Split documents into nodes with hcg's chunker (``hcg_core.corpus.chunk_documents``).

    Node ids are hcg's stable chunk ids (document id, word offset and text hashed), so the same
    document always gives the same nodes. A document is first read as ``hcg build`` reads a text
    file (``hcg_core.corpus.prepare_text``): line ends made ``"\\n"`` and a YAML front matter block
    taken off into the nodes' metadata (``title`` and the rest; the document's own keys win), so
    no node holds it. Text is the document's own characters, with
    ``start_char_idx``/``end_char_idx`` set, the document's metadata and the usual SOURCE and
    PREVIOUS/NEXT relationships.

    >>> from llama_index.core import Document as LIDocument
    >>> nodes = HCGNodeParser(chunk_words=5, overlap_words=1).get_nodes_from_documents(
    ...     [LIDocument(text="# Title\\n\\nOne two three.\\n\\nFour five six seven.", id_="d")])
    >>> [n.text for n in nodes], nodes[1].start_char_idx, nodes[1].ref_doc_id
    (['# Title\\n\\nOne two three.', 'Four five six seven.'], 25, 'd')
    """

    chunk_words: int = Field(default=DEFAULT_CHUNK_WORDS, description="Words per chunk.")
    overlap_words: int = Field(
        default=DEFAULT_OVERLAP_WORDS, description="Words a window shares with the previous one."
    )

    @classmethod
    def class_name(cls) -> str:
        return "HCGNodeParser"

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        out: list[BaseNode] = []
        for given in nodes:
            node = _prepared(given)
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            chunks = chunk_documents(
                [SourceDocument(id=node.node_id, text=text)],
                chunk_words=self.chunk_words,
                overlap_words=self.overlap_words,
            )
            if not chunks:
                continue
            spans = word_spans(text)
            ids = [c.id for c in chunks]
            split = build_nodes_from_splits(
                [c.text for c in chunks], node, id_func=lambda i, _doc, ids=ids: ids[i]
            )
            for made, chunk in zip(split, chunks, strict=True):
                made.start_char_idx = spans[chunk.metadata["start_word"]][0]
                made.end_char_idx = spans[chunk.metadata["end_word"] - 1][1]
            out.extend(split)
        return out


def _prepared(document: BaseNode) -> BaseNode:
    """The document as hcg chunks it (``hcg_core.corpus.prepare_text``): line ends made "\\n", a
    YAML front matter block taken off into its metadata (the document's own keys win). A copy,
    so the caller's document is not changed; the nodes' SOURCE is the copy, whose metadata the
    index's ``ref_doc_info`` shows. Unchanged documents are returned as they are."""
    text = document.get_content(metadata_mode=MetadataMode.NONE)
    body, front = prepare_text(text, who=f"document {document.node_id}")
    if body == text:
        return document
    copy = document.model_copy()
    copy.set_content(body)
    copy.metadata = {**front, **document.metadata}
    return copy


def user_transformations() -> bool:
    """Whether the user set ``Settings.node_parser`` (or ``text_splitter``, ``chunk_size``,
    ``chunk_overlap``) or ``Settings.transformations``.

    Read from the private attributes: the public getters create LlamaIndex's default
    ``SentenceSplitter`` on first read and store it, so after any read they cannot tell a user's
    setting from the lazy default. A default created that way (by another index's
    ``from_documents``, say) is still the library's own: an unchanged default ``SentenceSplitter``,
    alone in the transformations, counts as unset.
    """
    from llama_index.core import Settings

    parser = getattr(Settings, "_node_parser", None)
    transformations = getattr(Settings, "_transformations", None)
    if parser is not None and not _lazy_default(parser):
        return True
    if transformations is None:
        return False
    return not (len(transformations) == 1 and _lazy_default(transformations[0]))


def _lazy_default(parser: Any) -> bool:
    from llama_index.core.node_parser import SentenceSplitter

    return type(parser) is SentenceSplitter and parser.to_dict() == _default_splitter()


@functools.cache
def _default_splitter() -> dict[str, Any]:
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter().to_dict()


def default_transformations(
    transformations: list[TransformComponent] | None,
) -> list[TransformComponent] | None:
    """hcg's chunker when neither ``transformations=`` nor the user's ``Settings`` say how to
    split; otherwise ``transformations`` unchanged (None: LlamaIndex reads ``Settings``)."""
    if transformations is not None or user_transformations():
        return transformations
    logger.info(
        "HCGIndex: no transformations given and none set on Settings: chunking with hcg's "
        "structure-aware chunker (HCGNodeParser, %d words, %d overlap), as `hcg build` does; "
        "pass transformations=[...] to use your own",
        DEFAULT_CHUNK_WORDS,
        DEFAULT_OVERLAP_WORDS,
    )
    return [HCGNodeParser()]
