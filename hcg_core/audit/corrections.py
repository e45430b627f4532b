"""Review corrections (``corrections.yaml``, written by the audit page) applied to a graph.

Seven operations, applied in file order, each checked against the spec before it is kept::

    format: hcg-corrections
    version: 1
    corrections:
      - {op: reject_edge, edge: ID}                  # the edge is removed
      - {op: accept_edge, edge: ID}                  # kept, and recorded as a seed relation of the spec
      - {op: edit_edge, edge: ID, mechanism: TEXT, confidence: 0.7}   # either field, or both
      - {op: reject_variable_edges, variable: NAME}  # every edge into or out of it is removed
      - {op: delete_variable, variable: NAME}        # the variable and its edges are removed
      - {op: merge_variables, keep: NAME, drop: NAME}  # drop's edges move to keep
      - {op: rename_metric, metric: OLD, to: NEW}      # in the spec, variables and edges

An edge entry may also carry ``source`` and ``target`` (the page writes them) and ``sentence``
(the evidence sentence the page highlighted). When the id names an edge with other ends, the
correction was made on another graph and is refused. When the id is not in the graph (a rebuild
renamed a variable, so its edges' ids changed), the edge is found by what the correction is
about: the two variables, matched by metric and normalised entities or a fuzzy entity match,
then the evidence sentence (``matching``); variables named by ``variable``, ``keep`` and
``drop`` are matched the same way. A refused correction is reported with its reason and changes
nothing; the others still apply.

A graph's support ledger (what ``hcg add`` re-extracts edges with) follows the corrections: a
rejected edge is never made again from new text, an edit is kept over a recomputation, and
merges, renames and deletions re-key it.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptFileError, EmbedderError, HCGError, SpecError, StoreError
from ..spec import validate_graph
from ..store import check_output_dir, load_graph, save_graph
from ..types import CausalEdge, CausalGraph, DomainSpec, Relation, Variable, variable_text
from .matching import EdgeFinder, match_variable

CORRECTIONS_FORMAT = "hcg-corrections"
# New operations are additive: a version-1 file of an earlier release reads the same here.
CORRECTIONS_VERSION = 1
_METRIC_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOP_KEYS = {"format", "version", "graph", "created", "corrections"}


class Refused(Exception):
    """A correction that cannot be applied; the message is the reason shown in the report."""


@dataclass
class ApplyReport:
    """What ``apply_corrections`` did: each correction applied or refused, with why."""

    applied: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        lines = [f"applied {len(self.applied)}, refused {len(self.refused)}"]
        lines += [f"  applied #{a['index']} {a['op']}: {a['change']}" for a in self.applied]
        lines += [f"  refused #{r['index']} {r['op']}: {r['reason']}" for r in self.refused]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# ---------------------------------------------------------------- reading


def parse_corrections(data: Any, path: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The list of correction entries of a parsed corrections file; CorruptFileError if malformed."""
    if isinstance(data, list):  # a bare list of entries is accepted too
        data = {"corrections": data}
    if not isinstance(data, dict):
        raise CorruptFileError("a corrections file is a mapping with 'corrections'", path=path)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise CorruptFileError(f"unknown top-level keys {sorted(unknown)}", path=path)
    if data.get("format", CORRECTIONS_FORMAT) != CORRECTIONS_FORMAT:
        raise CorruptFileError(f"format must be {CORRECTIONS_FORMAT!r}", path=path)
    version = data.get("version", CORRECTIONS_VERSION)
    # By type as well as value: True == 1 and 1.0 == 1 in Python, neither is a version number.
    if type(version) is not int or version != CORRECTIONS_VERSION:
        raise CorruptFileError(
            f"version {data.get('version')!r} is not supported; this hcg-rag reads version "
            f"{CORRECTIONS_VERSION}",
            path=path,
        )
    entries = data.get("corrections") or []
    if not isinstance(entries, list):
        raise CorruptFileError("'corrections' must be a list", path=path)
    return entries


