"""``hcg view``: one self-contained HTML page to see and review a graph directory.

The page is the template ``view.html`` with ``view.css`` and ``view.js`` inlined and the graph
embedded as JSON (``</`` escaped, so no text of the corpus can close the script element). It
loads nothing: a Content-Security-Policy forbids every network request, so it opens from disk,
and allows only the page's own inline script, by its sha256.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..graph_build.health import graph_health
from ..output_paths import check_output_path, write_output_file
from ..store import StoredGraph, load_graph
from ..types import CausalEdge, CausalGraph
from .review import DEFAULT_LOW_CONFIDENCE, metric_overview, review_flags, supporting_sentence

_HERE = Path(__file__).parent
# Up to this many variables the page opens on the whole variable graph; above it, on the
# metric overview, with neighbourhoods drawn on demand (docs/audit.md states the sizes tested).
DEFAULT_FULL_VIEW_LIMIT = 150
DEFAULT_NEIGHBOURHOOD_LIMIT = 250  # variables drawn at most in one neighbourhood
METRIC_FIELDS = ("name", "signature", "description", "category", "role")
VARIABLE_FIELDS = ("name", "metric", "entities", "description")


def view_data(
    graph: CausalGraph,
    *,
    title: str = "",
    low_confidence: float = DEFAULT_LOW_CONFIDENCE,
    full_view_limit: int = DEFAULT_FULL_VIEW_LIMIT,
    neighbourhood_limit: int = DEFAULT_NEIGHBOURHOOD_LIMIT,
) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-ready data (variables and edges by index).

    Only the chunks that some edge cites are embedded; each edge's ``support`` holds, per
    evidence chunk, the ``[start, end]`` of the sentence that best supports it (or None).
    """
    spec = graph.spec
    index = {v.name: i for i, v in enumerate(graph.variables)}
    chunks = {c.id: c for c in graph.chunks}
    cited = sorted({cid for e in graph.edges for cid in e.evidence})
    per_metric = Counter(v.metric for v in graph.variables)

    def support(e: CausalEdge, cid: str) -> list[int] | None:
        span = supporting_sentence(chunks[cid].text, e) if cid in chunks else None
        return list(span) if span else None

    edges = [
        {
            "id": e.id,
            "s": index[e.source],
            "t": index[e.target],
            **_record(e, "mechanism", "effect"),
            "confidence": round(float(e.confidence), 4),
            "evidence": list(e.evidence),
            "support": [support(e, cid) for cid in e.evidence],
        }
        for e in graph.edges
    ]
    return {
        "title": title,
        "domain": spec.domain,
        "health": graph_health(graph),
        "dimensions": [_record(d, "name", "description", "entities") for d in spec.dimensions],
        "metrics": [
            {**_record(m, *METRIC_FIELDS), "variables": per_metric.get(m.name, 0)}
            for m in spec.metrics
        ],
        "variables": [_record(v, *VARIABLE_FIELDS) for v in graph.variables],
        "edges": edges,
        "chunks": {cid: _record(chunks[cid], "text", "doc_id") for cid in cited if cid in chunks},
        "overview": metric_overview(graph),
        "flags": review_flags(graph, low_confidence=low_confidence),
        "settings": {
            "full_view_limit": full_view_limit,
            "neighbourhood_limit": neighbourhood_limit,
        },
    }


def _record(obj: Any, *names: str) -> dict[str, Any]:
    """The named attributes of ``obj`` as JSON-ready data (tuples as lists), in that order."""
    values = {f: getattr(obj, f) for f in names}
    return {f: list(x) if isinstance(x, tuple) else x for f, x in values.items()}


def embed_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>``, ``&`` and line separators escaped.

    >>> embed_json({"t": "</script>"})
    '{"t": "\\\\u003c/script\\\\u003e"}'
    """
    text = json.dumps(data, ensure_ascii=False)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, esc)
    # U+2028/2029 end a line in older JavaScript parsers.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_html(data: dict[str, Any]) -> str:
    """The page: template with the stylesheet, the script and the data inlined."""
    template = (_HERE / "view.html").read_text(encoding="utf-8")
    css = (_HERE / "view.css").read_text(encoding="utf-8")
    js = (_HERE / "view.js").read_text(encoding="utf-8")
    # The title is escaped for HTML and put in before anything else is inlined.
    title = html.escape(str(data.get("title") or "graph"), quote=False)
    template = template.replace("@TITLE@", title)
    # Placeholders are replaced in this order so inlined text is never scanned again.
    head, rest = template.split("/*@CSS@*/")
    mid, tail = rest.split("/*@DATA@*/")
    mid2, tail2 = tail.split("/*@JS@*/")
    script = js.replace("</", "<\\/")
    # The page's own script is allowed by its hash, not by 'unsafe-inline': a script that text
    # of the corpus managed to inject (were the escaping ever to fail) would not run.
    head = head.replace("@SCRIPT_SRC@", script_hash(script))
    return head + css + mid + embed_json(data) + mid2 + script + tail2


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script: ``'sha256-<base64 digest>'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def write_view(
    directory: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    stored: StoredGraph | None = None,
    **options: Any,
) -> Path:
    """Load the graph directory and write its audit page (default ``audit.html`` here)."""
    directory = Path(directory)
    out_path = check_output_path(out if out is not None else "audit.html")  # before the work
    stored = stored if stored is not None else load_graph(directory)
    data = view_data(stored.graph, title=directory.resolve().name, **options)
    write_output_file(out_path, render_html(data))
    return out_path
