"""Model seams between LlamaIndex and hcg_core, both ways.

- :func:`to_core_embedder` wraps any LlamaIndex ``BaseEmbedding`` as a core ``Embedder``;
- :class:`HCGDefaultEmbedding` exposes a core embedder (by default the bundled offline MiniLM) as a
  ``BaseEmbedding``, so a ``VectorStoreIndex`` can run on the very same vectors as the HCG index;
- :class:`LlamaIndexStructuredLLM` wraps any LlamaIndex ``LLM`` as a core ``StructuredLLM``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import ChatPromptTemplate
from pydantic import BaseModel, PrivateAttr

from hcg_core import adapter_common
from hcg_core.embedders import default_embedder
from hcg_core.embedders.wrapped import FrameworkEmbedder, core_embedder
from hcg_core.errors import ConfigError
from hcg_core.llm.structured import as_structured_llm, framework_reply
from hcg_core.ports import Embedder, StructuredLLM

M = TypeVar("M", bound=BaseModel)


class HCGDefaultEmbedding(BaseEmbedding):
    """A core embedder as a LlamaIndex ``BaseEmbedding``; by default the offline MiniLM.

    Setup::

        from llama_index.core import Settings, VectorStoreIndex
        from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

        embed = HCGDefaultEmbedding()          # or HCGDefaultEmbedding(embedder=HashingEmbedder())
        hcg = HCGIndex.from_documents(docs, embed_model=embed)
        vec = VectorStoreIndex.from_documents(docs, embed_model=embed)   # same vectors
    """

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        embedder = core_embedder(embedder, default=default_embedder)
        kwargs.setdefault("model_name", embedder.name)
        super().__init__(**kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "HCGDefaultEmbedding"

    @property
    def core_embedder(self) -> Embedder:
        """The wrapped core embedder (used directly by HCGIndex: no round trip through lists)."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        # The core embedder's own async API where it has one, else a worker thread: an ONNX
        # model run in the event loop would block every other task.
        aembed = getattr(self._embedder, "aembed_query", None)
        if aembed is not None:
            return np.asarray(await aembed(query), dtype=np.float32).tolist()
        return await asyncio.to_thread(self._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed_documents([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed_documents(texts).tolist()


def to_core_embedder(embed_model: Any) -> Embedder:
    """Any LlamaIndex ``BaseEmbedding`` (or a core Embedder, returned as is) as a core Embedder.

    Queries go through ``get_query_embedding`` so models with query instructions stay correct.
    The name, stored with the vectors, is ``llamaindex:<class>:<model_name>``.
    """
    if isinstance(embed_model, HCGDefaultEmbedding):
        return embed_model.core_embedder
    return adapter_common.to_core_embedder(
        embed_model,
        BaseEmbedding,
        LlamaIndexEmbedder,
        "embed_model must be a LlamaIndex BaseEmbedding",
    )


class LlamaIndexEmbedder(FrameworkEmbedder):
    """A ``BaseEmbedding`` as a core Embedder, with its async query API kept (``aembed_query``),
    so ``aretrieve`` awaits the model instead of blocking the event loop."""

    def __init__(self, embed_model: BaseEmbedding) -> None:
        name = f"llamaindex:{embed_model.class_name()}:{embed_model.model_name}"
        super().__init__(
            embed_model,
            adapter_common.with_dimensions(name, embed_model),
            fn=embed_model.get_text_embedding_batch,
            query_fn=embed_model.get_query_embedding,
            aquery_fn=embed_model.aget_query_embedding,
        )


def query_embed_model(embed_model: Any | None, embedder: Embedder) -> BaseEmbedding:
    """The LlamaIndex model that embeds an index's queries (``VectorStoreIndex``'s
    ``_embed_model``), so callback handlers and instrumentation see EMBEDDING events: the
    ``BaseEmbedding`` behind ``embedder`` (given, or from ``Settings``), else ``embedder``
    wrapped as one."""
    if isinstance(embedder, LlamaIndexEmbedder):
        return embedder.model
    if isinstance(embed_model, HCGDefaultEmbedding) and embed_model.core_embedder is embedder:
        return embed_model
    return HCGDefaultEmbedding(embedder=embedder)


def resolve_embedder(embed_model: Any | None) -> Embedder:
    """The explicit model, else the one the user set on ``Settings``, else the offline default."""
    if embed_model is not None:
        return to_core_embedder(embed_model)
    from llama_index.core import Settings

    # Never read Settings.embed_model: its getter builds an OpenAI embedding (ImportError when that
    # integration is absent). The private field is None unless the user set one.
    user_model = getattr(Settings, "_embed_model", None)
    if user_model is not None:
        return to_core_embedder(user_model)
    return default_embedder()


class LlamaIndexStructuredLLM:
    """Any LlamaIndex ``LLM`` as a core ``StructuredLLM``.

    First ``astructured_predict`` (function calling where the model has it, else the framework's
    JSON text program); when that cannot produce a valid object, the core's re-ask loop over
    ``achat`` text, so re-ask behaviour matches the other providers.
    """

    def __init__(self, llm: LLM):
        if not isinstance(llm, LLM):
            raise ConfigError(f"llm must be a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm
        self.name = f"llamaindex:{type(llm).__name__}:{llm.metadata.model_name}"

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        # Contents go in as template *values*, never as template text: prompts carry JSON schemas
        # whose braces the template engine would otherwise read as variables.
        values = {f"m{i}": m["content"] for i, m in enumerate(messages)}
        prompt = ChatPromptTemplate(
            message_templates=[
                ChatMessage(role=m["role"], content=f"{{m{i}}}") for i, m in enumerate(messages)
            ]
        )

        async def send(msgs: list[dict[str, str]]) -> str:
            reply = await self.llm.achat(
                [ChatMessage(role=m["role"], content=m["content"]) for m in msgs]
            )
            return reply.message.content or ""

        return await framework_reply(
            lambda: self.llm.astructured_predict(response_model, prompt, **values),
            send,
            messages,
            response_model,
            name=self.name,
            soft_errors=(ValueError, NotImplementedError, TypeError, KeyError),
        )


def to_structured_llm(llm: Any | None) -> StructuredLLM | None:
    """``None`` stays ``None`` (offline builder); a core StructuredLLM passes; a LlamaIndex LLM is wrapped."""
    return as_structured_llm(llm, LLM, LlamaIndexStructuredLLM)
