"""Model seams between LangChain and hcg_core, both ways.

- :func:`to_core_embedder` wraps any LangChain ``Embeddings`` as a core ``Embedder``;
- :class:`HCGDefaultEmbeddings` exposes a core embedder (by default the bundled offline MiniLM) as
  LangChain ``Embeddings``, so a vector store can run on the very same vectors as the graph;
- :class:`LangChainStructuredLLM` wraps any chat model as a core ``StructuredLLM``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from pydantic import BaseModel, ValidationError

from hcg_core.embedders import CallableEmbedder, default_embedder
from hcg_core.embedders._common import check_text
from hcg_core.embedding import embedder_errors, is_embedder
from hcg_core.errors import ConfigError, LLMError
from hcg_core.llm.structured import complete_validated
from hcg_core.ports import Embedder, StructuredLLM

M = TypeVar("M", bound=BaseModel)


def _is_core_embedder(obj: Any) -> bool:
    return is_embedder(obj) and not isinstance(obj, Embeddings)


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
        embedder = embedder if embedder is not None else default_embedder()
        if not _is_core_embedder(embedder):
            raise ConfigError(
                f"embedder must be an hcg_core Embedder (name, dim, embed_documents, embed_query), "
                f"got {type(embedder).__name__}"
            )
        self.embedder = embedder

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
    if _is_core_embedder(embeddings):
        return embeddings
    if not isinstance(embeddings, Embeddings):
        raise ConfigError(
            f"embeddings must be LangChain Embeddings or an hcg_core Embedder, "
            f"got {type(embeddings).__name__}"
        )
    return LangChainEmbedder(embeddings)


class LangChainEmbedder(CallableEmbedder):
    """LangChain ``Embeddings`` as a core Embedder; ``aembed_query`` keeps the async API.

    The name stored with the vectors is ``langchain:<class>[:<model>][:d<dimensions>]``. It is a
    plain object over the ``Embeddings`` model, so it pickles whenever that model does.
    """

    def __init__(self, embeddings: Embeddings) -> None:
        model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        size = getattr(embeddings, "size", None)  # the fake embeddings' only identity
        dimensions = getattr(embeddings, "dimensions", None)  # e.g. OpenAI's dimensions=
        name = f"langchain:{type(embeddings).__name__}"
        if model:
            name += f":{model}"
        elif isinstance(size, int):
            name += f":{size}"
        if isinstance(dimensions, int):
            name += f":d{dimensions}"
        super().__init__(embeddings.embed_documents, name=name, query_fn=embeddings.embed_query)
        self.embeddings = embeddings

    async def aembed_query(self, text: str) -> np.ndarray:
        """One query vector through ``Embeddings.aembed_query``, checked like the sync one."""
        text = check_text(text, who=self.name)
        with embedder_errors(f"{self.name} failed on a query"):
            raw = await self.embeddings.aembed_query(text)
        return self._check(np.asarray(raw, dtype=np.float32)[None, :], 1)[0]


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
        if isinstance(self.model, BaseChatModel):
            try:
                runnable = self.model.with_structured_output(response_model)
            except NotImplementedError:
                runnable = None
            if runnable is not None:
                try:
                    out = await runnable.ainvoke(msgs)
                    return (
                        out
                        if isinstance(out, response_model)
                        else response_model.model_validate(out)
                    )
                except (ValueError, ValidationError, NotImplementedError, TypeError):
                    pass

        async def send(batch: list[dict[str, str]]) -> str:
            reply = await self.model.ainvoke(batch)
            content = getattr(reply, "content", reply)
            return content if isinstance(content, str) else str(content)

        try:
            return await complete_validated(send, msgs, response_model)
        except LLMError:
            raise
        except Exception as exc:  # transport or provider failure, kept and typed
            raise LLMError(f"{self.name} failed: {exc}") from exc


def to_structured_llm(llm: Any | None) -> StructuredLLM | None:
    """``None`` stays ``None`` (offline builder); a core StructuredLLM passes; a LangChain model is wrapped."""
    if llm is None:
        return None
    if (
        not isinstance(llm, BaseLanguageModel)
        and hasattr(llm, "acomplete")
        and hasattr(llm, "name")
    ):
        return llm
    return LangChainStructuredLLM(llm)
