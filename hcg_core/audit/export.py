"""``hcg export``: a causal graph in the formats graph tools and databases read.

- GraphML and GEXF (Gephi, yEd, Cytoscape) through ``CausalGraph.to_networkx()``; list attributes
  (entities, evidence) are joined by ``join_list`` because both formats hold scalars only.
- Mermaid (``flowchart LR``, one subgraph per metric) for docs; refused above ``max_edges``.
- Cypher for Neo4j: idempotent (``MERGE`` on unique keys, then ``SET``), variables labelled
  ``Variable`` and by their metric, ``CAUSES`` relationships with their properties, chunks as
  ``Chunk`` nodes linked to the edge's source variable by ``EVIDENCE {edge_id}``.
- CSV files plus a ``load.cypher`` of ``LOAD CSV`` statements that build the same graph.

Every format keeps each edge's sign (``effect``: "increases", "decreases" or "") and confidence.
Each format has one function that makes any text safe for it, applied to every id and text it
writes: ``xml_text`` (GraphML, GEXF), ``mermaid_text``, ``cypher_string`` and ``_csv_cell``; lists
go through ``join_list`` (an item holding the separator stays one item).
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..output_paths import check_output_path, write_output_file
from ..safe_text import mermaid_text as _mermaid_text
from ..safe_text import visible, xml_text
from ..types import EFFECT_SIGNS, CausalGraph

LIST_SEPARATOR = "|"  # joins list attributes in GraphML, GEXF and CSV (chunk ids, entities)
# Inside one item of a joined list, the separator and the escape character are percent-encoded,
# so an entity holding "|" stays one entity: split on "|", then decode each item (``split_list``;
# load.cypher does the same with replace()).
_LIST_ESCAPES = (("%", "%25"), (LIST_SEPARATOR, "%7C"))
DEFAULT_MERMAID_MAX_EDGES = 150  # above this a Mermaid diagram is unreadable and slow to render
FORMATS = ("graphml", "gexf", "mermaid", "cypher", "csv")


# ---------------------------------------------------------------- lists in one cell


def join_list(items: Iterable[str]) -> str:
    """Items joined by ``LIST_SEPARATOR``, each with ``%`` and ``|`` percent-encoded.

    >>> join_list(["a", "b|c", "100%"])
    'a|b%7Cc|100%25'
    """
    return LIST_SEPARATOR.join(_replaced(item, _LIST_ESCAPES) for item in items)


def split_list(cell: str) -> list[str]:
    """The inverse of ``join_list`` (``""`` is the empty list).

    >>> split_list(join_list(["a", "b|c", "100%"]))
    ['a', 'b|c', '100%']
    """
    if cell == "":
        return []
    # "%7C" first: "%257C" is an encoded "%7C".
    unescapes = [(code, raw) for raw, code in reversed(_LIST_ESCAPES)]
    return [_replaced(item, unescapes) for item in cell.split(LIST_SEPARATOR)]


def _replaced(text: str, replacements: Iterable[tuple[str, str]]) -> str:
    for old, new in replacements:
        text = text.replace(old, new)
    return text


# ---------------------------------------------------------------- networkx formats


def _xml_names(names: Iterable[str], what: str) -> dict[str, str]:
    """``name -> xml_text(name)``, refused when two names become one (they would merge)."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        safe = xml_text(name)
        if seen.setdefault(safe, name) != name:
            raise InputError(
                f"two {what}s, {visible(seen[safe])!r} and {visible(name)!r}, differ only in "
                "characters XML cannot hold and would become one in GraphML/GEXF; rename one"
            )
        out[name] = safe
    return out


def _xml_value(value: Any) -> Any:
    """An attribute value for GraphML/GEXF: lists joined, every string made XML-safe."""
    if isinstance(value, (tuple, list)):
        value = join_list(value)
    return xml_text(value) if isinstance(value, str) else value


def scalar_networkx(graph: CausalGraph) -> Any:
    """``graph.to_networkx()`` rebuilt as GraphML and GEXF need it: list attributes joined
    (``join_list``) and every string, node names and edge ids (keys) included, made XML-safe
    (``xml_text``). Edges carry ``effect`` (their sign) and ``confidence``."""
    import networkx as nx

    source = graph.to_networkx()
    nodes = _xml_names(source.nodes, "variable name")
    _xml_names((e.id for e in graph.edges), "edge id")
    g = nx.MultiDiGraph(**{k: _xml_value(v) for k, v in source.graph.items()})
    for name, data in source.nodes(data=True):
        g.add_node(nodes[name], **{k: _xml_value(v) for k, v in data.items()})
    for u, v, key, data in source.edges(keys=True, data=True):
        g.add_edge(
            nodes[u], nodes[v], key=xml_text(key), **{k: _xml_value(x) for k, x in data.items()}
        )
    return g


