"""``hcg export``: a causal graph in the formats graph tools and databases read.

- GraphML and GEXF (Gephi, yEd, Cytoscape) through ``CausalGraph.to_networkx()``; list attributes
  (entities, evidence) are joined with ``LIST_SEPARATOR`` because both formats hold scalars only.
- Mermaid (``flowchart LR``, one subgraph per metric) for docs; refused above ``max_edges``.
- Cypher for Neo4j: idempotent (``MERGE`` on unique keys, then ``SET``), variables labelled
  ``Variable`` and by their metric, ``CAUSES`` relationships with their properties, chunks as
  ``Chunk`` nodes linked to the edge's source variable by ``EVIDENCE {edge_id}``.
- CSV files plus a ``load.cypher`` of ``LOAD CSV`` statements that build the same graph.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..safe_text import mermaid_text as _mermaid_text
from ..safe_text import xml_text
from ..store import check_output_path, write_output_file
from ..types import CausalGraph

LIST_SEPARATOR = "|"  # joins list attributes in GraphML, GEXF and CSV (chunk ids, entities)
DEFAULT_MERMAID_MAX_EDGES = 150  # above this a Mermaid diagram is unreadable and slow to render
FORMATS = ("graphml", "gexf", "mermaid", "cypher", "csv")


# ---------------------------------------------------------------- networkx formats


def scalar_networkx(graph: CausalGraph) -> Any:
    """``graph.to_networkx()`` with list attributes joined, as GraphML and GEXF require, and
    every string (node names included) stripped of what XML cannot hold (``xml_text``)."""
    import networkx as nx

    g = graph.to_networkx()
    for _, data in g.nodes(data=True):
        data["entities"] = LIST_SEPARATOR.join(data["entities"])
    for _, _, data in g.edges(data=True):
        data["evidence"] = LIST_SEPARATOR.join(data["evidence"])
    for _, data in [*g.nodes(data=True), *((None, d) for _, _, d in g.edges(data=True))]:
        for key, value in data.items():
            if isinstance(value, str):
                data[key] = xml_text(value)
    for key, value in g.graph.items():
        if isinstance(value, str):
            g.graph[key] = xml_text(value)
    names = {n: xml_text(n) for n in g.nodes if isinstance(n, str)}
    if any(k != v for k, v in names.items()):
        g = nx.relabel_nodes(g, names, copy=True)
    return g


def to_graphml(graph: CausalGraph) -> str:
    import networkx as nx

    return "\n".join(nx.generate_graphml(scalar_networkx(graph))) + "\n"


def to_gexf(graph: CausalGraph) -> str:
    import networkx as nx

    return "\n".join(nx.generate_gexf(scalar_networkx(graph))) + "\n"


# ---------------------------------------------------------------- Mermaid


def to_mermaid(
    graph: CausalGraph,
    *,
    metric: str | None = None,
    max_edges: int = DEFAULT_MERMAID_MAX_EDGES,
) -> str:
    """A ``flowchart LR`` of the graph (or of the edges touching ``metric``'s variables).

    Raises ConfigError above ``max_edges``: pick a metric or raise the limit.
    """
    metric_of = {v.name: v.metric for v in graph.variables}
    if metric is not None and metric not in {m.name for m in graph.spec.metrics}:
        raise ConfigError(f"no metric {metric!r} in the spec")
    edges = [
        e
        for e in graph.edges
        if metric is None or metric in (metric_of[e.source], metric_of[e.target])
    ]
    if len(edges) > max_edges:
        raise ConfigError(
            f"{len(edges)} edges is over the Mermaid limit of {max_edges}; export one metric's "
            "neighbourhood (--metric NAME), raise --max-edges, or use graphml for a graph tool"
        )
    names = [v.name for v in graph.variables]
    if metric is not None:
        used = {e.source for e in edges} | {e.target for e in edges}
        used |= {v.name for v in graph.variables if v.metric == metric}
        names = [n for n in names if n in used]
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
        lines.append(f'  {ids[e.source]} -->|"{e.confidence:.2f}"| {ids[e.target]}')
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Cypher


def cypher_string(text: str) -> str:
    """A Cypher string literal.

    >>> print(cypher_string("it's a \\\\ test"))
    'it\\'s a \\\\ test'
    """
    out = (
        str(text)
        .replace("\\", "\\\\")
        .replace("'", "\\'")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f"'{out}'"


def cypher_label(name: str) -> str:
    """A label in backticks (a metric name may be any text; a backtick is doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _cypher_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(cypher_string(x) for x in items) + "]"


def to_cypher(graph: CausalGraph) -> str:
    """A Cypher script that creates (or, run again, leaves unchanged) the graph in Neo4j."""
    metrics = {m.name: m for m in graph.spec.metrics}
    lines = [
        "// HCG causal graph for Neo4j. Idempotent: every node and relationship is MERGEd on a key.",
        "CREATE CONSTRAINT hcg_variable_name IF NOT EXISTS FOR (v:Variable) REQUIRE v.name IS UNIQUE;",
        "CREATE CONSTRAINT hcg_chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE;",
    ]
    for v in graph.variables:
        m = metrics.get(v.metric)
        lines.append(
            f"MERGE (v:Variable {{name: {cypher_string(v.name)}}}) SET v:{cypher_label(v.metric)}, "
            f"v.metric = {cypher_string(v.metric)}, v.entities = {_cypher_list(v.entities)}, "
            f"v.description = {cypher_string(v.description)}, "
            f"v.category = {cypher_string(m.category if m else '')}, "
            f"v.role = {cypher_string(m.role if m else '')};"
        )
    cited = {cid for e in graph.edges for cid in e.evidence}
    for c in graph.chunks:
        if c.id in cited:
            lines.append(
                f"MERGE (c:Chunk {{id: {cypher_string(c.id)}}}) SET c.text = {cypher_string(c.text)}, "
                f"c.doc_id = {cypher_string(c.doc_id)};"
            )
    for e in graph.edges:
        lines.append(
            f"MATCH (a:Variable {{name: {cypher_string(e.source)}}}), "
            f"(b:Variable {{name: {cypher_string(e.target)}}}) "
            f"MERGE (a)-[r:CAUSES {{id: {cypher_string(e.id)}}}]->(b) "
            f"SET r.mechanism = {cypher_string(e.mechanism)}, r.confidence = {float(e.confidence)!r}, "
            f"r.evidence = {_cypher_list(e.evidence)};"
        )
        for cid in e.evidence:
            lines.append(
                f"MATCH (c:Chunk {{id: {cypher_string(cid)}}}), "
                f"(a:Variable {{name: {cypher_string(e.source)}}}) "
                f"MERGE (c)-[:EVIDENCE {{edge_id: {cypher_string(e.id)}}}]->(a);"
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- CSV for LOAD CSV

_LOAD_CSV = """// Build the HCG graph from the CSV files beside this script (copy them to Neo4j's import folder).
// Idempotent: MERGE on keys. Lists are joined with '{sep}'.
CREATE CONSTRAINT hcg_variable_name IF NOT EXISTS FOR (v:Variable) REQUIRE v.name IS UNIQUE;
CREATE CONSTRAINT hcg_chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE;
LOAD CSV WITH HEADERS FROM 'file:///variables.csv' AS row
MERGE (v:Variable {{name: row.name}})
SET v.metric = row.metric, v.entities = CASE row.entities WHEN '' THEN [] ELSE split(row.entities, '{sep}') END,
    v.description = row.description, v.category = row.category, v.role = row.role;
// Metric labels: one statement per metric, since a label cannot come from a parameter.
{labels}
LOAD CSV WITH HEADERS FROM 'file:///chunks.csv' AS row
MERGE (c:Chunk {{id: row.id}}) SET c.text = row.text, c.doc_id = row.doc_id;
LOAD CSV WITH HEADERS FROM 'file:///edges.csv' AS row
MATCH (a:Variable {{name: row.source}}), (b:Variable {{name: row.target}})
MERGE (a)-[r:CAUSES {{id: row.id}}]->(b)
SET r.mechanism = row.mechanism, r.confidence = toFloat(row.confidence),
    r.evidence = CASE row.evidence WHEN '' THEN [] ELSE split(row.evidence, '{sep}') END;
LOAD CSV WITH HEADERS FROM 'file:///evidence.csv' AS row
MATCH (c:Chunk {{id: row.chunk_id}}), (a:Variable {{name: row.source}})
MERGE (c)-[:EVIDENCE {{edge_id: row.edge_id}}]->(a);
"""


def _csv_text(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def to_csv_files(graph: CausalGraph) -> dict[str, str]:
    """File name -> text: variables, edges, chunks and evidence CSVs and ``load.cypher``."""
    metrics = {m.name: m for m in graph.spec.metrics}
    cited = {cid for e in graph.edges for cid in e.evidence}
    sep = LIST_SEPARATOR
    files = {
        "variables.csv": _csv_text(
            ["name", "metric", "entities", "description", "category", "role"],
            [
                [
                    v.name,
                    v.metric,
                    sep.join(v.entities),
                    v.description,
                    metrics[v.metric].category if v.metric in metrics else "",
                    metrics[v.metric].role if v.metric in metrics else "",
                ]
                for v in graph.variables
            ],
        ),
        "edges.csv": _csv_text(
            ["id", "source", "target", "mechanism", "confidence", "evidence"],
            [
                [
                    e.id,
                    e.source,
                    e.target,
                    e.mechanism,
                    repr(float(e.confidence)),
                    sep.join(e.evidence),
                ]
                for e in graph.edges
            ],
        ),
        "chunks.csv": _csv_text(
            ["id", "doc_id", "text"],
            [[c.id, c.doc_id, c.text] for c in graph.chunks if c.id in cited],
        ),
        "evidence.csv": _csv_text(
            ["edge_id", "chunk_id", "source", "target"],
            [[e.id, cid, e.source, e.target] for e in graph.edges for cid in e.evidence],
        ),
    }
    labels = "\n".join(
        f"MATCH (v:Variable {{metric: {cypher_string(m)}}}) SET v:{cypher_label(m)};"
        for m in dict.fromkeys(v.metric for v in graph.variables)
    )
    files["load.cypher"] = _LOAD_CSV.format(sep=sep, labels=labels)
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
    if fmt == "graphml":
        text = to_graphml(graph)
    elif fmt == "gexf":
        text = to_gexf(graph)
    elif fmt == "mermaid":
        text = to_mermaid(graph, metric=metric, max_edges=max_edges)
    else:
        text = to_cypher(graph)
    if out is None:
        return text
    return write_output_file(check_output_path(out), text)


__all__ = [
    "DEFAULT_MERMAID_MAX_EDGES",
    "FORMATS",
    "LIST_SEPARATOR",
    "cypher_string",
    "export_graph",
    "scalar_networkx",
    "to_csv_files",
    "to_cypher",
    "to_gexf",
    "to_graphml",
    "to_mermaid",
]
