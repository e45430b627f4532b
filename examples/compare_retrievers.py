"""Compare HCG with a framework vector retriever and BM25 on the same chunks and embedder.

Runs offline as is. Every retriever sees the very same chunks (the core chunker's), and the HCG
graph and the vector store use the very same embedder (the bundled MiniLM), so the only difference
is how passages are chosen. No LLM is needed to retrieve. To build the graph with an LLM instead of
the offline builder, pass `llm=` to `HCGRetriever.from_documents` (any LangChain chat model), e.g.

    from langchain_openai import ChatOpenAI
    llm = ChatOpenAI(model="gpt-4o-mini")                                    # OpenAI
    llm = ChatOpenAI(model="llama3.1", base_url="http://localhost:11434/v1",  # a local Ollama
                     api_key="ollama")

Run:  python examples/compare_retrievers.py [--k 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from hcg_core.corpus import chunk_documents
from hcg_core.retrieval import BM25Index
from hcg_core.types import SourceDocument
from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

DATA = Path(__file__).resolve().parent / "data" / "adapter_demo.md"

# (question, the section whose text answers it). Multi-hop causal questions are where the graph is
# meant to help; the last one is a plain lookup, where vectors and BM25 are expected to do as well.
QUESTIONS: list[tuple[str, str]] = [
    ("How does obesity end up raising blood pressure and diabetes risk?", "sec-4"),
    ("Why does atrial fibrillation increase the risk of stroke?", "sec-5"),
    ("Through what mechanism does smoking lead to ischaemic stroke?", "sec-1"),
    ("What does statin therapy lower?", "sec-2"),
]


def load_chunks() -> list[Document]:
    sections = DATA.read_text(encoding="utf-8").split("\n## ")[1:]
    docs = [
        SourceDocument(id=f"sec-{i}", text=body.strip(), metadata={"title": title})
        for i, (title, _, body) in enumerate(s.partition("\n") for s in sections)
    ]
    return [
        Document(page_content=c.text, id=c.id, metadata={**c.metadata, "doc_id": c.doc_id})
        for c in chunk_documents(docs, chunk_words=40, overlap_words=8)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    chunks = load_chunks()
    embeddings = HCGDefaultEmbeddings()  # one embedder for both HCG and the vector store

    hcg = HCGRetriever.from_documents(chunks, embeddings=embeddings, chunk=False, k=args.k)
    vector = InMemoryVectorStore.from_documents(chunks, embeddings).as_retriever(
        search_kwargs={"k": args.k}
    )
    bm25 = BM25Index([c.page_content for c in chunks])

    def bm25_search(q: str) -> list[Document]:
        rows, _ = bm25.top_k(q, args.k)
        return [chunks[int(i)] for i in rows]

    systems: dict[str, Callable[[str], list[Document]]] = {
        "hcg": hcg.invoke,
        "vector": vector.invoke,
        "bm25": bm25_search,
    }
    hits = dict.fromkeys(systems, 0)
    print(
        f"{len(chunks)} chunks; graph: {len(hcg.graph.variables)} variables, "
        f"{len(hcg.graph.edges)} edges; top-{args.k} per retriever\n"
    )
    for question, gold in QUESTIONS:
        print(question)
        for name, search in systems.items():
            docs = search(question)
            hit = any(d.metadata["doc_id"] == gold for d in docs)
            hits[name] += hit
            sections = ", ".join(d.metadata["doc_id"] for d in docs)
            print(f"  {name:<7} {'hit ' if hit else 'miss'} [{sections}]")
        print()
    print("hit rate (answering section in top-k):")
    for name, n in hits.items():
        print(f"  {name:<7} {n}/{len(QUESTIONS)}")


if __name__ == "__main__":
    main()
