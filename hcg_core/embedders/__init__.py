"""Embedders: the offline default (MiniLM int8 ONNX), multilingual e5, hashing, OpenAI-compatible, wrappers.

Each satisfies :class:`hcg_core.ports.Embedder`; see docs/embedders.md for which to use when.
"""

from .e5 import MultilingualE5Embedder
from .factory import default_embedder, embedder_by_name, embedder_from_name
from .hashing import HashingEmbedder
from .minilm import MiniLMEmbedder
from .openai import OpenAIEmbedder
from .wrapped import CallableEmbedder

__all__ = [
    "CallableEmbedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "MultilingualE5Embedder",
    "OpenAIEmbedder",
    "default_embedder",
    "embedder_by_name",
    "embedder_from_name",
]
