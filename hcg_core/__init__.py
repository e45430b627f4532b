"""hcg_core: build and query schema-constrained hierarchical causal graphs (HCG-RAG), framework-free.

The public surface is re-exported here; see docs/ for the pipeline and the graph directory format.
"""

from .config import HybridConfig, LLMBuildConfig, OfflineBuildConfig, RetrievalConfig
from .corpus import chunk_documents, load_inputs
from .embedders import default_embedder
from .errors import (
    BuildError,
    ConfigError,
    CorruptFileError,
    EmbedderError,
    FormatVersionError,
    HCGError,
    InputError,
    LLMError,
    LLMOutputError,
    LLMUnavailableError,
    MissingFileError,
    SpecError,
    StoreError,
)
from .graph_build import BuildResult, build_graph
from .ports import Embedder, StructuredLLM
from .retrieval import CausalGraphRetriever
from .store import StoredGraph, load_graph, read_spec_file, save_graph
from .types import (
    CausalEdge,
    CausalGraph,
    CausalPath,
    Chunk,
    Dimension,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Passage,
    Relation,
    RetrievalResult,
    RetrievedChunk,
    SourceDocument,
    Variable,
)

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "BuildResult",
    "CausalEdge",
    "CausalGraph",
    "CausalPath",
    "Chunk",
    "ConfigError",
    "CorruptFileError",
    "Dimension",
    "SourceDocument",
    "DomainSpec",
    "Embedder",
    "EmbedderError",
    "FormatVersionError",
    "HCGError",
    "CausalGraphRetriever",
    "HybridConfig",
    "InputError",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "Metric",
    "MissingFileError",
    "LLMBuildConfig",
    "OfflineBuildConfig",
    "OutcomeConfig",
    "Passage",
    "Relation",
    "RetrievalConfig",
    "RetrievalResult",
    "RetrievedChunk",
    "SpecError",
    "StoreError",
    "StoredGraph",
    "StructuredLLM",
    "Variable",
    "__version__",
    "build_graph",
    "chunk_documents",
    "default_embedder",
    "load_graph",
    "load_inputs",
    "read_spec_file",
    "save_graph",
]
