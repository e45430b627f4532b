"""The review subcommands of ``hcg``: ``view``, ``apply``, ``diff`` and ``export`` (thin wrappers).

hcg view DIR [--out FILE.html]
hcg apply DIR corrections.yaml --out NEW_DIR [--strict] [--json]
hcg diff DIR_A DIR_B [--json]
hcg export DIR --format graphml|gexf|mermaid|cypher|csv [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys

from ..arg_types import non_negative_int, number_type
from ..safe_text import visible
from ..store import load_graph
from .review import DEFAULT_LOW_CONFIDENCE
from .view import DEFAULT_FULL_VIEW_LIMIT, DEFAULT_NEIGHBOURHOOD_LIMIT

EXIT_DIFFERENT = 1  # `hcg diff` exits 1 when the graphs differ, like diff(1)
EXIT_REFUSED = 1  # `hcg apply --strict` exits 1 when a correction was refused (nothing written)


def cmd_view(args: argparse.Namespace) -> int:
    from .view import write_view

    out = write_view(
        args.dir,
        args.out,
        low_confidence=args.low_confidence,
        full_view_limit=args.full_view_limit,
        neighbourhood_limit=args.neighbourhood_limit,
    )
    print(f"wrote {out} (open it in a browser; it loads nothing from the network)")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    from .corrections import apply_to_directory

    report = apply_to_directory(
        args.dir, args.corrections, args.out, strict=args.strict, lock_timeout=args.lock_timeout
    )
    if args.json:
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(visible(report.format()))  # names from the graph and the file: no raw controls
    if args.strict and report.refused:
        print(
            f"hcg apply: {len(report.refused)} refused, nothing written (--strict)", file=sys.stderr
        )
        return EXIT_REFUSED
    if not args.json:
        print(f"wrote {args.out}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from .diff import diff_graphs, format_diff, is_empty

    d = diff_graphs(load_graph(args.dir_a).graph, load_graph(args.dir_b).graph)
    print(json.dumps(d, indent=1) if args.json else visible(format_diff(d, limit=args.limit)))
    return 0 if is_empty(d) else EXIT_DIFFERENT


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_graph

    result = export_graph(
        load_graph(args.dir).graph,
        args.format,
        args.out,
        metric=args.metric,
        max_edges=args.max_edges,
    )
    if args.out is None:
        sys.stdout.write(str(result))
    else:
        print(f"wrote {result}", file=sys.stderr)
    return 0


# An argparse type: a confidence threshold in [0, 1] (NaN compares false with everything, so a
# NaN threshold would silently flag nothing: refused, as the comparison is false for it too).
_confidence = number_type(lambda x: 0.0 <= x <= 1.0, "a number in [0, 1]")


_FULL_VIEW_HELP = (
    "open on the whole variable graph up to this many variables, else on the metric overview"
)
_LIMIT_HELP = "variables drawn at most in one neighbourhood"
# hcg view's numeric options: flag, type, default and help (to which the default is added).
_VIEW_OPTIONS = (
    ("--low-confidence", _confidence, DEFAULT_LOW_CONFIDENCE, "flag edges below this confidence"),
    ("--full-view-limit", non_negative_int, DEFAULT_FULL_VIEW_LIMIT, _FULL_VIEW_HELP),
    ("--neighbourhood-limit", non_negative_int, DEFAULT_NEIGHBOURHOOD_LIMIT, _LIMIT_HELP),
)


def add_review_commands(sub: argparse._SubParsersAction) -> None:
    """Add the view, apply, diff and export subparsers to ``hcg``'s parser."""
    from ..graph_lock import add_lock_timeout_argument
    from .export import DEFAULT_MERMAID_MAX_EDGES, FORMATS

    v = sub.add_parser("view", help="write a self-contained HTML page to review the graph")
    v.add_argument("dir")
    v.add_argument("--out", default="audit.html", help="the HTML file (default %(default)s)")
    for flag, kind, default, what in _VIEW_OPTIONS:
        v.add_argument(flag, type=kind, default=default, help=f"{what} (default %(default)s)")
    v.set_defaults(func=cmd_view)

    a = sub.add_parser("apply", help="apply a corrections.yaml and write a corrected graph")
    a.add_argument("dir")
    a.add_argument("corrections", help="corrections.yaml (downloaded from the hcg view page)")
    a.add_argument("--out", required=True, help="the corrected graph directory to write")
    a.add_argument(
        "--strict", action="store_true", help="write nothing if any correction is refused"
    )
    a.add_argument("--json", action="store_true")
    add_lock_timeout_argument(a)
    a.set_defaults(func=cmd_apply)

    d = sub.add_parser("diff", help="what changed between two graph directories (exit 1 if any)")
    d.add_argument("dir_a")
    d.add_argument("dir_b")
    d.add_argument("--json", action="store_true")
    d.add_argument(
        "--limit", type=non_negative_int, default=50, help="items listed per kind of change"
    )
    d.set_defaults(func=cmd_diff)

    x = sub.add_parser("export", help="GraphML, GEXF, Mermaid, Cypher or CSV (for LOAD CSV)")
    x.add_argument("dir")
    x.add_argument("--format", required=True, choices=FORMATS)
    x.add_argument("--out", help="file to write (a folder for csv); default stdout")
    x.add_argument("--metric", help="mermaid: only the edges touching this metric's variables")
    x.add_argument(
        "--max-edges",
        type=non_negative_int,
        default=DEFAULT_MERMAID_MAX_EDGES,
        help="mermaid: refuse above this many edges (default %(default)s)",
    )
    x.set_defaults(func=cmd_export)
