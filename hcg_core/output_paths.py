"""Checks of the outputs the commands write besides a graph: an export, a review page, a report.

Each refuses (``StoreError``, one line), before any work, a path whose write would replace a
graph directory's own files, a folder, a link or a special file. The graph directory itself is
checked by ``store.check_output_dir``, which ``save_graph`` applies too.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import StoreError
from .graph_dir import LLM_CACHE, is_graph_dir
from .safe_files import atomic_write_text, os_reason


def check_report_path(path: str | os.PathLike) -> Path:
    """Refuse to write a report file over a folder or into a graph directory (its own files).

    ``hcg eval --out DIR/manifest.json`` would otherwise replace the graph's manifest.
    """
    if not str(path).strip():
        raise StoreError("the report path is empty; name a file, e.g. --out eval.json")
    p = Path(path)
    if p.is_dir():
        raise StoreError("is a folder; name a file for the report", path=p)
    parent = p.resolve().parent
    for folder in (parent, *parent.parents):
        if is_graph_dir(folder):
            raise StoreError(
                f"lies inside the graph directory {folder}; write the report outside it",
                path=p,
            )
    return p


def check_output_path(path: str | os.PathLike, *, folder: bool = False) -> Path:
    """Refuse an output (``view --out``, ``export --out``) that is not a plain new or regular file.

    Refused (``StoreError``, one line each): an empty path; a symbolic link, a device, FIFO or
    socket; an existing folder (for ``folder``: an existing file); a path under a file; a path
    inside any graph directory (a folder with an hcg ``manifest.json`` among its ancestors, or the
    folder itself for ``folder``), whose own files it could replace. Returns the path.
    """
    if not str(path).strip():
        raise StoreError("the output path is empty; name a file, e.g. --out graph.graphml")
    p = Path(path)
    what = "folder" if folder else "file"
    if p.is_symlink():
        raise StoreError(
            f"is a symbolic link; name a regular {what} (writing would replace the link)", path=p
        )
    if p.exists():
        if folder and not p.is_dir():
            raise StoreError("exists and is not a folder; name a folder for the files", path=p)
        if not folder and p.is_dir():
            raise StoreError("is a folder; name a file to write", path=p)
        if not folder and not p.is_file():
            raise StoreError(
                "is not a regular file (a device, FIFO or socket); name a regular file", path=p
            )
    for above in p.absolute().parents:
        if above.exists() or above.is_symlink():
            if not above.is_dir():
                raise StoreError(f"lies under {above}, which is a file, not a folder", path=p)
            break
    real = p.resolve()
    for candidate in (real, *real.parents) if folder else real.parents:
        if is_graph_dir(candidate):
            raise StoreError(
                f"lies inside the graph directory {candidate}; write the output outside it",
                path=p,
            )
    return p


def check_cache_dir(cache: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Refuse an LLM reply cache (``--llm-cache``) in a graph directory but outside its
    ``.llm_cache`` folder: a graph directory itself (the replies mixed with the graph's files)
    or its ``versions/`` (each save removes the old versions, the paid replies with them).
    ``out`` counts as a graph directory before it is written. The default, ``out/.llm_cache``,
    and another graph's ``.llm_cache`` (a rebuild elsewhere reusing its replies) pass.
    """
    p, own = Path(cache), Path(out).resolve()
    real = p.resolve()
    chain = (real, *real.parents)
    # The outermost: a version folder (``g/versions/1``) is a graph directory too, inside g.
    holder = next((d for d in reversed(chain) if is_graph_dir(d) or d == own), None)
    if holder is None or holder / LLM_CACHE in chain:
        return p
    raise StoreError(
        f"lies in the graph directory {holder}, outside its {LLM_CACHE} folder, where a save "
        "would remove the paid replies or mix them with the graph's files; leave --llm-cache "
        f"out (it is then <--out>/{LLM_CACHE}) or name a folder outside graph directories",
        path=p,
    )


def write_output_file(path: str | os.PathLike, text: str) -> Path:
    """Write an export or page to ``path`` atomically; the disk's failure is a ``StoreError``."""
    try:
        return atomic_write_text(path, text)
    except OSError as exc:
        raise StoreError(f"cannot write the output: {os_reason(exc)}", path=path) from None
