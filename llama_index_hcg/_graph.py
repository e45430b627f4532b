"""Framework-free helpers the LlamaIndex index needs: graph <-> JSON-ready dict, matrix <-> text,
and the two graph edits behind ``insert`` and ``delete_ref_doc`` (pure functions, no I/O).

The index struct must be JSON (LlamaIndex persists it through its key-value index store; never
pickle), so the graph is written as plain data and the vectors as base64 float32.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from hcg_core import store
from hcg_core.spec.yaml_io import spec_from_dict, spec_to_dict
from hcg_core.types import CausalEdge, CausalGraph, Chunk

GRAPH_FORMAT = 1


def graph_to_dict(graph: CausalGraph) -> dict[str, Any]:
    """The graph as plain data (the core's ``graph.json`` shape plus the spec); chunk *texts* are
    left out (they live in the docstore), their ids kept."""
    return {
        "format": GRAPH_FORMAT,
        "spec": spec_to_dict(graph.spec),
        **store.graph_to_dict(graph),
        "chunk_ids": [c.id for c in graph.chunks],
    }


def graph_from_dict(data: dict[str, Any], chunks: Sequence[Chunk]) -> CausalGraph:
    """Inverse of :func:`graph_to_dict`; ``chunks`` supplies the texts, in ``chunk_ids`` order."""
    # A stored spec was valid when built; re-validating would reject a graph whose entity lists
    # the builder legitimately extended.
    spec = spec_from_dict(data["spec"], validate=False)
    variables, edges = store.graph_from_dict(data, spec)
    return CausalGraph(spec=spec, variables=variables, edges=edges, chunks=tuple(chunks))


def encode_matrix(matrix: np.ndarray | None) -> str:
    """float32 rows as base64 text (JSON-safe, exact, about 1.33x the binary size)."""
    if matrix is None:
        return ""
    return base64.b64encode(np.ascontiguousarray(matrix, dtype="<f4").tobytes()).decode("ascii")


def decode_matrix(text: str, dim: int) -> np.ndarray | None:
    """Inverse of :func:`encode_matrix`; ``None`` for an empty string."""
    if not text:
        return None
    flat = np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)
    return flat.reshape(-1, dim) if dim else flat.reshape(0, 0)


def remove_chunks(
    graph: CausalGraph, chunk_ids: Iterable[str], chunk_embeddings: np.ndarray | None = None
) -> tuple[CausalGraph, np.ndarray | None, tuple[str, ...]]:
    """Drop chunks and every evidence link to them; drop edges whose evidence was *all* removed.

    An edge that never had evidence is kept (the LLM builder can add edges before linking); one
    whose only support was deleted text is dropped, because the graph must not keep asserting a
    link that no remaining passage backs. Returns the graph, the embedding rows kept (aligned with
    the new ``graph.chunks``) and the ids of the dropped edges.

    >>> from hcg_core.types import DomainSpec
    >>> g = CausalGraph(DomainSpec((), ()), (), (CausalEdge("e1", "A", "B", evidence=("c1",)),
    ...     CausalEdge("e2", "B", "C", evidence=("c1", "c2"))), (Chunk("c1", "x"), Chunk("c2", "y")))
    >>> g2, _, dropped = remove_chunks(g, ["c1"])
    >>> [c.id for c in g2.chunks], [(e.id, e.evidence) for e in g2.edges], dropped
    (['c2'], [('e2', ('c2',))], ('e1',))
    """
    gone = set(chunk_ids)
    keep = [i for i, c in enumerate(graph.chunks) if c.id not in gone]
    edges: list[CausalEdge] = []
    dropped: list[str] = []
    for e in graph.edges:
        evidence = tuple(c for c in e.evidence if c not in gone)
        if e.evidence and not evidence:
            dropped.append(e.id)
            continue
        edges.append(e if evidence == e.evidence else replace(e, evidence=evidence))
    new = replace(graph, edges=tuple(edges), chunks=tuple(graph.chunks[i] for i in keep))
    rows = chunk_embeddings[keep] if chunk_embeddings is not None else None
    return new, rows, tuple(dropped)


def add_chunks(
    graph: CausalGraph,
    chunks: Sequence[Chunk],
    similarity: np.ndarray | None,
    *,
    tau: float,
    per_edge: int,
) -> CausalGraph:
    """Append chunks and link each to the existing edges it supports.

    ``similarity[e, j]`` is the cosine between edge ``e``'s text (``"source -> target: mechanism"``)
    and new chunk ``j``: the paper's semantic evidence match. A chunk is linked when the cosine is at
    least ``tau``, best first, while the edge has fewer than ``per_edge`` links. New variables and
    edges need a rebuild; insertion only adds evidence.
    """
    known = {c.id for c in graph.chunks}
    fresh = [c for c in chunks if c.id not in known]
    edges = list(graph.edges)
    if similarity is not None and fresh and edges:
        col = {c.id: j for j, c in enumerate(chunks)}
        for ei, e in enumerate(edges):
            room = per_edge - len(e.evidence)
            if room <= 0:
                continue
            scored = sorted(
                ((float(similarity[ei, col[c.id]]), c.id) for c in fresh),
                key=lambda t: (-t[0], t[1]),
            )
            extra = tuple(cid for s, cid in scored if s >= tau)[:room]
            if extra:
                edges[ei] = replace(e, evidence=e.evidence + extra)
    return replace(graph, edges=tuple(edges), chunks=graph.chunks + tuple(fresh))