def read_corrections(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a corrections.yaml (``hcg_core.bounded``: no aliases, bounded depth and size)."""
    from ..bounded import read_yaml

    path = Path(path)
    if not path.exists():
        raise StoreError("no such corrections file", path=path)
    try:
        data = read_yaml(path, cap=CORRECTIONS_CAP)
    except CorruptFileError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        raise CorruptFileError(f"cannot read the corrections: {reason}", path=path) from None
    return parse_corrections(data, path)


# 100,000 corrections (the largest review measured) take about 20 MB.
CORRECTIONS_CAP = 512 * 1024 * 1024


# ---------------------------------------------------------------- the operations (pure)


@dataclass
class _State:
    spec: DomainSpec
    variables: list[Variable]
    edges: list[CausalEdge]
    # What the support ledger must replay, in order: a ``SupportLedger`` method's name and its
    # arguments: ("reject", link), ("pin", link, fields), ("rename_variables", {old: new}),
    # ("drop_variable", name).
    ledger_ops: list[tuple] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)  # ids of the edges accept_edge named

    def copy(self) -> _State:
        """Another state with copies of this one's lists (the spec is immutable)."""
        lists = {f.name: list(getattr(self, f.name)) for f in fields(self) if f.name != "spec"}
        return _State(self.spec, **lists)


def _text(entry: dict, key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Refused(f"needs '{key}' (a non-empty string)")
    return value.strip()


def _named_edges(graph: CausalGraph, entries: list[Any], finder: EdgeFinder) -> dict[str, int]:
    """Edge id -> the first entry that names that edge outright (by its id or its two
    variables). An entry that reaches an edge only by its evidence sentence must not take it
    from such an entry: a rebuild that folded two edges into one left them one subject."""
    out: dict[str, int] = {}
    ids = {e.id for e in graph.edges}
    for index, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or entry.get("op") not in _EDGE_OPS:
            continue
        edge_id = str(entry.get("edge", ""))
        if edge_id not in ids:
            match = finder.find(entry, graph.edges, graph.variables, by_sentence=False)
            edge_id = graph.edges[match.index].id if match is not None else ""
        if edge_id:
            out.setdefault(edge_id, index)
    return out


def _find_edge(
    state: _State,
    entry: dict,
    original: dict[str, CausalEdge],
    finder: EdgeFinder,
    named: dict[str, int],
    index: int,
) -> tuple[int, str]:
    """The index of the edge ``entry`` is about, and a note saying how it was matched.

    ``named``: ``_named_edges`` of the file; ``index``: this entry's number in it."""
    edge_id = entry.get("edge")
    if not isinstance(edge_id, (str, int)) or isinstance(edge_id, bool):
        raise Refused("needs 'edge' (an edge id)")
    edge_id = str(edge_id)
    first = original.get(edge_id)
    if first is not None:
        for key in ("source", "target"):
            if key in entry and entry[key] != getattr(first, key):
                raise Refused(
                    f"edge {edge_id!r} {key} is {getattr(first, key)!r} in this graph, not "
                    f"{entry[key]!r}: the correction was made on another graph"
                )
        for i, e in enumerate(state.edges):
            if e.id == edge_id:
                return i, ""
        raise Refused(f"no edge {edge_id!r} in the graph (removed by an earlier correction)")
    ends = (entry.get("source"), entry.get("target"))
    asked = " -> ".join(ends) if all(isinstance(end, str) for end in ends) else ""
    match = finder.find(entry, state.edges, state.variables)
    if match is None:
        about = f" ({asked})" if asked else ""
        raise Refused(
            f"no edge {edge_id!r}{about} in the graph: not by id, by its two variables "
            "(name, metric and entities) or by its evidence sentence"
        )
    other = named.get(state.edges[match.index].id, index)
    if match.how == "evidence sentence" and other != index:
        raise Refused(
            f"no edge {asked} in the graph; its evidence sentence is now that of "
            f"{match.name}, which correction #{other} names"
        )
    return match.index, match.note(asked)


def _find_variable(state: _State, entry: dict, key: str) -> tuple[str, str]:
    """The name of the variable ``entry[key]`` is about, and a note saying how it was matched."""
    name = _text(entry, key)
    match = match_variable(name, [v.name for v in state.variables])
    if match is None:
        raise Refused(f"no variable {name!r} in the graph (nor one of its metric and entities)")
    return match.name, match.note(name)


def _reject_edge(state: _State, i: int, entry: dict) -> str:
    e = state.edges.pop(i)
    state.accepted = [a for a in state.accepted if a != e.id]
    state.ledger_ops.append(("reject", (e.source, e.target)))
    return f"edge {e.id} removed ({e.source} -> {e.target})"


def _accept_edge(state: _State, i: int, entry: dict) -> str:
    state.accepted.append(state.edges[i].id)
    return f"edge {state.edges[i].id} accepted"


def _edit_edge(state: _State, i: int, entry: dict) -> str:
    e = state.edges[i]
    changes = {}
    if "mechanism" in entry:
        if not isinstance(entry["mechanism"], str):
            raise Refused("'mechanism' must be a string")
        changes["mechanism"] = entry["mechanism"].strip()
    if "confidence" in entry:
        c = entry["confidence"]
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 <= float(c) <= 1.0:
            raise Refused(f"'confidence' must be a number in [0, 1], got {c!r}")
        changes["confidence"] = float(c)
    if not changes:
        raise Refused("edit_edge needs 'mechanism' or 'confidence'")
    state.edges[i] = replace(e, **changes)  # in place: a long file must not copy per edit
    state.ledger_ops.append(("pin", (e.source, e.target), changes))
    return f"edge {e.id}: " + ", ".join(
        f"{k} {getattr(e, k)!r} -> {v!r}" for k, v in changes.items()
    )


def _ends(link: Any, names: dict[str, str]) -> Any:
    """An edge or a relation with its ends renamed by ``names`` (old -> new)."""
    return replace(
        link, source=names.get(link.source, link.source), target=names.get(link.target, link.target)
    )


def _same_sign(a: str, b: str) -> bool:
    """Two effects that may be one edge: equal, or one of them unknown ("")."""
    return not a or not b or a == b


def _merge(state: _State, entry: dict) -> str:
    """``drop``'s edges move to ``keep``; parallel edges of one sign join (higher confidence,
    evidence pooled), opposite signs stay apart and are named; self-loops are dropped."""
    keep, keep_note = _find_variable(state, entry, "keep")
    drop, drop_note = _find_variable(state, entry, "drop")
    names = {v.name: v for v in state.variables}
    if keep == drop:
        raise Refused("'keep' and 'drop' name the same variable")
    merged: list[CausalEdge] = []
    by_pair: dict[tuple[str, str], list[int]] = {}
    loops, joined, apart = [], [], []
    for e in state.edges:
        e2 = _ends(e, {drop: keep})
        if e2.source == e2.target:
            loops.append(e.id)
            continue
        group = by_pair.setdefault((e2.source, e2.target), [])
        j = next((j for j in group if _same_sign(merged[j].effect, e2.effect)), None)
        if j is not None:  # one link, one sign: keep one edge, pool its evidence
            first = merged[j]
            merged[j] = replace(
                first,
                confidence=max(first.confidence, e2.confidence),
                evidence=tuple(dict.fromkeys((*first.evidence, *e2.evidence))),
                effect=first.effect or e2.effect,
            )
            joined.append(f"{e.id} into {first.id}")
            continue
        if group:
            apart.append(f"{e.id} ({e2.effect}) and {merged[group[0]].id}")
        group.append(len(merged))
        merged.append(e2)
    spec = state.spec
    spec_names = [v.name for v in spec.variables]
    spec_vars = [v for v in spec.variables if v.name != drop]
    if drop in spec_names and keep not in spec_names:
        spec_vars.append(names[keep])
    relations: dict[tuple[str, str], Relation] = {}
    for r in (_ends(r, {drop: keep}) for r in spec.relations):
        if r.source != r.target:
            relations.setdefault((r.source, r.target), r)
    state.ledger_ops.append(("rename_variables", {drop: keep}))
    state.spec = replace(spec, variables=tuple(spec_vars), relations=tuple(relations.values()))
    state.variables = [v for v in state.variables if v.name != drop]
    state.edges = merged
    lists = (
        ("dropped edges that became self-loops", loops),
        ("joined parallel edges", joined),
        ("kept apart, opposite signs (flagged for review)", apart),
    )
    out = f"variable {drop!r} merged into {keep!r}{drop_note}{keep_note}"
    return out + "".join(f"; {what}: {', '.join(ids)}" for what, ids in lists if ids)


def _remove_edges_of(state: _State, name: str) -> list[CausalEdge]:
    gone = [e for e in state.edges if name in (e.source, e.target)]
    state.edges = [e for e in state.edges if name not in (e.source, e.target)]
    return gone


def _reject_variable_edges(state: _State, entry: dict) -> str:
    name, note = _find_variable(state, entry, "variable")
    gone = _remove_edges_of(state, name)
    state.ledger_ops.extend(("reject", (e.source, e.target)) for e in gone)
    if not gone:
        return f"variable {name!r} has no edges left to reject{note}"
    return f"{len(gone)} edges of {name!r} removed{note}: " + ", ".join(e.id for e in gone)


def _delete_variable(state: _State, entry: dict) -> str:
    name, note = _find_variable(state, entry, "variable")
    gone = _remove_edges_of(state, name)
    spec = state.spec
    state.ledger_ops.append(("drop_variable", name))
    state.spec = replace(
        spec,
        variables=tuple(v for v in spec.variables if v.name != name),
        relations=tuple(r for r in spec.relations if name not in (r.source, r.target)),
    )
    state.variables = [v for v in state.variables if v.name != name]
    return f"variable {name!r} deleted with its {len(gone)} edges{note}" + (
        ": " + ", ".join(e.id for e in gone) if gone else ""
    )


def _rename_metric(state: _State, entry: dict) -> str:
    old, new = _text(entry, "metric"), _text(entry, "to")
    metrics = {m.name for m in state.spec.metrics}
    if old not in metrics:
        raise Refused(f"no metric {old!r} in the spec")
    if new in metrics:
        raise Refused(f"metric {new!r} exists already (merge its variables instead)")
    if not _METRIC_NAME.match(new):
        raise Refused(f"{new!r} is not a metric name: use letters, digits and _ (CamelCase)")

    def var(v: Variable) -> Variable:
        return replace(v, metric=new) if v.metric == old else v

    def metric(name: str) -> str:
        return new if name == old else name

    mapping = {v.name: var(v).name for v in (*state.variables, *state.spec.variables)}
    spec = state.spec
    outcome = spec.outcome
    state.ledger_ops.append(("rename_variables", {a: b for a, b in mapping.items() if a != b}))
    state.spec = replace(
        spec,
        metrics=tuple(replace(m, name=new) if m.name == old else m for m in spec.metrics),
        variables=tuple(var(v) for v in spec.variables),
        relations=tuple(_ends(r, mapping) for r in spec.relations),
        outcome=replace(
            outcome,
            outcomes=tuple(map(metric, outcome.outcomes)),
            terminals=tuple(map(metric, outcome.terminals)),
        ),
    )
    state.variables = [var(v) for v in state.variables]
    state.edges = [_ends(e, mapping) for e in state.edges]
    n = sum(v.metric == new for v in state.variables)
    return f"metric {old!r} renamed {new!r} ({n} variables renamed with it)"


def _accept(state: _State, edge_ids: list[str]) -> list[str]:
    """Record accepted edges that still exist as seed relations of the spec (endpoints included)."""
    spec = state.spec
    relations = list(spec.relations)
    pairs = {(r.source, r.target) for r in relations}
    spec_vars = {v.name: v for v in spec.variables}
    graph_vars = {v.name: v for v in state.variables}
    recorded = []
    for e in state.edges:
        if e.id not in edge_ids or (e.source, e.target) in pairs:
            continue
        for end in (e.source, e.target):
            spec_vars.setdefault(end, graph_vars[end])
        relations.append(Relation(e.source, e.target, e.mechanism))
        pairs.add((e.source, e.target))
        recorded.append(e.id)
    variables = tuple(spec_vars.values())
    state.spec = replace(spec, variables=variables, relations=tuple(relations))
    return recorded


# The operations, by kind: an edge operation is given the edge the entry is about (found first,
# ``_find_edge``), the others find their variables or metric themselves.
_EDGE_OPS = {"reject_edge": _reject_edge, "accept_edge": _accept_edge, "edit_edge": _edit_edge}
_VARIABLE_OPS = {
    "reject_variable_edges": _reject_variable_edges,
    "delete_variable": _delete_variable,
    "merge_variables": _merge,
    "rename_metric": _rename_metric,
}
OPS = (*_EDGE_OPS, *_VARIABLE_OPS)
# The keys each operation reads. A key it does not read (a typo, or a field no op changes, such
# as an edge's `effect`) would be dropped without a word, so the correction is refused instead.
_EDGE_SUBJECT = ("edge", "source", "target", "sentence")
_OP_KEYS = {
    "reject_edge": _EDGE_SUBJECT,
    "accept_edge": _EDGE_SUBJECT,
    "edit_edge": (*_EDGE_SUBJECT, "mechanism", "confidence"),
    "reject_variable_edges": ("variable",),
    "delete_variable": ("variable",),
    "merge_variables": ("keep", "drop"),
    "rename_metric": ("metric", "to"),
}


def apply_corrections(
    graph: CausalGraph, corrections: list[Any]
) -> tuple[CausalGraph, ApplyReport]:
    """Apply ``corrections`` in order; each is validated against the spec or refused (pure)."""
    new, report, _ = _apply(graph, corrections)
    return new, report


def _apply(graph: CausalGraph, corrections: list[Any]) -> tuple[CausalGraph, ApplyReport, list]:
    """``apply_corrections``, plus the operations the support ledger must replay.

    The graph is validated once, after every correction: each op checks what it needs itself
    (an unknown edge or name, a self-loop, a bad metric name), so a whole-graph check per
    correction made 100,000 of them cost minutes. Only when the final check fails are they
    applied again, each validated, so that the one that breaks the spec is refused alone.
    """
    try:
        return _apply_checked(graph, corrections, each=False)
    except SpecError:
        return _apply_checked(graph, corrections, each=True)


def _apply_checked(
    graph: CausalGraph, corrections: list[Any], *, each: bool
) -> tuple[CausalGraph, ApplyReport, list]:
    state = _State(graph.spec, list(graph.variables), list(graph.edges))
    original = {e.id: e for e in graph.edges}
    finder = EdgeFinder(graph)
    named = _named_edges(graph, corrections, finder)
    chunk_ids = {c.id for c in graph.chunks}
    report = ApplyReport()
    for index, entry in enumerate(corrections, 1):
        op = entry.get("op") if isinstance(entry, dict) else None
        # Every op raises Refused before it changes the state, so only the per-correction check
        # (``each``) needs a copy to roll back to; copying per correction (the ledger ops grow
        # with the file) made a long file quadratic.
        before = state.copy() if each else state
        try:
            if not isinstance(entry, dict):
                raise Refused("an entry must be a mapping with 'op'")
            if op not in OPS:
                raise Refused(f"unknown op {op!r}; use one of {', '.join(OPS)}")
            unread = sorted(set(entry) - {"op", *_OP_KEYS[op]}, key=str)
            if unread:
                raise Refused(
                    f"{op} does not read {', '.join(map(repr, unread))}; its keys are "
                    f"{', '.join(_OP_KEYS[op])}"
                )
            if op in _EDGE_OPS:
                i, note = _find_edge(state, entry, original, finder, named, index)
                change = _EDGE_OPS[op](state, i, entry) + note
            else:
                change = _VARIABLE_OPS[op](state, entry)
            if each:
                try:
                    validate_graph(
                        state.spec, tuple(state.variables), tuple(state.edges), chunk_ids
                    )
                except SpecError as exc:
                    raise Refused(f"the result would not fit the spec: {exc}") from exc
        except Refused as exc:
            state = before
            report.refused.append({"index": index, "op": str(op), "reason": str(exc)})
            continue
        report.applied.append({"index": index, "op": op, "change": change})
    recorded = _accept(state, state.accepted)
    if recorded:
        report.notes.append(
            f"{len(recorded)} accepted edges recorded as seed relations of spec.yaml: "
            + ", ".join(recorded)
        )
    validate_graph(state.spec, tuple(state.variables), tuple(state.edges), chunk_ids)
    corrected = CausalGraph(state.spec, tuple(state.variables), tuple(state.edges), graph.chunks)
    return corrected, report, state.ledger_ops


# ---------------------------------------------------------------- with vectors and the ledger


@dataclass
class Corrected:
    """A corrected graph with what is saved beside it: variable vectors and the support ledger."""

    graph: CausalGraph
    report: ApplyReport
    variable_embeddings: np.ndarray | None
    ledger: dict[str, Any] | None  # incremental.json, None when the graph had none


def correct_graph(
    graph: CausalGraph,
    corrections: list[Any],
    *,
    variable_embeddings: np.ndarray | None = None,
    embedder: Any = None,
    embedder_name: str | None = None,
    ledger: Any = None,
) -> Corrected:
    """Apply ``corrections`` to ``graph`` and carry its vectors and support ledger along.

    Variable vectors are reused where the variable's text is unchanged; the others are embedded
    with ``embedder``, else with the embedder ``embedder_name`` names (when it can be rebuilt from
    its name; otherwise the vectors are left out and made at load). ``ledger``: a
    ``SupportLedger`` or its JSON (``incremental.json``) for ``graph``; it replays the
    corrections, so ``hcg add`` on the result still re-extracts edges from new text.
    """
    new, report, ledger_ops = _apply(graph, corrections)
    vectors = _variable_vectors(
        variable_embeddings, graph, new, report, embedder=embedder, embedder_name=embedder_name
    )
    return Corrected(
        new, report, vectors, _corrected_ledger(ledger, graph, new, ledger_ops, report)
    )


def _corrected_ledger(
    ledger: Any, graph: CausalGraph, new: CausalGraph, ops: list[tuple], report: ApplyReport
) -> dict[str, Any] | None:
    from ..graph_build.incremental import SupportLedger

    if ledger is None:
        return None
    if not isinstance(ledger, SupportLedger):
        try:
            ledger = SupportLedger.from_json(ledger, graph)
        except StoreError as exc:
            report.notes.append(f"support ledger not kept ({exc})")
            return None
    for method, *arguments in ops:
        getattr(ledger, method)(*arguments)
    return ledger.to_json(new)


def _variable_vectors(
    old: np.ndarray | None,
    graph: CausalGraph,
    new: CausalGraph,
    report: ApplyReport,
    *,
    embedder: Any = None,
    embedder_name: str | None = None,
) -> np.ndarray | None:
    """Rows of unchanged variables reused; only new or renamed variables are embedded."""
    if old is None:
        return None
    rows = {variable_text(v): i for i, v in enumerate(graph.variables)}
    texts = [variable_text(v) for v in new.variables]
    missing = [i for i, t in enumerate(texts) if t not in rows]
    kept = [i for i, t in enumerate(texts) if t in rows]
    out = np.zeros((len(texts), old.shape[1]), dtype=np.float32)
    out[kept] = old[[rows[texts[i]] for i in kept]]
    if missing:
        from ..embedders import embedder_from_name
        from ..embedding import as_matrix, embedder_errors

        try:
            if embedder is None:
                embedder = embedder_from_name(embedder_name or "")
            with embedder_errors("embedding the corrected variables"):
                fresh = embedder.embed_documents([texts[i] for i in missing])
            out[missing] = as_matrix(fresh, len(missing), who=embedder.name)
        except (EmbedderError, HCGError) as exc:
            report.notes.append(f"variable vectors not written ({exc}); they are made at load")
            return None
    report.notes.append(f"variable vectors: {len(kept)} reused, {len(missing)} embedded")
    return out


# ---------------------------------------------------------------- on disk


def apply_to_directory(
    directory: str | os.PathLike,
    corrections_path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    strict: bool = False,
    lock_timeout: float | None = None,
) -> ApplyReport:
    """Apply a corrections file to a graph directory and write the result to ``out``.

    ``out`` must be another directory, neither inside the graph nor holding it (``StoreError``
    before any work). With ``strict``, any refused correction writes nothing.
    Stored vectors are reused where their text is unchanged, the support ledger follows the
    corrections (``correct_graph``); the build report gains a ``corrections`` entry with this
    report.
    """
    directory, out = Path(directory), Path(out)
    # Before check_output_dir, whose words are about a build's input folders.
    if directory.resolve() in (out.resolve(), *out.resolve().parents):
        raise StoreError(
            f"--out must be a new directory, not the graph being corrected ({directory}) nor "
            "a folder inside the graph; write the corrected graph to its own folder",
            path=out,
        )
    check_output_dir(out, inputs=[directory], probe=False)
    stored = load_graph(directory)
    done = correct_graph(
        stored.graph,
        read_corrections(corrections_path),
        variable_embeddings=stored.variable_embeddings,
        embedder_name=stored.embedder_name,
        ledger=stored.ledger,
    )
    if strict and done.report.refused:
        return done.report
    applied = {"from": str(directory), "file": str(corrections_path), **done.report.as_dict()}
    build_report = {**(stored.report or {}), "corrections": applied}
    save_graph(
        done.graph,
        out,
        embedder_name=stored.embedder_name,
        variable_embeddings=done.variable_embeddings,
        chunk_embeddings=stored.chunk_embeddings,
        report=build_report,
        ledger=done.ledger,
        lock_timeout=lock_timeout,
    )
    return done.report
