"""Model seams between LangChain and hcg_core, both ways.

- :func:`to_core_embedder` wraps any LangChain ``Embeddings`` as a core ``Embedder``;
- :class:`HCGDefaultEmbeddings` exposes a core embedder (by default the bundled offline MiniLM) as
  LangChain ``Embeddings``, so a vector store can run on the very same vectors as the graph;
- :class:`LangChainStructuredLLM` wraps any chat model as a core ``StructuredLLM``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from pydantic import BaseModel

from hcg_core import adapter_common
from hcg_core.embedders import default_embedder
from hcg_core.embedders.wrapped import FrameworkEmbedder, core_embedder
from hcg_core.errors import ConfigError
from hcg_core.llm.structured import as_structured_llm, framework_reply
from hcg_core.ports import Embedder, StructuredLLM

M = TypeVar("M", bound=BaseModel)


class HCGDefaultEmbeddings(Embeddings):
    """A core embedder as LangChain ``Embeddings``; by default the offline MiniLM (384 dims).

    Setup::

        from langchain_core.vectorstores import InMemoryVectorStore
        from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

        emb = HCGDefaultEmbeddings()        # or HCGDefaultEmbeddings(embedder=HashingEmbedder())
        hcg = HCGRetriever.from_documents(docs, embeddings=emb)
        vec = InMemoryVectorStore.from_documents(docs, emb).as_retriever()   # same vectors
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = core_embedder(embedder, default=default_embedder, refuse=(Embeddings,))

    def __repr__(self) -> str:
        return f"HCGDefaultEmbeddings(embedder={self.embedder!r})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()


def to_core_embedder(embeddings: Any) -> Embedder:
    """Any LangChain ``Embeddings`` (or a core Embedder, returned as is) as a core Embedder.

    The name stored with the vectors is ``langchain:<class>[:<model>]``; queries use
    ``embed_query`` so asymmetric models stay correct.
    """
    if isinstance(embeddings, HCGDefaultEmbeddings):
        return embeddings.embedder
    return adapter_common.to_core_embedder(
        embeddings, Embeddings, LangChainEmbedder, "embeddings must be LangChain Embeddings"
    )


class LangChainEmbedder(FrameworkEmbedder):
    """LangChain ``Embeddings`` as a core Embedder; ``aembed_query`` keeps the async API.

    The name stored with the vectors is ``langchain:<class>[:<model>][:d<dimensions>]``. It is a
    plain object over the ``Embeddings`` model, so it pickles whenever that model does.
    """

    def __init__(self, embeddings: Embeddings) -> None:
        model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        size = getattr(embeddings, "size", None)  # the fake embeddings' only identity
        name = f"langchain:{type(embeddings).__name__}"
        if model:
            name += f":{model}"
        elif isinstance(size, int):
            name += f":{size}"
        super().__init__(
            embeddings,
            adapter_common.with_dimensions(name, embeddings),
            fn=embeddings.embed_documents,
            query_fn=embeddings.embed_query,
            aquery_fn=embeddings.aembed_query,
        )


def resolve_embedder(embeddings: Any | None) -> Embedder:
    """The given embeddings wrapped, or the bundled offline default."""
    return default_embedder() if embeddings is None else to_core_embedder(embeddings)


class LangChainStructuredLLM:
    """Any LangChain chat model as a core ``StructuredLLM``.

    ``with_structured_output(Model)`` first (tool calling or JSON mode on real models); models that
    do not implement it (the fake chat models, some local ones) or whose structured reply does not
    validate fall back to the core's JSON-from-text loop with re-asks.
    """

    def __init__(self, model: BaseLanguageModel):
        if not isinstance(model, BaseLanguageModel):
            raise ConfigError(f"llm must be a LangChain chat model, got {type(model).__name__}")
        self.model = model
        model_name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
        self.name = f"langchain:{type(model).__name__}" + (f":{model_name}" if model_name else "")

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]

        async def structured() -> Any:
            # NotImplementedError from a model without structured output: the text path.
            return await self.model.with_structured_output(response_model).ainvoke(msgs)

        async def send(batch: list[dict[str, str]]) -> str:
            reply = await self.model.ainvoke(batch)
            content = getattr(reply, "content", reply)
            return content if isinstance(content, str) else str(content)

        return await framework_reply(
            structured if isinstance(self.model, BaseChatModel) else None,
            send,
            msgs,
            response_model,
            name=self.name,
            soft_errors=(ValueError, NotImplementedError, TypeError),
        )


def to_structured_llm(llm: Any | None) -> StructuredLLM | None:
    """``None`` stays ``None`` (offline builder); a core StructuredLLM passes; a LangChain model is wrapped."""
    return as_structured_llm(llm, BaseLanguageModel, LangChainStructuredLLM)
