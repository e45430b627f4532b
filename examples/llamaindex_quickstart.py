"""LlamaIndex quickstart: build an HCG index, retrieve, answer with a query engine, persist, load.

Runs offline as is (bundled MiniLM embedder, a local fake LLM). To use a real LLM, change
`make_llm()` below to return one of these, and pass `llm=` to `HCGIndex.from_documents` as well
to build the graph with the paper's LLM pipeline instead of the offline builder:

    # OpenAI:  pip install llama-index-llms-openai   (reads OPENAI_API_KEY)
    from llama_index.llms.openai import OpenAI
    return OpenAI(model="gpt-4o-mini")

    # A local Ollama (OpenAI-compatible base_url):  pip install llama-index-llms-openai-like
    from llama_index.llms.openai_like import OpenAILike
    return OpenAILike(model="llama3.1", api_base="http://localhost:11434/v1", api_key="ollama",
                      is_chat_model=True)

Run:  python examples/llamaindex_quickstart.py [--persist-dir DIR]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path
from typing import Any

from llama_index.core import Document, StorageContext, load_index_from_storage
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from llama_index_hcg import HCGIndex

DATA = Path(__file__).resolve().parent / "data" / "adapter_demo.md"
QUESTION = "Why does atrial fibrillation increase the risk of stroke?"


class ExtractiveFakeLLM(CustomLLM):
    """A stand-in LLM that 'answers' with the first context sentence sharing a word with the
    question, so the example runs with no model and no network."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="extractive-fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        context, _, query = prompt.rpartition("Query:")
        words = {w for w in re.findall(r"[a-z]{5,}", query.lower())}
        # Skip the template's separator and metadata header lines; keep passage text.
        body = " ".join(
            line
            for line in context.splitlines()
            if line.strip() and not re.match(r"^(-+|\w+:)", line)
        )
        for sentence in re.split(r"(?<=[.!?])\s+", body):
            if words & set(re.findall(r"[a-z]{5,}", sentence.lower())):
                return CompletionResponse(text=sentence.strip())
        return CompletionResponse(text="The context does not say.")

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self.complete(prompt).text
        yield CompletionResponse(text=text, delta=text)


def make_llm() -> Any:
    return ExtractiveFakeLLM()


def load_documents() -> list[Document]:
    sections = DATA.read_text(encoding="utf-8").split("\n## ")[1:]
    return [
        Document(text=body.strip(), id_=f"sec-{i}", metadata={"title": title})
        for i, (title, _, body) in enumerate(s.partition("\n") for s in sections)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persist-dir", type=Path, default=None)
    args = parser.parse_args()
    persist_dir = args.persist_dir or Path(tempfile.mkdtemp(prefix="hcg-llamaindex-"))

    # 1. Build. With no transformations= the nodes are hcg's own chunks (those of `hcg build`,
    # the door the README measures); pass transformations=[SentenceSplitter(256, 32)] to keep
    # LlamaIndex's splitter. No llm= means the offline builder; show_progress=True shows bars.
    index = HCGIndex.from_documents(load_documents())
    g = index.graph
    print(f"graph: {len(g.variables)} variables, {len(g.edges)} edges, {len(g.chunks)} chunks")

    # 2. Retrieve: docstore nodes, with why each came back in (LLM-hidden) metadata.
    retriever = index.as_retriever(similarity_top_k=3)
    nodes = retriever.retrieve(QUESTION)
    for nws in nodes:
        meta = nws.node.metadata
        print(f"  [{meta['hcg_route']}] {nws.score:.3f} {meta['title']}: {meta['hcg_paths'][:1]}")

    # 3. Answer with a query engine (the LLM sees the passages, never the graph).
    engine = index.as_query_engine(llm=make_llm(), similarity_top_k=3)
    print("answer:", engine.query(QUESTION))

    # 4. Persist and load with LlamaIndex's own storage; results are identical.
    index.storage_context.persist(persist_dir=str(persist_dir))
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(persist_dir)))
    again = loaded.as_retriever(similarity_top_k=3).retrieve(QUESTION)
    same = [n.node.node_id for n in again] == [n.node.node_id for n in nodes]
    print(f"persisted to {persist_dir}; reloaded retrieval identical: {same}")
    if not same:
        raise SystemExit("reloaded index returned different nodes")


if __name__ == "__main__":
    main()