def _xml_document(writer: Any, add: str, graph: CausalGraph) -> str:
    """The document a networkx writer makes of ``graph`` (given to its method ``add``). Not
    ``generate_graphml``/``generate_gexf``: they cut the text with ``splitlines``, which also
    cuts at a CR inside a text (it came back as LF). The
    serializer escapes CR in attributes but not in element text, where every XML parser would
    read it as LF: markup never holds a CR, so each one left is text, written as ``&#13;``."""
    getattr(writer, add)(scalar_networkx(graph))
    return str(writer).rstrip("\n").replace("\r", "&#13;") + "\n"


def to_graphml(graph: CausalGraph) -> str:
    from networkx.readwrite.graphml import GraphMLWriter

    return _xml_document(GraphMLWriter(), "add_graph_element", graph)


def to_gexf(graph: CausalGraph) -> str:
    from networkx.readwrite.gexf import GEXFWriter

    return _xml_document(GEXFWriter(), "add_graph", graph)


# ---------------------------------------------------------------- Mermaid


def mermaid_edge_label(effect: str, confidence: float) -> str:
    """An edge's sign and confidence as its Mermaid label, ``(+)`` increases, ``(-)``
    decreases, ``(?)`` unknown (the signs ``CausalPath`` prints).

    >>> mermaid_edge_label("decreases", 0.5)
    '(-) 0.50'
    """
    return f"({EFFECT_SIGNS.get(effect, '?')}) {float(confidence):.2f}"


