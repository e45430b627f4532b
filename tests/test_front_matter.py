"""YAML front matter and line ends in text files: read as metadata, never as chunk text.

A Markdown or text file that opens with a ``---`` YAML block (Jekyll, Hugo, Obsidian, the
postmortems of issue 44) gives its keys to the document's metadata wherever hcg chunks the text
itself (``hcg build``, both adapters' ``from_documents``); a user's own units come back as given,
ranked without the block. CR-only, CRLF and LF files read the same (issue 43, S4).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hcg_core.cli import main as hcg_main
from hcg_core.corpus import (
    chunk_documents,
    leading_front_matter,
    load_inputs,
    prepare_text,
    split_front_matter,
)
from hcg_core.store import current_dir

ROOT = Path(__file__).resolve().parents[1]

# A postmortem as the issue met them: a header of identifiers (no English function words, so a
# chunk of it alone reads as "not English"), then the report.
FRONT = """---
uuid: 6f1c2a9e-3b7d-4c1e-9a52-8e0d4f7b1c33
url: https://example.com/postmortems/cache-expiry-outage-2024
title: Cache expiry outage
date: 2024-05-01
company: Examplecorp
product: Storefront checkout payments gateway
categories: [cloud, config-change, cascading-failure]
keywords: cache ttl expiry stampede database overload latency timeout retries
---
"""
REPORT = """# Cache expiry outage

## Summary

A configuration change shortened the cache lifetime of the product catalogue. The expired
entries caused a stampede of requests to the database, and the database overload raised the
latency of every checkout request.

## Root cause

The shorter lifetime increased the number of cache misses. Each miss leads to a database query,
so the misses raised the load on the primary database until its connection pool was exhausted.

## Resolution

