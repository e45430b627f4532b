"""LlamaIndex adapter for HCG-RAG: ``HCGIndex`` (a ``BaseIndex``) and ``HCGRetriever``.

Install with ``pip install "hcg-rag[llamaindex]"``. Importing this package registers the index
struct type, so ``load_index_from_storage`` can rebuild a persisted ``HCGIndex`` (without the
import it fails with ``KeyError: 'hcg_causal_graph (import llama_index_hcg before
load_index_from_storage)'``), and has
``SimpleIndexStore`` remember the folder it read an HCG struct from (where the index's ``.npy``
vector files are; see ``_persist``).
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'llama_index_hcg needs LlamaIndex; install it with: pip install "hcg-rag[llamaindex]"'
    ) from exc

from llama_index.core.data_structs.registry import INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS
from llama_index.core.indices.registry import INDEX_STRUCT_TYPE_TO_INDEX_CLASS

from ._models import HCGDefaultEmbedding, LlamaIndexStructuredLLM, to_core_embedder
from ._persist import STRUCT_TYPE, install_folder_memory
from .index import HCGIndex, HCGIndexStruct
from .retriever import DEFAULT_SIMILARITY_TOP_K, HCGRetriever

# load_index_from_storage looks both tables up by the persisted type string.
INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS[STRUCT_TYPE] = HCGIndexStruct  # type: ignore[index]
INDEX_STRUCT_TYPE_TO_INDEX_CLASS[STRUCT_TYPE] = HCGIndex  # type: ignore[index]
install_folder_memory()

__all__ = [
    "DEFAULT_SIMILARITY_TOP_K",
    "HCGDefaultEmbedding",
    "HCGIndex",
    "HCGIndexStruct",
    "HCGRetriever",
    "LlamaIndexStructuredLLM",
    "to_core_embedder",
]
