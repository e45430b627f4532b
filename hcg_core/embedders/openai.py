"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint through the ``openai`` SDK.

Works with OpenAI itself and with compatible servers (Ollama, vLLM, LM Studio, llama.cpp) via
``base_url``. The SDK is an optional extra and is imported on first use.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from ..errors import ConfigError, EmbedderError
from ..safe_text import env_secrets, redact, sends_to_openai
from ._common import check_count
from .wrapped import CallableEmbedder

DEFAULT_OPENAI_BATCH_SIZE = 256
DEFAULT_OPENAI_TIMEOUT = 60.0
DEFAULT_OPENAI_MAX_RETRIES = 3
OPENAI_INSTALL_HINT = 'pip install "hcg-rag[openai]"'
# Local servers (Ollama, vLLM, ...) ignore the key, but the SDK refuses to start without one.
_PLACEHOLDER_KEY = "not-needed"


class OpenAIEmbedder(CallableEmbedder):
    """Embeddings from ``client.embeddings.create``, ``batch_size`` texts per request, order kept.

    Args:
        model: the server's model name, e.g. ``"text-embedding-3-small"`` or ``"nomic-embed-text"``.
        base_url: e.g. ``"http://localhost:11434/v1"`` for Ollama; default OpenAI (or
            ``OPENAI_BASE_URL``).
        api_key: default ``OPENAI_API_KEY``; not needed when ``base_url`` points at a local server.
        dim: the expected dimension; replies of another size raise EmbedderError. If not given, it
            is taken from the first reply; reading ``.dim`` before any embed call makes one small
            request to find it.
        batch_size: texts per request.
        timeout: seconds per request.
        max_retries: the SDK's retries (with backoff) on connection errors, 429 and 5xx.
        request_dimensions: send ``dimensions=dim`` so the server shortens its vectors (OpenAI's
            text-embedding-3 models support it; many other servers reject it).

    Empty strings are sent as a single space: the OpenAI API rejects empty inputs.

    Example (Ollama)::

        emb = OpenAIEmbedder("nomic-embed-text", base_url="http://localhost:11434/v1")
        vectors = emb.embed_documents(["tumour growth", "cancer progression"])

    The reply checks (count, size, finite values, L2) and ``dim`` are ``CallableEmbedder``'s.
    """

    _RUNTIME = {"_client": None}  # a copy or pickle makes its own client

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = DEFAULT_OPENAI_BATCH_SIZE,
        timeout: float = DEFAULT_OPENAI_TIMEOUT,
        max_retries: int = DEFAULT_OPENAI_MAX_RETRIES,
        request_dimensions: bool = False,
    ):
        if not isinstance(model, str) or not model:
            raise ConfigError(f"model must be a non-empty str, got {model!r}")
        check_count(dim, "dim", none_ok=True)
        check_count(batch_size, "batch_size")
        if request_dimensions and dim is None:
            raise ConfigError("request_dimensions=True needs dim= (the size to ask the server for)")
        if importlib.util.find_spec("openai") is None:
            raise EmbedderError(f"OpenAIEmbedder needs the openai SDK; run: {OPENAI_INSTALL_HINT}")
        super().__init__(self._embed_batches, f"openai:{model}", dim)
        self.model = model
        self.base_url = base_url
        self.batch_size = batch_size
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.request_dimensions = request_dimensions
        self._api_key = api_key

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={redact(repr(self.base_url))})"

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is not None:
                return self._client
            try:
                import openai
            except ImportError as exc:
                raise EmbedderError(
                    f"OpenAIEmbedder needs the openai SDK ({exc}); run: {OPENAI_INSTALL_HINT}"
                ) from exc
            key = self._api_key or os.environ.get("OPENAI_API_KEY")
            if not key and sends_to_openai(self.base_url):
                raise EmbedderError(
                    "no API key for OpenAI: set OPENAI_API_KEY or pass api_key=, or pass "
                    "base_url= for a local OpenAI-compatible server"
                )
            self._client = openai.OpenAI(
                api_key=key or _PLACEHOLDER_KEY,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
            return self._client

    def _embed_batches(self, texts: list[str]) -> list[Any]:
        """The vectors of ``texts``, ``batch_size`` per request, in order; empty strings are sent
        as a single space (the OpenAI API rejects empty inputs)."""
        items = [t if t else " " for t in texts]
        step = self.batch_size
        return [v for i in range(0, len(items), step) for v in self._request(items[i : i + step])]

    def _request(self, batch: list[str]) -> list[Any]:
        client = self._get_client()
        kwargs: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.request_dimensions:
            kwargs["dimensions"] = self._dim
        try:
            reply = client.embeddings.create(**kwargs)
        except Exception as exc:  # the SDK's errors carry status and body; keep them in the message
            where = self.base_url or "the OpenAI API"
            # Masked: a provider may echo the Authorization header, a URL may hold user:password.
            raise EmbedderError(
                redact(
                    f"embedding request to {where} for model {self.model!r} failed after "
                    f"{self.max_retries} retries: {type(exc).__name__}: {exc}",
                    (self._api_key, *env_secrets()),
                )
            ) from exc
        data = sorted(reply.data, key=lambda d: d.index)  # the API does not promise order
        if [d.index for d in data] != list(range(len(batch))):
            raise EmbedderError(
                f"{self.name} replied with indices {[d.index for d in data]} for {len(batch)} inputs"
            )
        return [d.embedding for d in data]
