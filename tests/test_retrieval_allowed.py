"""The core retriever's ``allowed`` mask (what the adapters' metadata filters become): only allowed
chunks come back, k of them when k exist, in both modes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import KeywordEmbedder, make_graph

from hcg_core.config import HybridConfig, RetrievalConfig
from hcg_core.errors import ConfigError
from hcg_core.retrieval import CausalGraphRetriever

QUERY = "does smoking inflammation raise pressure and stroke"


def retriever(mode: str) -> CausalGraphRetriever:
    config = RetrievalConfig(mode=mode, hybrid=HybridConfig(passage_words=0))
    return CausalGraphRetriever(make_graph(), KeywordEmbedder(), config)


@pytest.mark.parametrize("mode", ["hybrid", "paper"])
def test_only_allowed_chunks_come_back_and_k_of_them(mode: str) -> None:
    r = retriever(mode)
    ids = [c.id for c in r.graph.chunks]
    unfiltered = [rc.chunk.id for rc in r.retrieve(QUERY, k=3).chunks]
    # Exclude the unfiltered top 2: the next-best allowed chunks must fill k = 3.
    allowed = np.array([i not in unfiltered[:2] for i in ids])
    got = r.retrieve(QUERY, k=3, allowed=allowed).chunks
    assert len(got) == 3
    assert all(allowed[ids.index(rc.chunk.id)] for rc in got)
    assert not {rc.chunk.id for rc in got} & set(unfiltered[:2])
    only_two = np.array([i in ("c5", "c6") for i in ids])  # neither mentions the query's words
    assert sorted(rc.chunk.id for rc in r.retrieve(QUERY, k=5, allowed=only_two).chunks) == [
        "c5",
        "c6",
    ]
    assert r.retrieve(QUERY, k=3, allowed=np.zeros(len(ids), bool)).chunks == ()


def test_a_malformed_mask_is_a_typed_error() -> None:
    r = retriever("hybrid")
    with pytest.raises(ConfigError, match="boolean mask"):
        r.retrieve(QUERY, allowed=np.ones(3, bool))
    with pytest.raises(ConfigError, match="boolean mask"):
        r.retrieve(QUERY, allowed=np.ones(len(r.graph.chunks), int))
