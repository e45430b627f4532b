"""Framework-free helpers the LlamaIndex index needs: graph <-> JSON-ready dict, matrix <-> text
(pure functions, no I/O). Edits go through the core retriever (``hcg_core.retrieval.updates``).

The index struct must be JSON (LlamaIndex persists it through its key-value index store; never
pickle), so the graph is written as plain data and inline vectors as base64 float32 (persisted
to a local folder, the vectors are ``.npy`` files instead: ``_persist``).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import numpy as np

from hcg_core import store
from hcg_core.spec.yaml_io import spec_from_dict, spec_to_dict
from hcg_core.types import CausalGraph, Chunk

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