def to_mermaid(
    graph: CausalGraph, *, metric: str | None = None, max_edges: int = DEFAULT_MERMAID_MAX_EDGES
) -> str:
    """A ``flowchart LR`` of the graph (or of the edges touching ``metric``'s variables).

    Raises ConfigError above ``max_edges``: pick a metric or raise the limit.
    """
    metric_of = {v.name: v.metric for v in graph.variables}
    if metric is not None and metric not in {m.name for m in graph.spec.metrics}:
        raise ConfigError(f"no metric {metric!r} in the spec")
    # No metric: every edge and variable; else those touching the metric's variables.
    edges = [e for e in graph.edges if metric in (None, metric_of[e.source], metric_of[e.target])]
    if len(edges) > max_edges:
        raise ConfigError(
            f"{len(edges)} edges is over the Mermaid limit of {max_edges}; export one metric's "
            "neighbourhood (--metric NAME), raise --max-edges, or use graphml for a graph tool"
        )
    used = {name for e in edges for name in (e.source, e.target)}
    names = [v.name for v in graph.variables if metric in (None, v.metric) or v.name in used]
    ids = {n: f"v{i}" for i, n in enumerate(names)}
    lines = ["flowchart LR"]
    by_metric: dict[str, list[str]] = {}
    for n in names:
        by_metric.setdefault(metric_of[n], []).append(n)
    for i, (m, members) in enumerate(by_metric.items()):
        if members == [m]:  # a metric with no dimensions: its one variable needs no box
            lines.append(f'  {ids[m]}["{_mermaid_text(m)}"]')
            continue
        lines.append(f'  subgraph m{i}["{_mermaid_text(m)}"]')
        lines.extend(f'    {ids[n]}["{_mermaid_text(n)}"]' for n in members)
        lines.append("  end")
    for e in edges:
        lines.append(
            f'  {ids[e.source]} -->|"{mermaid_edge_label(e.effect, e.confidence)}"| {ids[e.target]}'
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Cypher


# What a Cypher string literal writes as a \uXXXX escape: control characters, lone surrogates
# (no UTF-8 file can hold them) and U+FFFE/U+FFFF; tab, LF and CR have short escapes of their own.
_CYPHER_SHORT = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CYPHER_ESCAPED = re.compile("[\\\\'\x00-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def cypher_string(text: str) -> str:
    """A Cypher string literal that Neo4j reads back as ``text``, whatever it holds.

    >>> print(cypher_string("it's a \\\\ test\\x01"))
    'it\\'s a \\\\ test\\u0001'
    """
    out = _CYPHER_ESCAPED.sub(
        lambda m: _CYPHER_SHORT.get(m.group()) or f"\\u{ord(m.group()):04x}", str(text)
    )
    return f"'{out}'"


def cypher_label(name: str) -> str:
    """A label in backticks (a metric name may be any text; a backtick is doubled). Backticks
    have no escapes: control characters and the like are written as visible ``\\xNN`` text (the
    node's ``metric`` property keeps the name as it is)."""
    return "`" + visible(name).replace("`", "``") + "`"


# The one walk over a graph both Neo4j formats write: per table its columns and rows (lists kept
# as tuples, confidence as a float); ``to_cypher`` writes each row as a statement, ``to_csv_files``
# as a CSV line. Only chunks some edge cites are written.
_COLUMNS = {
    "variables": ("name", "metric", "entities", "description", "category", "role"),
    "edges": ("id", "source", "target", "mechanism", "confidence", "effect", "evidence"),
    "chunks": ("id", "doc_id", "text"),
    "evidence": ("edge_id", "chunk_id", "source", "target"),
}


def _tables(graph: CausalGraph) -> dict[str, list[tuple]]:
    """Table name -> its rows, in the order of ``_COLUMNS``."""
    roles = {m.name: (m.category, m.role) for m in graph.spec.metrics}
    cited = {cid for e in graph.edges for cid in e.evidence}
    return {
        "variables": [
            (v.name, v.metric, v.entities, v.description, *roles.get(v.metric, ("", "")))
            for v in graph.variables
        ],
        "edges": [
            (e.id, e.source, e.target, e.mechanism, float(e.confidence), e.effect, e.evidence)
            for e in graph.edges
        ],
        "chunks": [(c.id, c.doc_id, c.text) for c in graph.chunks if c.id in cited],
        "evidence": [(e.id, cid, e.source, e.target) for e in graph.edges for cid in e.evidence],
    }


def _cypher_value(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(cypher_string(x) for x in value) + "]"
    return repr(value) if isinstance(value, float) else cypher_string(value)


def _cypher_sets(var: str, columns: tuple[str, ...], row: tuple) -> str:
    """``v.metric = 'x', v.entities = [...]``: each column set to its value of ``row``."""
    return ", ".join(f"{var}.{k} = {_cypher_value(x)}" for k, x in zip(columns, row, strict=True))


def to_cypher(graph: CausalGraph) -> str:
    """A Cypher script that creates (or, run again, leaves unchanged) the graph in Neo4j."""
    tables = _tables(graph)
    lines = [
        "// HCG causal graph for Neo4j. Idempotent: every node and relationship is MERGEd on a key.",
        "CREATE CONSTRAINT hcg_variable_name IF NOT EXISTS FOR (v:Variable) REQUIRE v.name IS UNIQUE;",
        "CREATE CONSTRAINT hcg_chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE;",
    ]
    for name, metric, *rest in tables["variables"]:
        sets = _cypher_sets("v", _COLUMNS["variables"][1:], (metric, *rest))
        lines.append(
            f"MERGE (v:Variable {{name: {cypher_string(name)}}}) SET v:{cypher_label(metric)}, "
            f"{sets};"
        )
    for cid, doc_id, text in tables["chunks"]:
        sets = _cypher_sets("c", ("text", "doc_id"), (text, doc_id))
        lines.append(f"MERGE (c:Chunk {{id: {cypher_string(cid)}}}) SET {sets};")
    for eid, source, target, *rest in tables["edges"]:
        a, b, key = cypher_string(source), cypher_string(target), cypher_string(eid)
        sets = _cypher_sets("r", _COLUMNS["edges"][3:], rest)
        lines.append(
            f"MATCH (a:Variable {{name: {a}}}), (b:Variable {{name: {b}}}) "
            f"MERGE (a)-[r:CAUSES {{id: {key}}}]->(b) SET {sets};"
        )
        lines.extend(
            f"MATCH (c:Chunk {{id: {cypher_string(cid)}}}), (a:Variable {{name: {a}}}) "
            f"MERGE (c)-[:EVIDENCE {{edge_id: {key}}}]->(a);"
            for cid in rest[-1]  # the last column: the edge's evidence chunk ids
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- CSV for LOAD CSV

# A joined list back to a list: split on the separator, then undo join_list's two escapes.
_SPLIT = (
    "CASE row.{col} WHEN '' THEN [] ELSE [x IN split(row.{col}, '{sep}') | "
    "replace(replace(x, '%7C', '{sep}'), '%25', '%')] END"
)
_LOAD_CSV = """// Build the HCG graph from the CSV files beside this script (copy them to Neo4j's import folder).
// Idempotent: MERGE on keys. Lists are joined with '{sep}' ('%' and '{sep}' inside an item as %25, %7C).
CREATE CONSTRAINT hcg_variable_name IF NOT EXISTS FOR (v:Variable) REQUIRE v.name IS UNIQUE;
CREATE CONSTRAINT hcg_chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE;
LOAD CSV WITH HEADERS FROM 'file:///variables.csv' AS row
MERGE (v:Variable {{name: row.name}})
SET v.metric = row.metric, v.entities = {entities},
    v.description = row.description, v.category = row.category, v.role = row.role;
// Metric labels: one statement per metric, since a label cannot come from a parameter.
{labels}
LOAD CSV WITH HEADERS FROM 'file:///chunks.csv' AS row
MERGE (c:Chunk {{id: row.id}}) SET c.text = row.text, c.doc_id = row.doc_id;
LOAD CSV WITH HEADERS FROM 'file:///edges.csv' AS row
MATCH (a:Variable {{name: row.source}}), (b:Variable {{name: row.target}})
MERGE (a)-[r:CAUSES {{id: row.id}}]->(b)
SET r.mechanism = row.mechanism, r.confidence = toFloat(row.confidence), r.effect = row.effect,
    r.evidence = {evidence};
LOAD CSV WITH HEADERS FROM 'file:///evidence.csv' AS row
MATCH (c:Chunk {{id: row.chunk_id}}), (a:Variable {{name: row.source}})
MERGE (c)-[:EVIDENCE {{edge_id: row.edge_id}}]->(a);
"""


class _LoadCsvDialect(csv.excel):
    """The one CSV configuration of every exported file: each field quoted, so a CR or LF inside
    a text stays inside its field for ``csv.reader`` and LOAD CSV alike (unquoted, a bare CR ends
    the row for both). Cells starting with ``=``, ``+``, ``-`` or ``@`` are written as they are:
    these files are data for LOAD CSV, not sheets to open in a spreadsheet (docs/audit.md)."""

    lineterminator = "\n"
    quoting = csv.QUOTE_ALL


def _csv_cell(value: Any) -> str:
    """A value as CSV text. A lone surrogate cannot be written as UTF-8 and is written as its
    visible ``\\udXXX`` escape; every other character is kept (quoting holds CR and LF)."""
    text = str(value)
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _csv_text(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, dialect=_LoadCsvDialect)
    w.writerow(header)
    w.writerows([_csv_cell(x) for x in row] for row in rows)
    return buf.getvalue()


def to_csv_files(graph: CausalGraph) -> dict[str, str]:
    """File name -> text: variables, edges, chunks and evidence CSVs and ``load.cypher``.

    List cells (entities, evidence) are ``join_list``-ed: read them with ``split_list``.
    """

    def cell(value: Any) -> Any:
        return join_list(value) if isinstance(value, tuple) else value

    files = {
        f"{name}.csv": _csv_text(list(_COLUMNS[name]), [[cell(x) for x in row] for row in rows])
        for name, rows in _tables(graph).items()
    }
    labels = "\n".join(
        f"MATCH (v:Variable {{metric: {cypher_string(m)}}}) SET v:{cypher_label(m)};"
        for m in dict.fromkeys(v.metric for v in graph.variables)
    )
    sep = LIST_SEPARATOR
    files["load.cypher"] = _LOAD_CSV.format(
        sep=sep,
        labels=labels,
        entities=_SPLIT.format(col="entities", sep=sep),
        evidence=_SPLIT.format(col="evidence", sep=sep),
    )
    return files


# ---------------------------------------------------------------- one entry point


def export_graph(
    graph: CausalGraph,
    fmt: str,
    out: str | os.PathLike | None = None,
    *,
    metric: str | None = None,
    max_edges: int = DEFAULT_MERMAID_MAX_EDGES,
) -> str | Path:
    """Export ``graph`` as ``fmt``; write to ``out`` (a folder for csv) or return the text."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "csv":
        if out is None:
            raise ConfigError("--format csv writes several files: pass --out FOLDER")
        folder = check_output_path(out, folder=True)
        files = to_csv_files(graph)
        for name in files:  # each file too: a link or a device among them is not replaced
            check_output_path(folder / name)
        for name, text in files.items():
            write_output_file(folder / name, text)
        return folder
    if fmt == "mermaid":
        text = to_mermaid(graph, metric=metric, max_edges=max_edges)
    else:
        text = {"graphml": to_graphml, "gexf": to_gexf, "cypher": to_cypher}[fmt](graph)
    if out is None:
        return text
    return write_output_file(check_output_path(out), text)
