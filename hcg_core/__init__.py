"""hcg_core: build and query schema-constrained hierarchical causal graphs (HCG-RAG), framework-free.

The public surface is re-exported here; see docs/ for the pipeline and the graph directory format.
"""

from .config import RetrievalConfig
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
    MissingFileError,
    SpecError,
    StoreError,
)
from .ports import Embedder, StructuredLLM
from .types import (
    CausalEdge,
    CausalGraph,
    CausalPath,
    Chunk,
    Dimension,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Relation,
    RetrievalResult,
    RetrievedChunk,
    Variable,
)

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "CausalEdge",
    "CausalGraph",
    "CausalPath",
    "Chunk",
    "ConfigError",
    "CorruptFileError",
    "Dimension",
    "DomainSpec",
    "Embedder",
    "EmbedderError",
    "FormatVersionError",
    "HCGError",
    "InputError",
    "LLMError",
    "LLMOutputError",
    "Metric",
    "MissingFileError",
    "OutcomeConfig",
    "Relation",
    "RetrievalConfig",
    "RetrievalResult",
    "RetrievedChunk",
    "SpecError",
    "StoreError",
    "StructuredLLM",
    "Variable",
    "__version__",
]
