"""Shared fixtures: a small hand-built causal graph and a keyword embedder with exact vectors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hcg_core.types import (
    CausalEdge,
    CausalGraph,
    Chunk,
    Dimension,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Variable,
)

AXES = ("smoking", "inflammation", "pressure", "stroke", "death", "diet", "sleep", "weather")


class KeywordEmbedder:
    """Deterministic test embedder: one axis per keyword, plus a constant axis.

    A text's vector counts the keywords it contains (so similarities are exact and explainable);
    the constant axis keeps keyword-free texts from being zero vectors.
    """

    name = "keyword-test"
    dim = len(AXES) + 1

    def _vec(self, text: str) -> np.ndarray:
        words = re.findall(r"[a-z]+", text.lower())
        v = np.array([sum(w.startswith(a) for w in words) for a in AXES] + [0.05], dtype=np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts):
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim))

    def embed_query(self, text):
        return self._vec(text)


@pytest.fixture
def embedder() -> KeywordEmbedder:
    return KeywordEmbedder()


def make_graph() -> CausalGraph:
    """Smoking -> Inflammation -> Pressure -> Stroke (outcome) -> Death (terminal); Diet -> Pressure.

    Sleep is an isolated variable with no edges; weather is a chunk no edge cites.
    """
    dims = (Dimension("organ", ("vessels", "lungs")),)
    metrics = (
        Metric("Smoking", (), "tobacco smoking exposure", "exposure"),
        Metric("Inflammation", ("organ",), "inflammation of an organ", "physiology"),
        Metric("Pressure", (), "blood pressure", "physiology"),
        Metric("Diet", (), "diet quality", "exposure"),
        Metric("Sleep", (), "sleep quality", "exposure"),
        Metric("Stroke", (), "stroke incidence", "outcome", "outcome"),
        Metric("Death", (), "death", "outcome", "terminal"),
    )
    spec = DomainSpec(dims, metrics, outcome=OutcomeConfig(("Stroke",), ("Death",)))
    variables = (
        Variable("Smoking"),
        Variable("Inflammation", ("vessels",)),
        Variable("Inflammation", ("lungs",)),
        Variable("Pressure"),
        Variable("Diet"),
        Variable("Sleep"),
        Variable("Stroke"),
        Variable("Death"),
    )
    chunks = tuple(
        Chunk(f"c{i}", t, "doc")
        for i, t in enumerate(
            [
                "smoking inflames vessels and lungs",  # c0
                "inflammation of vessels raises pressure",  # c1
                "high pressure causes stroke",  # c2
                "stroke may lead to death",  # c3
                "a poor diet raises pressure",  # c4
                "weather report sunny",  # c5
                "sleep matters",  # c6
            ]
        )
    )
    edges = (
        CausalEdge(
            "e_s_iv", "Smoking", "Inflammation(vessels)", "smoking inflames vessels", 0.9, ("c0",)
        ),
        CausalEdge(
            "e_s_il", "Smoking", "Inflammation(lungs)", "smoking inflames lungs", 0.8, ("c0",)
        ),
        CausalEdge("e_iv_p", "Inflammation(vessels)", "Pressure", "stiff vessels", 0.7, ("c1",)),
        CausalEdge("e_p_st", "Pressure", "Stroke", "vessel rupture", 0.95, ("c2",)),
        CausalEdge("e_st_d", "Stroke", "Death", "brain damage", 0.6, ("c3",)),
        CausalEdge("e_d_p", "Diet", "Pressure", "salt", 0.5, ("c4",)),
    )
    return CausalGraph(spec, variables, edges, chunks)


@pytest.fixture
def graph() -> CausalGraph:
    return make_graph()


def flat_corpus_index(embed_model):
    """An HCGIndex over the example corpus as one text without paragraph breaks, cut by
    LlamaIndex's SentenceSplitter into overlapping ~220-word nodes."""
    from pathlib import Path

    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_hcg import HCGIndex

    folder = Path(__file__).resolve().parents[1] / "examples" / "corpus"
    text = " ".join(
        " ".join(p.read_text(encoding="utf-8").split()) for p in sorted(folder.glob("*.md"))
    )
    index = HCGIndex.from_documents(
        [Document(text=text, id_="all")],
        embed_model=embed_model,
        transformations=[SentenceSplitter(chunk_size=300, chunk_overlap=60)],
    )
    return index, text
