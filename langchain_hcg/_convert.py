"""Pure conversions between LangChain documents and hcg_core types (no models, no I/O)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document as LCDocument

from hcg_core.contract import json_metadata
from hcg_core.corpus import leading_front_matter, prepare_text
from hcg_core.types import Chunk, RetrievedChunk, SourceDocument


def content_id(text: str, prefix: str) -> str:
    """A stable id for a document that has none: prefix + 12 hex digits of blake2b of the text."""
    return prefix + hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


def to_core_document(doc: LCDocument) -> SourceDocument:
    """A LangChain Document as a core SourceDocument to chunk; its ``id`` (else a content hash) is the
    doc id. Its text is read as ``hcg build`` reads a text file (``prepare_text``): line ends made
    ``"\\n"``, a YAML front matter block taken off into the metadata (the document's own keys
    win), so no chunk holds it."""
    who = f"document {doc.id or '(no id)'}"
    body, front = prepare_text(doc.page_content, who=who)
    return SourceDocument(
        id=doc.id or content_id(doc.page_content, "d_"),
        text=body,
        metadata={**front, **json_metadata(doc.metadata, who=who)},
    )


# Where a unit of the user's (``chunk=False``) keeps the YAML front matter it opened with: ranked
# without it, returned with it (``to_lc_documents``), as given.
FRONT_MATTER_KEY = "hcg_front_matter"


def to_chunk(doc: LCDocument) -> Chunk:
    """An already split LangChain Document as one core Chunk (``chunk=False``); a YAML front
    matter block it opens with is kept aside (``FRONT_MATTER_KEY``), out of the ranked text."""
    who = f"document {doc.id or '(no id)'}"
    meta = json_metadata(doc.metadata, who=who)
    skip = leading_front_matter(doc.page_content, who=who)
    if skip:
        meta[FRONT_MATTER_KEY] = doc.page_content[:skip]
    return Chunk(
        id=doc.id or content_id(doc.page_content, "c_"),
        text=doc.page_content[skip:],
        doc_id=str(meta.get("doc_id") or meta.get("source") or ""),
        metadata=meta,
    )


# Chunk metadata the core's passage splitter adds (the provenance's hcg_parent_id replaces it),
# and the front matter a returned Document gets back as text.
_PASSAGE_KEYS = ("passage_of", "passage", FRONT_MATTER_KEY)


def _page_content(rc: RetrievedChunk) -> str:
    """The unit's text, with the front matter it was given with when it comes back whole."""
    front = rc.chunk.metadata.get(FRONT_MATTER_KEY)
    whole = rc.parent_id is None and "span" not in rc.details
    return front + rc.chunk.text if isinstance(front, str) and whole else rc.chunk.text


def to_lc_documents(chunks: Sequence[RetrievedChunk], served_by: str) -> list[LCDocument]:
    """Retrieved units as LangChain Documents: ``id`` = the unit's id (a chunk id, or a passage's
    when passages were asked for), metadata = the chunk's own, its ``doc_id``, and the provenance
    keys both adapters attach (``RetrievedChunk.provenance``; ``hcg_parent_id`` names the chunk a
    passage is part of)."""
    return [
        LCDocument(
            id=rc.chunk.id,
            page_content=_page_content(rc),
            metadata={**metadata_view(rc.chunk), **rc.provenance(served_by)},
        )
        for rc in chunks
    ]


def metadata_view(chunk: Chunk) -> dict[str, Any]:
    """The metadata a filter sees: what a returned Document's metadata holds before provenance."""
    return {
        **{k: v for k, v in chunk.metadata.items() if k not in _PASSAGE_KEYS},
        "doc_id": chunk.doc_id,
    }
