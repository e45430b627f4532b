"""LangChain's own conformance suite for retrievers, run unmodified on the offline default embedder."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from langchain_hcg import HCGRetriever

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "data" / "adapter_demo.md"


@lru_cache(maxsize=1)
def _core() -> CoreRetriever:
    # Built once for the whole class: the suite constructs the retriever many times.
    sections = CORPUS.read_text(encoding="utf-8").split("\n## ")[1:]
    docs = [
        Document(page_content=s.partition("\n")[2].strip(), id=f"sec-{i}")
        for i, s in enumerate(sections)
    ]
    return HCGRetriever.from_documents(docs, chunk_words=40, overlap_words=8).core


class TestHCGRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[HCGRetriever]:
        return HCGRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"core": _core(), "k": 3}

    @property
    def retriever_query_example(self) -> str:
        return "What causes a stroke?"
