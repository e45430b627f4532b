"""Incremental insert and delete for ``CausalGraphRetriever``: edit the arrays, not rebuild them.

An insert of k chunks costs O(k) (embedding, tokenising and splitting only the new text) plus
memcpy-level appends: chunk vectors and word counts go into capacity-doubling buffers, the BM25
index and the hybrid ranker grow by the new passages (``HybridRanker.extended``), and the compiled
graph is recompiled from the edge list with the chunk arrays it already has (O(variables + edges)).
The graph's edges are updated by ``graph_build.incremental``: with the offline builder's support
ledger, from the new text's statements; without one, no edge is extracted from the new text.
Either way every edge is then linked again to the chunks that state it (``evidence.link_evidence``,
no embedding; O(corpus) text scanning, seconds for a thousand chunks), so an edited graph has the
evidence a fresh build would give it. A delete compacts the arrays with a mask (no
re-embedding, no re-tokenising; O(chunks) array copies).

Edits replace the retriever's state attribute by attribute; they are not safe while other
threads query the same retriever (serialise edits and queries, or edit a copy). Retrievers made
with ``with_config`` are read-only views: edit the retriever they came from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..blocks import vectors_of_chunks
from ..contract import keep_in_batch
from ..corpus import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS, chunk_documents, recorded_chunking
from ..errors import ConfigError, InputError
from ..graph_build.evidence import recorded_per_edge
from ..graph_build.incremental import (
    UpdateReport,
    apply_links,
    drop_evidence,
    empty_vocabulary_note,
    relink_edges,
)
from ..graph_build.statements import collect_statements
from ..types import CausalGraph, Chunk, SourceDocument
from .compiled import CompiledGraph
from .lexical import Growable

# The retriever edited here (``retriever.CausalGraphRetriever``); not imported: it imports this.
Retriever = Any


@dataclass
class EditState:
    """Per-chunk arrays kept in growable buffers, for the retriever that owns them."""

    owner: Any
    n: int
    vectors: Growable
    words: Growable
    row: dict[str, int]
    docs: dict[str, int]  # document id -> chunks of it

    @classmethod
    def of(cls, r: Retriever) -> EditState:
        st = r._edit_state
        if st is None or st.owner is not r or st.n != len(r.graph.chunks):
            chunks = r.graph.chunks
            st = cls(
                owner=r,
                n=len(chunks),
                vectors=Growable(np.asarray(r.chunk_embeddings, dtype=np.float32)),
                words=Growable(np.asarray(r.compiled.chunk_words, dtype=np.int64)),
                row={c.id: i for i, c in enumerate(chunks)},
                docs=_doc_counts(chunks),
            )
            r.edited(st)
        return st


def _check_editable(r: Retriever) -> None:
    if not r.edits_owned():
        raise ConfigError(
            "this retriever was made by with_config from another one and shares its arrays; "
            "insert into or delete from the original retriever, then call with_config again"
        )


def _as_chunks(items: Any, chunk_words: int, overlap_words: int) -> list[Chunk]:
    if isinstance(items, (Chunk, SourceDocument)):
        items = [items]
    items = list(items)
    bad = [type(x).__name__ for x in items if not isinstance(x, (Chunk, SourceDocument))]
    if bad:
        raise InputError(
            f"insert takes hcg_core SourceDocument or Chunk objects, got {', '.join(sorted(set(bad)))}"
        )
    docs = [x for x in items if isinstance(x, SourceDocument)]
    chunks = [x for x in items if isinstance(x, Chunk)]
    # An insert refuses what a build skips: ids given twice in the batch, and items without text
    # (an empty chunk makes a directory its loader refuses); nothing is added then.
    keep_in_batch([(d.id, d.text) for d in docs], insert=True)
    keep_in_batch([(c.id, c.text) for c in chunks], insert=True, what="chunk")
    if docs:
        chunks += chunk_documents(docs, chunk_words=chunk_words, overlap_words=overlap_words)
    return chunks


def insert(
    r: Retriever,
    items: SourceDocument | Chunk | Iterable[SourceDocument | Chunk],
    *,
    chunk_words: int | None = None,
    overlap_words: int | None = None,
    evidence_per_edge: int | None = None,
    chunk_vectors: np.ndarray | None = None,
    skip_existing: bool = False,
) -> UpdateReport:
    """See :meth:`CausalGraphRetriever.insert`."""
    _check_editable(r)
    # Documents are chunked like the build was (``hcg build`` records it), else by the defaults.
    built = recorded_chunking(r.build_report)  # odd-typed values are ignored
    if chunk_words is None:
        chunk_words = built.get("chunk_words", DEFAULT_CHUNK_WORDS)
    if overlap_words is None:
        overlap_words = built.get("chunk_overlap", DEFAULT_OVERLAP_WORDS)
        if overlap_words >= chunk_words:
            overlap_words = min(DEFAULT_OVERLAP_WORDS, chunk_words - 1)
    new = _as_chunks(items, chunk_words, overlap_words)
    graph = r.graph
    st = EditState.of(r)
    skipped = 0
    if skip_existing:
        fresh = [i for i, c in enumerate(new) if c.id not in st.row]
        skipped = len(new) - len(fresh)
        if chunk_vectors is not None:
            chunk_vectors = np.asarray(chunk_vectors)[fresh]
        new = [new[i] for i in fresh]
    report = UpdateReport(chunks_added=len(new))
    if skipped:
        report.notes.append(f"{skipped} chunk(s) already indexed were skipped")
    if not new:
        report.graph_mode = "none"
        return report
    ids = Counter(c.id for c in new)
    clash = sorted(i for i, n in ids.items() if n > 1 or i in st.row)
    if clash:
        raise InputError(
            f"{len(clash)} chunk id(s) are already indexed or repeated (first: {clash[0]!r}); "
            "delete the document first (or update it), or give the chunks their own ids"
        )
    known = sorted({c.doc_id for c in new if c.doc_id in st.docs})
    if known:
        raise InputError(
            f"document {known[0]!r} is already indexed; delete it first (or update it), so its "
            "old and new text do not both count"
        )
    if chunk_vectors is None:
        vectors = vectors_of_chunks(r.embedder, new, what="inserted chunks")
    else:  # reused rows (hcg add: unchanged chunks are not embedded again)
        vectors = np.asarray(chunk_vectors, dtype=np.float32)
        if vectors.shape[0] != len(new):
            raise ConfigError(f"chunk_vectors has {vectors.shape[0]} rows for {len(new)} chunks")
    n = st.n
    st.vectors = st.vectors.append(n, vectors)
    st.words = st.words.append(n, np.asarray([len(c.text.split()) for c in new], np.int64))
    for i, c in enumerate(new, start=n):
        st.row[c.id] = i
        if c.doc_id:
            st.docs[c.doc_id] = st.docs.get(c.doc_id, 0) + 1
    st.n = n + len(new)
    grown = replace(graph, chunks=graph.chunks + tuple(new))
    ledger = _usable_ledger(r)
    if ledger is not None:
        roles = {m.name: m.role for m in graph.spec.metrics}
        terminal = {v.name for v in graph.variables if roles.get(v.metric) == "terminal"}
        touched = ledger.add_chunks(new, terminal, report)
        edges = apply_links(grown, ledger, touched, st.row, report)
        r.edited(st, ledger_version=ledger.version)
    elif graph.edges:
        report.graph_mode = "relink"
        per_edge = evidence_per_edge or recorded_per_edge(r.build_report)
        edges = relink_edges(grown, graph.edges, report, per_edge)
        report.notes.append(
            "this graph has no offline support ledger (LLM-built, edited, or saved before "
            "ledgers): its edges were linked again to the chunks that state them, new text "
            "included; no edge was extracted from the new text; rebuild to extract its causal "
            "statements"
        )
    else:
        report.graph_mode = "none"
        edges = graph.edges
    if not graph.spec.metrics:
        # An empty graph (a corpus without causal wording) has no metric to map a span onto, so
        # new causal statements can only become edges by a rebuild; said, never silent.
        found = report.statements if ledger is not None else len(collect_statements(new).statements)
        if found:
            report.notes.append(empty_vocabulary_note(found))
    _install(r, replace(grown, edges=edges), st, appended=True)
    if r.dense_index is not None:  # a vector store serves the dense search: write the new chunks
        r.dense_index = r.dense_index.extended(new, vectors)
    for key, ranker in list(r._rankers.items()):
        r._rankers[key] = ranker.extended(new, r.chunk_embeddings, r.dense_index)
    report.log("insert")
    return report


def delete(
    r: Retriever,
    doc_ids: Iterable[str] = (),
    chunk_ids: Iterable[str] = (),
) -> UpdateReport:
    """See :meth:`CausalGraphRetriever.delete`."""
    _check_editable(r)
    docs, ids = set(doc_ids), set(chunk_ids)
    graph = r.graph
    keep = np.array([c.doc_id not in docs and c.id not in ids for c in graph.chunks], dtype=bool)
    removed = [c for c, k in zip(graph.chunks, keep.tolist(), strict=True) if not k]
    found = {c.doc_id for c in removed} | {c.id for c in removed}
    report = UpdateReport(chunks_removed=len(removed))
    report.missing = tuple(sorted((docs | ids) - found))
    if not removed:
        report.graph_mode = "none"
        return report
    st = EditState.of(r)
    kept_chunks = tuple(c for c, k in zip(graph.chunks, keep.tolist(), strict=True) if k)
    st.vectors = Growable(st.vectors.view(st.n)[keep])
    st.words = Growable(st.words.view(st.n)[keep])
    st.row = {c.id: i for i, c in enumerate(kept_chunks)}
    st.docs = _doc_counts(kept_chunks)
    st.n = len(kept_chunks)
    shrunk = replace(graph, chunks=kept_chunks)
    gone = {c.id for c in removed}
    ledger = _usable_ledger(r)
    if ledger is not None:
        touched = ledger.remove_chunks(removed)
        edges = apply_links(shrunk, ledger, touched, st.row, report)
        r.edited(st, ledger_version=ledger.version)
    else:
        report.graph_mode = "relink" if graph.edges else "none"
        # An edge whose evidence was all in the removed text goes (nothing it was built from
        # remains); the others are linked again to the chunks left.
        edges = drop_evidence(graph.edges, gone, report)
        if edges:
            edges = relink_edges(shrunk, edges, report, recorded_per_edge(r.build_report))
    _install(r, replace(shrunk, edges=edges), st)
    if r.dense_index is not None:  # and remove the deleted chunks' points from the store
        r.dense_index = r.dense_index.subset(keep, [c.id for c in removed])
    for key, ranker in list(r._rankers.items()):
        r._rankers[key] = ranker.subset(keep, r.chunk_embeddings, r.dense_index)
    report.log("delete")
    return report


def relink(r: Retriever, per_edge: int | None = None) -> UpdateReport:
    """See :meth:`CausalGraphRetriever.relink`."""
    _check_editable(r)
    graph = r.graph
    report = UpdateReport(graph_mode="relink" if graph.edges else "none")
    ledger = _usable_ledger(r)
    if per_edge is None:
        per_edge = ledger.max_evidence if ledger is not None else recorded_per_edge(r.build_report)
    edges = relink_edges(graph, graph.edges, report, per_edge)
    _install(r, replace(graph, edges=edges), EditState.of(r), appended=True)
    report.log("relink")
    return report


def _usable_ledger(r: Retriever) -> Any:
    # None when absent, or advanced by another retriever sharing it.
    return r.ledger if r.ledger_current() else None


def _install(r: Retriever, graph: CausalGraph, st: EditState, *, appended: bool = False) -> None:
    """Swap in the edited graph: a new compiled graph over the grown/compacted chunk arrays, and
    a new ranker dict (retrievers cloned earlier keep the old one, consistent with their graph).
    ``appended``: the edit only added chunks after the existing ones (an insert)."""
    old_graph, old = r.graph, r.compiled
    r.graph = graph
    r.chunk_embeddings = st.vectors.view(st.n)
    if appended and _same_edges(old_graph, graph):
        # Most inserts change no edge (their statements map to no link, or to links whose
        # edge stays the same): every variable, edge and evidence array stays valid, since
        # appended chunks leave the existing chunk rows as they were. Only the chunk arrays
        # are new; this spares the O(variables + edges + evidence) recompile.
        r.compiled = old.with_chunks(r.chunk_embeddings, st.words.view(st.n))
    else:
        r.compiled = CompiledGraph.compile(
            graph,
            r.variable_embeddings,
            r.chunk_embeddings,
            chunk_words=st.words.view(st.n),
            chunk_row=st.row,
        )
    r._rankers = dict(r._rankers)


def _same_edges(old: CausalGraph, new: CausalGraph) -> bool:
    """Whether ``new`` has ``old``'s spec, variables and edge objects, in the same order
    (identity, so the check is O(edges) pointer comparisons)."""
    return (
        new.variables is old.variables
        and new.spec is old.spec
        and len(new.edges) == len(old.edges)
        and all(a is b for a, b in zip(new.edges, old.edges, strict=True))
    )


def _doc_counts(chunks: Iterable[Chunk]) -> dict[str, int]:
    return dict(Counter(c.doc_id for c in chunks if c.doc_id))
