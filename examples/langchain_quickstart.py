"""LangChain quickstart: build an HCG retriever, use it in an LCEL chain, save, load.

Runs offline as is (bundled MiniLM embedder, a fake chat model). To use a real LLM, change
`make_model()` below to return one of these, and pass `llm=` to `HCGRetriever.from_documents` as
well to build the graph with the paper's LLM pipeline instead of the offline builder:

    # OpenAI:  pip install langchain-openai   (reads OPENAI_API_KEY)
    from langchain_openai import ChatOpenAI
    return ChatOpenAI(model="gpt-4o-mini")

    # A local Ollama through its OpenAI-compatible base_url:
    from langchain_openai import ChatOpenAI
    return ChatOpenAI(model="llama3.1", base_url="http://localhost:11434/v1", api_key="ollama")

Run:  python examples/langchain_quickstart.py [--graph-dir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_hcg import HCGRetriever

DATA = Path(__file__).resolve().parent / "data" / "adapter_demo.md"
QUESTION = "Why does atrial fibrillation increase the risk of stroke?"


def make_model() -> Any:
    return FakeListChatModel(responses=["Clots formed in the fibrillating atrium reach the brain."])


def load_documents() -> list[Document]:
    sections = DATA.read_text(encoding="utf-8").split("\n## ")[1:]
    return [
        Document(page_content=body.strip(), id=f"sec-{i}", metadata={"title": title})
        for i, (title, _, body) in enumerate(s.partition("\n") for s in sections)
    ]


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph-dir", type=Path, default=None)
    args = parser.parse_args()
    graph_dir = args.graph_dir or Path(tempfile.mkdtemp(prefix="hcg-langchain-")) / "graph"

    # 1. Build: the core chunker splits the documents (chunk=False if you split them yourself).
    retriever = HCGRetriever.from_documents(load_documents(), k=3, chunk_words=60, overlap_words=10)
    g = retriever.graph
    print(f"graph: {len(g.variables)} variables, {len(g.edges)} edges, {len(g.chunks)} chunks")

    docs = retriever.invoke(QUESTION)
    for d in docs:
        print(f"  [{d.metadata['hcg_route']}] {d.metadata['title']}: {d.metadata['hcg_paths'][:1]}")

    # 2. An LCEL chain: the model sees the passages only, never the graph.
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context only:\n\n{context}"), ("human", "{question}")]
    )
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | make_model()
        | StrOutputParser()
    )
    print("answer:", chain.invoke(QUESTION))

    # 3. Save as a core graph directory and load it back; results are identical.
    retriever.save(graph_dir)
    loaded = HCGRetriever.from_persist_dir(graph_dir, k=3)
    same = [d.id for d in loaded.invoke(QUESTION)] == [d.id for d in docs]
    print(f"saved to {graph_dir}; reloaded retrieval identical: {same}")
    if not same:
        raise SystemExit("reloaded retriever returned different documents")


if __name__ == "__main__":
    main()
