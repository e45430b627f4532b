"""Review a built graph: the HTML audit page, corrections that round-trip, diffs and exports.

``hcg view`` writes the page, ``hcg apply`` applies the corrections.yaml it downloads, ``hcg diff``
compares two graph directories and ``hcg export`` writes GraphML, GEXF, Mermaid, Cypher or CSV.
"""

from .corrections import ApplyReport, apply_corrections, apply_to_directory, read_corrections
from .diff import diff_graphs, format_diff
from .export import FORMATS, export_graph
from .review import DEFAULT_LOW_CONFIDENCE, metric_overview, review_flags, supporting_sentence
from .view import render_html, view_data, write_view

__all__ = [
    "DEFAULT_LOW_CONFIDENCE",
    "FORMATS",
    "ApplyReport",
    "apply_corrections",
    "apply_to_directory",
    "diff_graphs",
    "export_graph",
    "format_diff",
    "metric_overview",
    "read_corrections",
    "render_html",
    "review_flags",
    "supporting_sentence",
    "view_data",
    "write_view",
]
