"""Pure conversions between LangChain documents and hcg_core types (no models, no I/O)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document as LCDocument

from hcg_core.types import Chunk, Document, RetrievedChunk


def _json_safe(metadata: Mapping[str, Any]) -> dict[str, Any]:
    # A graph directory stores chunk metadata as JSON: keep what survives that, drop the rest
    # (LangChain loaders sometimes put objects there).
    out: dict[str, Any] = {}
    for k, v in metadata.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[str(k)] = v
    return out


def content_id(text: str, prefix: str) -> str:
    """A stable id for a document that has none: prefix + 12 hex digits of blake2b of the text."""
    return prefix + hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


def to_core_document(doc: LCDocument) -> Document:
    """A LangChain Document as a core Document; its ``id`` (else a content hash) is the doc id."""
    return Document(
        id=doc.id or content_id(doc.page_content, "d_"),
        text=doc.page_content,
        metadata=_json_safe(doc.metadata),
    )


def to_chunk(doc: LCDocument) -> Chunk:
    """An already split LangChain Document as one core Chunk (``chunk=False``)."""
    meta = _json_safe(doc.metadata)
    return Chunk(
        id=doc.id or content_id(doc.page_content, "c_"),
        text=doc.page_content,
        doc_id=str(meta.get("doc_id") or meta.get("source") or ""),
        metadata=meta,
    )


def to_lc_documents(chunks: Sequence[RetrievedChunk], served_by: str) -> list[LCDocument]:
    """Retrieved chunks as LangChain Documents: id = chunk id, metadata = chunk's + provenance."""
    return [
        LCDocument(
            id=rc.chunk.id,
            page_content=rc.chunk.text,
            metadata={
                **dict(rc.chunk.metadata),
                "chunk_id": rc.chunk.id,
                "doc_id": rc.chunk.doc_id,
                "hcg_score": float(rc.score),
                **rc.provenance(served_by),
            },
        )
        for rc in chunks
    ]
