"""``HCGIndex.from_documents`` chunks with hcg's own chunker when the user set no transformations
(issue 24): the nodes are the ones ``hcg build`` and the LangChain door make, inserts and document
refreshes chunk the same way, and what the user sets (``transformations=``, ``Settings``, their own
nodes) is used as given."""

from __future__ import annotations

import logging

import pytest
from llama_index.core import Document, Settings, StorageContext, load_index_from_storage
from llama_index.core.node_parser import SentenceSplitter, TokenTextSplitter

from hcg_core.corpus import chunk_documents
from hcg_core.embedders import HashingEmbedder
from hcg_core.types import SourceDocument
from llama_index_hcg import HCGDefaultEmbedding, HCGIndex
from llama_index_hcg._chunker import HCGNodeParser, user_transformations

# Paragraphs (blank lines) of ~60 words, and one ~700-word text without breaks: the chunker keeps
# paragraphs together up to 200 words and windows the long text, where SentenceSplitter(1024)
# would make one node of each document.
_FILL = "The clinic recorded the value for each patient during the visit and kept it. "


def _paragraphs(topic: str, n: int) -> str:
    return "\n\n".join(
        f"{topic} {i} causes higher blood pressure in adults. " + _FILL * 4 for i in range(n)
    )


def _docs() -> list[Document]:
    return [
        Document(text=_paragraphs("Salt intake", 8), id_="salt"),
        Document(text="Smoking causes lung cancer. " + _FILL * 50, id_="smoke"),
    ]


def _hcg_texts(doc: Document) -> list[str]:
    return [c.text for c in chunk_documents([SourceDocument(id=doc.id_, text=doc.text)])]


def _node_texts(index: HCGIndex, doc_id: str) -> list[str]:
    info = index.docstore.get_ref_doc_info(doc_id)
    assert info is not None
    nodes = index.docstore.get_nodes(info.node_ids)
    return [n.text for n in sorted(nodes, key=lambda n: n.start_char_idx)]


@pytest.fixture
def embed():
    return HCGDefaultEmbedding(embedder=HashingEmbedder(256))


@pytest.fixture
def clean_settings():
    """Settings as a fresh process has them (nothing set), restored after the test."""
    saved = (Settings._node_parser, Settings._transformations)
    Settings._node_parser = Settings._transformations = None
    try:
        yield Settings
    finally:
        Settings._node_parser, Settings._transformations = saved


def test_default_chunks_as_hcg_build_and_logs(embed, clean_settings, caplog) -> None:
    docs = _docs()
    with caplog.at_level(logging.INFO, logger="llama_index_hcg"):
        index = HCGIndex.from_documents(docs, embed_model=embed)
    said = [r.getMessage() for r in caplog.records if "structure-aware chunker" in r.getMessage()]
    assert len(said) == 1
    for doc in docs:
        expected = _hcg_texts(doc)
        assert len(expected) > 1  # the fixture really is split
        assert _node_texts(index, doc.id_) == expected
    # Node ids are hcg's chunk ids, and the graph's chunks are those nodes.
    core_ids = {
        c.id for d in docs for c in chunk_documents([SourceDocument(id=d.id_, text=d.text)])
    }
    assert {c.id for c in index.graph.chunks} == core_ids
    # Character offsets point at the node's text in its document (the ranker reads them).
    for node in index.docstore.get_nodes(sorted(core_ids)):
        source = docs[0] if node.ref_doc_id == "salt" else docs[1]
        assert source.text[node.start_char_idx : node.end_char_idx] == node.text


def test_lazy_default_read_is_not_a_user_setting(embed, clean_settings) -> None:
    _ = Settings.transformations  # LlamaIndex's getter stores its default SentenceSplitter
    assert Settings._node_parser is not None
    assert not user_transformations()
    index = HCGIndex.from_documents(_docs()[:1], embed_model=embed)
    assert _node_texts(index, "salt") == _hcg_texts(_docs()[0])


def test_insert_refresh_and_update_chunk_the_same_way(embed, clean_settings) -> None:
    index = HCGIndex.from_documents(_docs()[:1], embed_model=embed)
    new = Document(text=_paragraphs("Stress", 7), id_="stress")
    index.insert(new)
    assert _node_texts(index, "stress") == _hcg_texts(new)

    changed = Document(text=_paragraphs("Sugar intake", 9), id_="salt")
    added = Document(text="Alcohol causes liver damage. " + _FILL * 40, id_="alcohol")
    assert index.refresh_ref_docs([changed, added]) == [True, True]
    assert _node_texts(index, "salt") == _hcg_texts(changed)
    assert _node_texts(index, "alcohol") == _hcg_texts(added)

    again = Document(text=_paragraphs("Coffee", 6), id_="stress")
    index.update_ref_doc(again)
    assert _node_texts(index, "stress") == _hcg_texts(again)
    assert {c.id for c in index.graph.chunks} == set(index.docstore.docs)


def test_reloaded_index_keeps_chunking(embed, clean_settings, tmp_path) -> None:
    index = HCGIndex.from_documents(_docs()[:1], embed_model=embed)
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)), embed_model=embed
    )
    new = Document(text=_paragraphs("Stress", 7), id_="stress")
    loaded.insert(new)
    assert _node_texts(loaded, "stress") == _hcg_texts(new)


def test_explicit_transformations_are_used(embed, clean_settings, caplog) -> None:
    splitter = SentenceSplitter(chunk_size=96, chunk_overlap=16)
    docs = _docs()
    with caplog.at_level(logging.INFO, logger="llama_index_hcg"):
        index = HCGIndex.from_documents(docs, embed_model=embed, transformations=[splitter])
    assert not [r for r in caplog.records if "structure-aware chunker" in r.getMessage()]
    expected = [n.text for n in splitter.get_nodes_from_documents(docs[:1])]
    assert expected != _hcg_texts(docs[0])
    assert _node_texts(index, "salt") == expected
    new = Document(text=_paragraphs("Stress", 7), id_="stress")
    index.insert(new)
    assert _node_texts(index, "stress") == [
        n.text for n in splitter.get_nodes_from_documents([new])
    ]


@pytest.mark.parametrize("how", ["node_parser", "chunk_size", "transformations"])
def test_settings_of_the_user_are_used(embed, clean_settings, how) -> None:
    if how == "node_parser":
        Settings.node_parser = SentenceSplitter(chunk_size=96, chunk_overlap=16)
        splitter = Settings.node_parser
    elif how == "chunk_size":
        Settings.chunk_size = 96  # changes LlamaIndex's default splitter in place
        splitter = Settings.node_parser
    else:
        splitter = TokenTextSplitter(chunk_size=96, chunk_overlap=16)
        Settings.transformations = [splitter]
    assert user_transformations()
    doc = _docs()[0]
    index = HCGIndex.from_documents([doc], embed_model=embed)
    assert _node_texts(index, "salt") == [n.text for n in splitter.get_nodes_from_documents([doc])]
    assert not any(isinstance(t, HCGNodeParser) for t in index._transformations)


def test_own_nodes_are_indexed_as_given(embed, clean_settings) -> None:
    nodes = SentenceSplitter(chunk_size=96, chunk_overlap=16).get_nodes_from_documents(_docs())
    index = HCGIndex(nodes, embed_model=embed)
    assert [c.id for c in index.graph.chunks] == [n.node_id for n in nodes]
    assert [c.text for c in index.graph.chunks] == [n.text for n in nodes]