Restoring the old lifetime reduced the cache misses, and the latency of checkout requests fell
back to its usual level within minutes.
"""
POSTMORTEM = FRONT + "\n" + REPORT
# A unit of the user's: the header over one paragraph, short enough to come back whole.
PARAGRAPH = (
    "The shorter lifetime increased the number of cache misses. Each miss leads to a database "
    "query, so the misses raised the load on the primary database until its pool was exhausted."
)


def write(folder: Path, name: str, text: str, newline: str = "\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


# ----------------------------------------------------------------------------- the reader


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_front_matter_becomes_metadata_whatever_the_line_ends(tmp_path, newline):
    write(tmp_path, "pm.md", POSTMORTEM, newline)
    (doc,), bad = load_inputs([tmp_path])
    assert bad == []
    assert doc.text == REPORT.lstrip("\n") or doc.text == "\n" + REPORT
    assert "---" not in doc.text and "uuid" not in doc.text and "\r" not in doc.text
    assert doc.metadata["title"] == "Cache expiry outage"
    assert doc.metadata["date"] == "2024-05-01"  # a YAML date, stored as ISO text
    assert doc.metadata["categories"] == ["cloud", "config-change", "cascading-failure"]
    assert doc.metadata["source"] == (tmp_path / "pm.md").as_posix()  # the file's own key wins


def test_a_text_file_reads_front_matter_too_and_json_is_left_alone(tmp_path):
    write(tmp_path, "pm.txt", POSTMORTEM)
    write(tmp_path, "pm.json", json.dumps({"text": POSTMORTEM, "id": 1}))
    docs, _ = load_inputs([tmp_path])
    by_id = {d.id: d for d in docs}
    assert by_id["pm.txt"].metadata["title"] == "Cache expiry outage"
    assert by_id["pm.json"].text == POSTMORTEM  # a JSON field is its own text, whole


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: [unclosed\n---\nThe cache expired.",  # YAML that does not parse
        "---\ntitle: bell\x07\n---\nThe cache expired.",  # a control character YAML refuses
        "---\n&a [*a]\n---\nThe cache expired.",  # an alias, which the bounded loader refuses
    ],
)
def test_malformed_front_matter_is_kept_as_text_with_a_warning(tmp_path, text, caplog):
    write(tmp_path, "bad.md", text)
    with caplog.at_level(logging.WARNING, logger="hcg_core.corpus"):
        (doc,), bad = load_inputs([tmp_path])
    assert bad == [] and doc.text == text and doc.metadata == {"source": doc.metadata["source"]}
    assert any("front matter is not valid YAML" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "text",
    [
        "---\nA rule over a paragraph, then another rule.\n---\nText.",  # YAML, but not a mapping
        "---\ntitle: never closed\n\nThe cache expired.",  # no closing line
        "Text first.\n---\ntitle: x\n---\n",  # not at the start
        "---\n" + "k: v\n" * 20_000 + "---\nText.",  # longer than any header
    ],
)
def test_what_is_not_front_matter_stays_text(text):
    assert split_front_matter(text) == (text, {}, 0)


def test_empty_front_matter_is_taken_off_and_a_file_of_only_front_matter_is_refused(tmp_path):
    assert prepare_text("---\n---\nBody.") == ("Body.", {})
    write(tmp_path / "a", "only.md", FRONT)
    with pytest.raises(Exception, match="only YAML front matter"):
        load_inputs([tmp_path / "a"])


def test_a_users_own_unit_keeps_its_text_and_the_offset_is_in_it_as_given():
    for newline in ("\n", "\r\n", "\r"):
        text = POSTMORTEM.replace("\n", newline)
        skip = leading_front_matter(text)
        assert text[skip:] == ("\n" + REPORT).replace("\n", newline)
    assert leading_front_matter(FRONT) == 0  # nothing else to rank: kept


# ----------------------------------------------------------------------------- hcg build


def build(tmp_path: Path, corpus: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    args = ["build", str(corpus), "--out", str(out), "--embedder", "hashing", "--quiet", *extra]
    assert hcg_main(args) == 0
    return out


def chunk_texts(graph_dir: Path) -> list[dict]:
    lines = (current_dir(graph_dir) / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def graph_json(graph_dir: Path) -> dict:
    return json.loads((current_dir(graph_dir) / "graph.json").read_text(encoding="utf-8"))


def test_hcg_build_keeps_front_matter_out_of_chunks_and_the_language_warning(tmp_path, capsys):
    corpus = tmp_path / "postmortems"
    for i in range(3):
        write(corpus, f"pm{i}.md", POSTMORTEM.replace("Cache expiry outage", f"Outage {i}"))
    # Small chunks, so the header would be a chunk of its own, as in the 52 of 786.
    g = build(tmp_path, corpus, "g", "--chunk-words", "30", "--chunk-overlap", "5")
    err = capsys.readouterr().err
    assert "do not read as English" not in err
    chunks = chunk_texts(g)
    assert chunks and not any("uuid" in c["text"] or "---" in c["text"] for c in chunks)
    titles = {c["metadata"]["doc_id"]: c["metadata"]["title"] for c in chunks}
    assert titles == {f"pm{i}.md": f"Outage {i}" for i in range(3)}
    graph = graph_json(g)
    assert graph["edges"] and not any("uuid" in e["mechanism"] for e in graph["edges"])


def test_cr_only_crlf_and_lf_markdown_give_the_same_graph(tmp_path):
    # Issue 43, S4: a CR-only file starting with a "#" heading built an empty graph.
    source = (ROOT / "examples" / "corpus" / "01-blood-pressure.md").read_text(encoding="utf-8")
    assert source.startswith("# ")
    built = {}
    for label, newline in (("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")):
        write(tmp_path / label, "bp.md", source, newline)
        g = build(tmp_path, tmp_path / label, f"g_{label}")
        built[label] = (graph_json(g), chunk_texts(g))
    graph, chunks = built["lf"]
    assert len(graph["edges"]) >= 3
    for label in ("crlf", "cr"):
        other_graph, other_chunks = built[label]
        assert (
            other_graph["edges"] == graph["edges"]
            and other_graph["variables"] == graph["variables"]
        )
        assert [c["text"] for c in other_chunks] == [c["text"] for c in chunks]
        assert [c["id"] for c in other_chunks] == [c["id"] for c in chunks]


def test_the_offline_reader_reads_a_cr_only_unit_as_lines():
    from hcg_core.graph_build.extract import text_units

    text = "# Impact\rSalt raises blood pressure.\r\r- Smoking causes stroke."
    units = text_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("heading", "Impact"),
        ("sentence", "Salt raises blood pressure."),
        ("item", "Smoking causes stroke."),
    ]
    assert units == text_units(text.replace("\r", "\n"))


# ----------------------------------------------------------------------------- the adapters


def test_llamaindex_chunked_documents_carry_the_metadata_and_no_node_the_block():
    from llama_index.core import Document as LIDocument

    from hcg_core.embedders import HashingEmbedder
    from llama_index_hcg import HCGIndex

    given = [
        LIDocument(text=POSTMORTEM.replace("\n", "\r\n"), id_="pm0", metadata={"team": "web"}),
        LIDocument(text=POSTMORTEM, id_="pm1", metadata={"title": "Own title"}),
    ]
    index = HCGIndex.from_documents(given, embed_model=HashingEmbedder())
    nodes = list(index.docstore.docs.values())
    assert nodes and not any("uuid" in n.get_content() or "\r" in n.get_content() for n in nodes)
    assert {n.ref_doc_id: n.metadata["title"] for n in nodes} == {
        "pm0": "Cache expiry outage",
        "pm1": "Own title",  # the document's own key wins over its front matter
    }
    assert index.ref_doc_info["pm0"].metadata["title"] == "Cache expiry outage"
    assert index.ref_doc_info["pm0"].metadata["team"] == "web"
    assert given[0].metadata == {"team": "web"} and given[0].text.startswith("---")  # unchanged
    for node in nodes:  # the offsets are in the text the nodes were cut from
        assert node.start_char_idx is not None
    hits = index.as_retriever(similarity_top_k=3).retrieve("What raised the database load?")
    assert hits and all(h.node.metadata["title"] for h in hits)


def test_llamaindex_users_own_nodes_come_back_whole_and_rank_without_the_block():
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SentenceSplitter

    from hcg_core.embedders import HashingEmbedder
    from llama_index_hcg import HCGIndex

    doc = LIDocument(text=FRONT + PARAGRAPH, id_="pm")
    index = HCGIndex.from_documents(
        [doc], embed_model=HashingEmbedder(), transformations=[SentenceSplitter(chunk_size=1024)]
    )
    (node,) = index.docstore.docs.values()
    assert node.get_content() == FRONT + PARAGRAPH  # the user's node, as split
    (ranked,) = index.graph.chunks
    assert ranked.text == PARAGRAPH
    assert ranked.metadata["start_char_idx"] == node.start_char_idx + len(FRONT)
    (hit,) = index.as_retriever(similarity_top_k=1).retrieve("What raised the database load?")
    assert hit.node.get_content() == FRONT + PARAGRAPH


def test_langchain_chunked_documents_carry_the_metadata_and_own_units_come_back_whole():
    from langchain_core.documents import Document as LCDocument

    from hcg_core.embedders import HashingEmbedder
    from langchain_hcg import HCGRetriever

    docs = [LCDocument(page_content=POSTMORTEM.replace("\n", "\r"), id="pm", metadata={"n": 1})]
    chunked = HCGRetriever.from_documents(docs, embeddings=HashingEmbedder(), k=10)
    texts = [c.text for c in chunked.graph.chunks]
    assert texts and not any("uuid" in t or "\r" in t for t in texts)
    assert {c.metadata["title"] for c in chunked.graph.chunks} == {"Cache expiry outage"}
    out = chunked.invoke("What raised the database load?")
    assert out and all(
        d.metadata["title"] == "Cache expiry outage" and d.metadata["n"] == 1 for d in out
    )

    given = FRONT.replace("\n", "\r\n") + PARAGRAPH
    own = HCGRetriever.from_documents(
        [LCDocument(page_content=given, id="pm", metadata={"source": "pm.md"})],
        embeddings=HashingEmbedder(),
        chunk=False,
    )
    (ranked,) = own.graph.chunks
    assert ranked.text == PARAGRAPH
    (back,) = own.invoke("What raised the database load?")
    assert back.page_content == given  # as given
    assert (
        not any(k.startswith("hcg_front") for k in back.metadata) and "title" not in back.metadata
    )


def test_the_readme_corpus_is_unchanged_by_the_reader():
    # No example file has front matter or CR line ends: the reader gives their text as it is.
    corpus = ROOT / "examples" / "corpus"
    docs, _ = load_inputs([corpus])
    for doc in docs:
        assert doc.text == (corpus / doc.id).read_text(encoding="utf-8")
    assert chunk_documents(docs)
