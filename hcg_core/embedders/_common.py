"""What the embedders share: argument and input checks (one message for bad input), finding
bundled model files, and copies that load their model again."""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, EmbedderError


def check_count(
    value: Any, name: str, low: int = 1, high: int | None = None, *, none_ok: bool = False
) -> None:
    """``ConfigError`` unless ``value`` is an int (not a bool) from ``low`` to ``high`` (or None,
    when ``none_ok``)."""
    if none_ok and value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        either = "None or " if none_ok else ""
        raise ConfigError(f"{name} must be {either}an int {bound}, got {value!r}")


def check_texts(texts: Any, *, who: str) -> list[str]:
    """Return ``texts`` as a list of str, or raise EmbedderError naming the first bad item."""
    # A bare str is a Sequence[str] too; iterating it would embed its characters one by one.
    if isinstance(texts, (str, bytes)):
        raise EmbedderError(
            f"{who}.embed_documents expects a list of texts, got a single {type(texts).__name__}; "
            "wrap it in a list or call embed_query"
        )
    if not isinstance(texts, Sequence) and not hasattr(texts, "__iter__"):
        raise EmbedderError(
            f"{who}.embed_documents expects a list of str, got {type(texts).__name__}"
        )
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise EmbedderError(
                f"{who}.embed_documents expects str items; item {i} is {type(t).__name__}"
            )
    return out


def check_text(text: Any, *, who: str) -> str:
    """Return ``text`` if it is a str, else raise EmbedderError."""
    if not isinstance(text, str):
        raise EmbedderError(f"{who}.embed_query expects a str, got {type(text).__name__}")
    return text


def package_file(package: str, name: str, install_hint: str) -> Path:
    """The file ``name`` of an installed package, found without executing its ``__init__``."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            f"this embedder needs the package {package!r}, which is not installed; "
            f"run: {install_hint}"
        )
    for folder in map(Path, spec.submodule_search_locations):
        if (folder / name).is_file():
            return folder / name
    raise EmbedderError(f"{package} is installed without {name}; reinstall with: {install_hint}")


def check_model_file(path: Path, expected_sha256: str | None, advice: str) -> None:
    """Raise EmbedderError unless the model file hashes to ``expected_sha256`` (None: no check).

    A file swapped or damaged on disk would otherwise give wrong vectors without any error.
    """
    if expected_sha256 is None:
        return
    h = hashlib.sha256()
    with path.open("rb") as f:  # in 1 MiB blocks: model files are tens of MB
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != expected_sha256:
        raise EmbedderError(
            f"model file {path} has sha256 {h.hexdigest()}, expected {expected_sha256}; {advice}"
        )


class LazyModel:
    """An embedder whose copies and pickles carry the settings only: the attributes in
    ``_RUNTIME`` (model handles, which cannot be pickled) start again at their empty values and
    load on first use, and the copy gets a fresh lock (a lock cannot be copied)."""

    _RUNTIME: dict[str, Any] = {}

    def _reset_runtime(self) -> None:
        self._lock = threading.Lock()
        for attr, empty in self._RUNTIME.items():
            setattr(self, attr, empty)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock" and k not in self._RUNTIME}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_runtime()
