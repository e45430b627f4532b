"""LangChain adapter for HCG-RAG: ``HCGRetriever`` (a ``BaseRetriever``) and embeddings wrappers.

Install with ``pip install "hcg-rag[langchain]"``.
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'langchain_hcg needs LangChain; install it with: pip install "hcg-rag[langchain]"'
    ) from exc

from ._models import HCGDefaultEmbeddings, LangChainStructuredLLM, to_core_embedder
from .retrievers import DEFAULT_K, HCGRetriever

__all__ = [
    "DEFAULT_K",
    "HCGDefaultEmbeddings",
    "HCGRetriever",
    "LangChainStructuredLLM",
    "to_core_embedder",
]
