"""What marks a folder as an hcg graph directory: its ``manifest.json`` (docs/format.md).

Kept apart from ``store`` (which reads and writes the graph) so that reading corpus input, which
must skip graph directories (``corpus.load_inputs``), needs nothing above this module.
"""

from __future__ import annotations

import os
from pathlib import Path

from .bounded import read_json
from .errors import StoreError

FORMAT_NAME = "hcg-graph"
MANIFEST = "manifest.json"
LLM_CACHE = ".llm_cache"  # a graph directory's own LLM reply cache, which its saves keep
# The manifest is small: a larger file is damaged or not hcg's, refused before it is read.
MANIFEST_CAP = 1024 * 1024


def is_graph_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder with an hcg ``manifest.json`` (format ``hcg-graph``)."""
    manifest = Path(path) / MANIFEST
    if not manifest.is_file() or manifest.is_symlink():
        return False
    try:
        data = read_json(manifest, cap=MANIFEST_CAP)
    except StoreError:
        return False
    return (
        isinstance(data, dict)
        and "format_version" in data
        and data.get("format", FORMAT_NAME) == FORMAT_NAME
    )
