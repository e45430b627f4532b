"""Incremental graph updates: what the offline builder knew per edge, kept so edits cost O(edit).

The offline builder derives every edge from the sentences that support it (``support``), then
makes the edge from them (``edges.make_edges``: mechanism, noisy-or confidence) and links it to
the chunks that state it (``evidence.link_evidence``). A ``SupportLedger`` keeps exactly that per-link support, the sentence -> chunks map and the span ->
variable assignment of the build, so that:

* inserting chunks extracts their statements only (``statements.collect_statements``), maps their
  spans onto the *existing* vocabulary (the build's span assignment; an unseen span by its head:
  a metric head's entity variable, else that metric's generic variable), adds their support
  (with the build's lifting) and recomputes only the links they touch, with the builder's own
  functions; a link whose confidence is capped keeps what its last recomputation found
  (``LinkState``) and takes sentences new to the ledger that are no fragment of another sentence
  (and hold none) without a recomputation, with the same result;
* deleting chunks removes them from the sentences that name them; a sentence no chunk holds any
  more stops supporting its links, and a link with no sentence left loses its edge.

What an edit does not do, by design (docs/offline-builder.md, "Incremental updates"): it never adds
metrics, variables or dimensions, and never re-decides corpus-wide choices (which heads are
metrics, which entities have enough support to be variables, metric roles, dimension clusters).
A statement that the existing vocabulary cannot express is counted in the ``UpdateReport``
(and logged), not dropped silently; a rebuild re-decides the vocabulary. So an edit gives exactly
the edges a fresh build gives whenever the fresh build's vocabulary is the same (tests assert
this), and otherwise the edges of the old vocabulary.

Either way every edge is then linked again by the one linker (``relink_edges``), over the edited
chunks. Graphs without a ledger (the LLM pipeline, graphs saved before ledgers existed, edited
graphs) get only that: an insert extracts no edge from the new text; a deletion drops the chunks'
evidence links and the edges left with none.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import DEFAULT_EVIDENCE_PER_EDGE, OfflineBuildConfig
from ..errors import StoreError
from ..spec.offline_vocabulary import NodeKey, entity_key
from ..types import CausalEdge, CausalGraph, Chunk
from .edges import MAX_CONFIDENCE, noisy_or_miss, sentence_edge
from .evidence import link_evidence
from .extract import Span, head_of, split_sentences
from .statements import collect_statements, containers, distinct_sentences
from .support import statement_links

logger = logging.getLogger(__name__)

LEDGER_FORMAT = 1
MAX_EXAMPLES = 5  # statements named in a report, per kind
EXISTING = "="  # entity-key prefix of a given spec's variables (never a word)
# An insert of more new sentences recomputes the links it touches in full (``LinkState``).
MAX_IN_PLACE_SENTENCES = 256

Link = tuple[str, str]  # (source variable name, target variable name)


def edges_digest(edges: Iterable[CausalEdge]) -> str:
    """Fingerprint of a graph's edge set, so a ledger that no longer matches its graph is seen."""
    h = hashlib.blake2b(digest_size=12)
    for key in sorted(f"{e.source}\x00{e.target}" for e in edges):
        h.update(key.encode("utf-8"))
        h.update(b"\x01")
    return h.hexdigest()


@dataclass
class UpdateReport:
    """What an insert or delete changed, and what it could not keep (never silent).

    ``statements_unmapped``: statements of the new text whose cause or effect the existing
    vocabulary cannot express (a rebuild may add a metric or variable for them);
    ``statements_as_built``: statements whose spans the build itself left out (dropped, or a node
    without enough support to be a variable), which a fresh build of the same vocabulary also
    leaves out;
    ``links_skipped``: supported links (mostly lifted ones) to a node that is not a variable;
    ``edges_removed``: ids of edges that lost their last supporting sentence or evidence chunk;
    ``edges_updated``: ids of kept edges whose mechanism, confidence, sign or evidence changed;
    ``evidence_links_added``: evidence links the graph did not have before (a new edge's too).
    ``graph_mode``: "ledger" (the offline builder's rules), "relink" (no ledger: the existing
    edges linked again to the chunks that state them, new text included) or "none" (no edges).
    """

    chunks_added: int = 0
    chunks_removed: int = 0
    statements: int = 0
    statements_mapped: int = 0
    statements_unmapped: int = 0
    statements_as_built: int = 0
    links_skipped: int = 0
    edges_added: tuple[str, ...] = ()
    edges_updated: tuple[str, ...] = ()
    edges_removed: tuple[str, ...] = ()
    evidence_links_added: int = 0
    graph_mode: str = "ledger"
    missing: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def lost(self) -> bool:
        """Whether anything of the text or the graph could not be kept."""
        return bool(self.statements_unmapped or self.links_skipped or self.edges_removed)

    def summary(self) -> str:
        parts = [
            f"+{self.chunks_added}/-{self.chunks_removed} chunks",
            f"edges +{len(self.edges_added)} ~{len(self.edges_updated)} -{len(self.edges_removed)}",
        ]
        if self.statements:
            parts.append(f"{self.statements_mapped}/{self.statements} statements mapped")
        counts = (
            (self.statements_unmapped, "not expressible in the current vocabulary"),
            (self.statements_as_built, "left out as the build left them out"),
            (self.links_skipped, "links to non-variables skipped"),
            (self.evidence_links_added, "evidence links added"),
        )
        parts += [f"{n} {text}" for n, text in counts if n]
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}

    def log(self, what: str) -> None:
        """One warning when something was not kept, else a debug line."""
        if self.lost or self.notes:
            logger.warning(
                "%s: %s%s%s",
                what,
                self.summary(),
                (" (e.g. " + " | ".join(self.examples[:3]) + ")") if self.examples else "",
                ("; " + "; ".join(self.notes)) if self.notes else "",
            )
        else:
            logger.debug("%s: %s", what, self.summary())


def empty_vocabulary_note(statements: int) -> str:
    """The note of an insert into a graph with no metric: its causal statements need a rebuild."""
    return (
        f"the graph is empty (its vocabulary has no metric, so it takes no edges): the "
        f"{statements} causal statement(s) of the new text need a rebuild to become edges "
        "(`hcg build`, or from_documents again); the new text is searchable meanwhile"
    )


NodeId = tuple[int, str]  # (metric index, entity key); "" is the metric's generic variable
ChunkRows = Mapping[str, int]  # chunk id -> row in the graph's chunks


@dataclass
class LinkState:
    """What a link's last full recomputation (``SupportLedger.edge``) found, kept while its
    confidence is capped, so sentences new to the ledger that are no fragment of another sentence
    and have none update the edge by themselves (docs/offline-builder.md, "Incremental updates").

    Then every new sentence is distinct (the old ones keep their status: none of their containers
    changed), the noisy-or stays at ``MAX_CONFIDENCE`` (each factor is at most 1) and the
    mechanism is the old one or a new sentence with a higher key.
    """

    best: tuple[float, int, int, int]  # (strength, chunks, -length, -order) of the mechanism
    best_text: str
    pending: dict[str, None] = field(default_factory=dict)  # new sentences not counted yet


@dataclass
class SupportLedger:
    """The offline build's per-link support, kept so edits update only the links they touch.

    ``spans``: span text -> the node the build mapped it to (None: the build dropped the span).
    ``nodes``: every node the build kept -> its variable name (``""``: kept but not a variable,
    e.g. dropped as weakly supported; its lifted links to ancestors still count). ``links``:
    (source, target) variable names -> supporting sentence -> strongest cue strength.
    ``sentence_chunks``: sentence -> chunk ids holding it; ``order``: sentence -> first-seen
    rank (the builder's tie-break).
    """

    heads: list[str]
    compounds: frozenset[str]
    spans: dict[str, NodeId | None]
    nodes: dict[NodeId, str]
    links: dict[Link, dict[str, float]]
    sentence_chunks: dict[str, list[str]]
    order: dict[str, int]
    lift: bool = True
    lift_discount: float = 0.5
    max_evidence: int = DEFAULT_EVIDENCE_PER_EDGE
    version: int = 0  # bumped by every edit (a retriever's clones check it before saving)
    # A reviewer's verdicts (``hcg apply``): links never made an edge again, and edited fields
    # (mechanism, confidence) kept over a recomputation from the support.
    rejected: set[Link] = field(default_factory=set)
    pinned: dict[Link, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # sentence -> the links it supports; made on the first edit (``by_sentence``), not here:
        # every build makes a ledger, and most are only saved.
        self._by_sentence: dict[str, set[Link]] | None = None
        self._head_index = {h: i for i, h in enumerate(self.heads)}
        self._next = max(self.order.values(), default=-1) + 1
        self._words: dict[int, list[tuple[frozenset[str], NodeId]]] = defaultdict(list)
        for node in self.nodes:
            if node[1] and not node[1].startswith(EXISTING):
                self._words[node[0]].append((frozenset(node[1].split()), node))
        # In memory only: per-link states (``LinkState``) and, made on the first insert that
        # needs them, the fragment index of every sentence (``_related``).
        self._state: dict[Link, LinkState] = {}
        self._inner: dict[str, list[str]] | None = None  # inner words -> sentences (3+ words)
        self._short: list[str] = []  # sentences of one or two words
        self._lengths: set[int] = set()  # inner-word counts in ``_inner``
        self._joined = ""  # every sentence, NUL-separated: "is x inside one?" at memory speed

    @property
    def by_sentence(self) -> dict[str, set[Link]]:
        """Sentence -> the links it supports (the reverse of ``links``; kept up to date by edits)."""
        if self._by_sentence is None:
            self._by_sentence = defaultdict(set)
            for link, sents in self.links.items():
                for s in sents:
                    self._by_sentence[s].add(link)
        return self._by_sentence

    # ------------------------------------------------------------------ persistence

    def to_json(self, graph: CausalGraph) -> dict[str, Any]:
        """JSON-ready data (``incremental.json``), fingerprinted against ``graph``'s edges."""
        sentences = sorted(self.order, key=self.order.__getitem__)
        index = {s: i for i, s in enumerate(sentences)}
        node_index = {n: i for i, n in enumerate(self.nodes)}
        return {
            "format": LEDGER_FORMAT,
            "edges_digest": edges_digest(graph.edges),
            "heads": self.heads,
            "compounds": sorted(self.compounds),
            "lift": self.lift,
            "lift_discount": self.lift_discount,
            "max_evidence": self.max_evidence,
            "nodes": [[m, key, name] for (m, key), name in self.nodes.items()],
            "spans": {t: (node_index[n] if n is not None else None) for t, n in self.spans.items()},
            "sentences": sentences,
            "sentence_chunks": [self.sentence_chunks.get(s, []) for s in sentences],
            "links": [
                [s, t, {str(index[x]): w for x, w in sents.items()}]
                for (s, t), sents in self.links.items()
            ],
            # Optional (absent before review corrections were kept; a reader without them
            # ignores them): rejected links, and edited edge fields per link.
            "rejected": sorted([s, t] for s, t in self.rejected),
            "pinned": [[s, t, dict(f)] for (s, t), f in sorted(self.pinned.items())],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], graph: CausalGraph) -> SupportLedger:
        """Inverse of :meth:`to_json`; ``StoreError`` when it does not describe ``graph``."""
        try:
            if data.get("format") != LEDGER_FORMAT:
                raise StoreError(f"incremental ledger format {data.get('format')!r} is unknown")
            if data.get("edges_digest") != edges_digest(graph.edges):
                raise StoreError("the incremental ledger does not match the graph's edges")
            sentences = [str(s) for s in data["sentences"]]
            links: dict[Link, dict[str, float]] = {}
            for s, t, sents in data["links"]:
                links[(str(s), str(t))] = {sentences[int(i)]: float(w) for i, w in sents.items()}
            nodes = [((int(m), str(k)), str(name)) for m, k, name in data["nodes"]]
            return cls(
                heads=[str(h) for h in data["heads"]],
                compounds=frozenset(data["compounds"]),
                spans={
                    str(k): (nodes[int(v)][0] if v is not None else None)
                    for k, v in data["spans"].items()
                },
                nodes=dict(nodes),
                links=links,
                sentence_chunks={
                    s: [str(c) for c in cs]
                    for s, cs in zip(sentences, data["sentence_chunks"], strict=True)
                },
                order={s: i for i, s in enumerate(sentences)},
                lift=bool(data["lift"]),
                lift_discount=float(data["lift_discount"]),
                max_evidence=int(data["max_evidence"]),
                rejected={(str(s), str(t)) for s, t in data.get("rejected", ())},
                pinned={(str(s), str(t)): _pinned(f) for s, t, f in data.get("pinned", ())},
            )
        except StoreError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise StoreError(f"the incremental ledger is malformed: {exc}") from exc

    # ------------------------------------------------------------------ review corrections

    def rename_variables(self, mapping: Mapping[str, str]) -> None:
        """Variables renamed or merged (old name -> new name, ``hcg apply``): nodes, links,
        rejections and edits follow; links that come to join the same variables pool their
        sentences (strongest strength kept); a link that becomes a self-loop is dropped."""

        def rename(name: str) -> str:
            return mapping.get(name, name)

        self.nodes = {n: rename(name) if name else name for n, name in self.nodes.items()}
        links: dict[Link, dict[str, float]] = {}
        for (s, t), sents in self.links.items():
            link = (rename(s), rename(t))
            if link[0] == link[1]:
                continue
            pooled = links.setdefault(link, {})
            for text, w in sents.items():
                pooled[text] = max(pooled.get(text, 0.0), w)
        self.links = links
        self.rejected = {(rename(s), rename(t)) for s, t in self.rejected}
        # The first edit of links that come to join the same variables wins.
        self.pinned = {(rename(s), rename(t)): f for (s, t), f in reversed(self.pinned.items())}
        self._edited()

    def drop_variable(self, name: str) -> None:
        """A deleted variable: its nodes stay known (a statement about it maps to no variable,
        as for any node the build did not make a variable) and its links go."""
        self.nodes = {n: "" if v == name else v for n, v in self.nodes.items()}
        self.links = {k: v for k, v in self.links.items() if name not in k}
        self.rejected = {k for k in self.rejected if name not in k}
        self.pinned = {k: v for k, v in self.pinned.items() if name not in k}
        self._edited()

    def reject(self, link: Link) -> None:
        """A rejected edge: its link never becomes an edge again, whatever text supports it."""
        self.rejected.add(link)
        self.pinned.pop(link, None)
        self._edited()

    def pin(self, link: Link, fields: Mapping[str, Any]) -> None:
        """An edited edge: these fields (mechanism, confidence) win over its recomputation."""
        self.pinned.setdefault(link, {}).update(fields)
        self._edited()

    def _edited(self) -> None:
        self._by_sentence = None
        self._state.clear()
        self.version += 1

    # ------------------------------------------------------------------ mapping text

    def resolve(self, span: Span) -> NodeId | None:
        """The node a span names: the build's own assignment, else by head (see module)."""
        if span.text in self.spans:
            return self.spans[span.text]
        if not self.heads:
            return None  # a given spec maps spans by embedding, which an edit does not redo
        head, entity = head_of(span, self.compounds)
        metric = self._head_index.get(head)
        if metric is None:
            return None
        key = (metric, entity_key(entity))
        return key if key in self.nodes else (metric, "")

    def ancestors(self, node: NodeId) -> list[NodeId]:
        """Kept nodes a statement about ``node`` also supports (``support.ancestors``)."""
        metric, key = node
        if not key or key.startswith(EXISTING):
            return []
        up: list[NodeId] = [(metric, "")]  # the generic variable: every entity's root
        words = frozenset(key.split())
        return up + [n for w, n in self._words[metric] if w < words]

    # ------------------------------------------------------------------ edits

    def add_chunks(
        self, chunks: Sequence[Chunk], terminal: Iterable[str], report: UpdateReport
    ) -> set[Link]:
        """Add the support the chunks' statements give; return the links whose support changed.

        ``terminal``: variable names of terminal metrics (their outgoing links are dropped, as
        ``support.drop_leaving`` does).
        """
        terminal = set(terminal)
        corpus = collect_statements(chunks)
        touched: set[Link] = set()
        for sid, text in enumerate(corpus.sentences):
            ids = [chunks[c].id for c in corpus.chunks_of[sid]]
            held = self.sentence_chunks.get(text)
            if held is not None:
                held.extend(i for i in ids if i not in held)
                links = self.by_sentence.get(text, set())
                touched |= links
                for link in links:  # a sentence's chunks changed: recompute in full
                    self._state.pop(link, None)
        fresh = [text for text in corpus.sentences if text not in self.order]
        # No state: every touched link is recomputed in full anyway. Many new sentences: their
        # substring searches (each over all sentences' text) would cost more than recomputing.
        in_place = bool(self._state) and len(fresh) <= MAX_IN_PLACE_SENTENCES
        plain = set(fresh) - self._related(fresh) if in_place else set()
        report.statements += len(corpus.statements)
        for st in corpus.statements:
            src, tgt = self.resolve(st.cause), self.resolve(st.effect)
            if src is None or tgt is None:
                if st.cause.text in self.spans and st.effect.text in self.spans:
                    report.statements_as_built += 1
                    continue
                report.statements_unmapped += 1
                if len(report.examples) < MAX_EXAMPLES:
                    report.examples += (f"{st.cause.text} -> {st.effect.text}",)
                continue
            report.statements_mapped += 1
            ups = (self.ancestors(src), self.ancestors(tgt)) if self.lift else ((), ())
            pairs = statement_links(src, tgt, st.strength, *ups, self.lift_discount)
            text = corpus.sentences[st.sentence]
            for a, b, w in pairs:
                s, t = self.nodes.get(a), self.nodes.get(b)
                if a == b or s in terminal:
                    continue
                if not s or not t:
                    report.links_skipped += 1
                    continue
                link = (s, t)
                sents = self.links.setdefault(link, {})
                state = self._state.get(link)
                if state is not None:
                    if text in plain and (text not in sents or text in state.pending):
                        state.pending[text] = None
                    else:
                        del self._state[link]
                sents[text] = max(sents.get(text, 0.0), w)
                self.by_sentence[text].add(link)
                if text not in self.order:
                    self.order[text] = self._next
                    self._next += 1
                    held = self.sentence_chunks.setdefault(text, [])
                    held.extend(chunks[c].id for c in corpus.chunks_of[st.sentence])
                touched.add(link)
        if self._inner is not None:
            added = [text for text in fresh if text in self.order]
            for text in added:
                self._index(text)
            if added:
                self._joined += "\x00" + "\x00".join(added)
        self.version += 1
        return touched

    def _index(self, text: str) -> None:
        words = text.split()
        if len(words) < 3:
            self._short.append(text)
        else:
            self._inner.setdefault(" ".join(words[1:-1]), []).append(text)
            self._lengths.add(len(words) - 2)

    def _related(self, texts: Sequence[str]) -> set[str]:
        """Which of ``texts`` (sentences new to the ledger) are a fragment of, or contain, another
        sentence of the ledger or of ``texts``: their links are recomputed in full.

        Costs O(new text) plus one substring search of all sentences' text per new sentence
        (C speed). A removed sentence stays in the index and can only make this answer "related"
        (a full recomputation), never miss a fragment.
        """
        if self._inner is None:
            self._inner = {}
            for text in self.order:
                self._index(text)
            self._joined = "\x00".join(self.order)
        related: set[str] = set()
        for i, holders in containers(texts, range(len(texts))).items():
            if holders:
                related.add(texts[i])
                related.update(texts[j] for j in holders)
        for x in texts:
            if x in related:
                continue
            if "\x00" in x or x in self._joined or any(y in x for y in self._short):
                related.add(x)
                continue
            # A sentence y of 3+ words inside x has y's inner words as a run of x's words with
            # a word before and after (``statements.containers``).
            w = x.split()
            if any(
                y in x and y in self.order
                for n in self._lengths
                for k in range(1, len(w) - n)
                for y in self._inner.get(" ".join(w[k : k + n]), ())
            ):
                related.add(x)
        return related

    def remove_chunks(self, chunks: Sequence[Chunk]) -> set[Link]:
        """Remove the chunks from the sentences they hold; return the links whose support changed
        (a link absent from ``links`` afterwards has lost all its support)."""
        touched: set[Link] = set()
        self._state.clear()  # chunk rows shift: recompute in full
        for chunk in chunks:
            for text in dict.fromkeys(split_sentences(chunk.text)):
                held = self.sentence_chunks.get(text)
                if held is None or chunk.id not in held:
                    continue
                held.remove(chunk.id)
                links = self.by_sentence.get(text, set())
                touched |= links
                if held:
                    continue
                for link in links:  # no chunk holds the sentence any more: it supports nothing
                    sents = self.links.get(link)
                    if sents is not None:
                        sents.pop(text, None)
                        if not sents:
                            del self.links[link]
                self.by_sentence.pop(text, None)
                del self.sentence_chunks[text]
                self.order.pop(text, None)
        self.version += 1
        return touched

    def edge(self, link: Link, chunk_row: ChunkRows) -> CausalEdge:
        """The edge the builder makes for ``link`` from its current support (``make_edges``):
        mechanism, confidence and sign, no evidence (``relink_edges`` links every edge after an
        edit, as the build does).

        From the link's ``LinkState`` when it has one and only new sentences to add, else
        recomputed from all its sentences (the state is kept when the confidence is capped).
        """
        state = self._state.get(link)
        if state is not None:
            edge = self._update(link, state, chunk_row)
            if edge is not None:
                return edge
            del self._state[link]
        sents = self.links[link]
        texts = sorted(sents, key=self.order.__getitem__)
        ids = range(len(texts))
        sids = distinct_sentences(ids, texts, containers(texts, ids))
        holders = [self._holders(t, chunk_row) for t in texts]
        held = [i for i in sids if holders[i]]
        sids = held or list(sids)

        def key(i: int) -> tuple[float, int, int, int]:  # the mechanism: as ``make_edges``
            return (sents[texts[i]], holders[i], -len(texts[i]), -self.order[texts[i]])

        best = max(sids, key=key)
        miss = noisy_or_miss(sents[texts[i]] for i in sids)  # as edge_confidence
        if len(held) == len(sids) and 1.0 - miss >= MAX_CONFIDENCE:
            self._state[link] = LinkState(best=key(best), best_text=texts[best])
        return sentence_edge(*link, texts[best], round(min(MAX_CONFIDENCE, 1.0 - miss), 4))

    def _holders(self, text: str, chunk_row: ChunkRows) -> int:
        """How many of the graph's chunks hold the sentence (the mechanism's tie-break)."""
        return sum(1 for c in self.sentence_chunks.get(text, ()) if c in chunk_row)

    def _update(self, link: Link, state: LinkState, chunk_row: ChunkRows) -> CausalEdge | None:
        """The edge from ``state`` plus its pending sentences (see ``LinkState``), in O(new
        sentences); None when a new sentence has no chunk in the graph."""
        sents = self.links[link]
        holders = {x: self._holders(x, chunk_row) for x in state.pending}
        if not all(holders.values()):
            return None
        for x, n in holders.items():
            key = (sents[x], n, -len(x), -self.order[x])
            if key > state.best:
                state.best, state.best_text = key, x
        state.pending.clear()
        # Capped before, so capped now: round(min(MAX, 1 - miss), 4) with 1 - miss >= MAX.
        return sentence_edge(*link, state.best_text, round(MAX_CONFIDENCE, 4))


def _pinned(fields: Any) -> dict[str, Any]:
    """An edited edge's kept fields, as ``to_json`` wrote them (only these two can be pinned)."""
    kinds = {"mechanism": str, "confidence": float}
    return {name: kind(fields[name]) for name, kind in kinds.items() if name in fields}


def ledger_from_build(
    corpus: Any,
    vocab: Any,
    nodes: Any,
    support: Mapping[Any, Mapping[int, float]],
    var_of: Mapping[Any, Any],
    chunks: Sequence[Chunk],
    cfg: OfflineBuildConfig,
    lift: bool,
) -> SupportLedger:
    """The ledger of an offline build, from its steps' own data (``offline._assemble``)."""

    def node_id(node: Any) -> NodeId:
        if node.existing is not None:
            return (node.metric, EXISTING + "|".join(node.existing))
        return (node.metric, node.entity)

    node_map: dict[NodeId, str] = {}
    # Sorted, so incremental.json lists its nodes in the same order on every run (a set of keys
    # iterates in an order that changes between processes: hash(None) is per-process).
    for node in sorted(set(nodes.keep.values()) | set(var_of), key=NodeKey.sort_key):
        node_map[node_id(node)] = var_of[node].name if node in var_of else ""
    spans: dict[str, NodeId | None] = {}
    for text, key in vocab.assign.items():
        spans[text] = None if key is None else node_id(nodes.keep[key.normalised()])
    links: dict[Link, dict[str, float]] = {}
    used: set[int] = set()
    for (s, t), sents in support.items():
        link = (var_of[s].name, var_of[t].name)
        merged = links.setdefault(link, {})
        for sid, w in sents.items():
            text = corpus.sentences[sid]
            merged[text] = max(merged.get(text, 0.0), w)
            used.add(sid)
    return SupportLedger(
        heads=list(vocab.heads) if vocab.given is None else [],
        compounds=frozenset(corpus.compounds),
        spans=spans,
        nodes=node_map,
        links=links,
        sentence_chunks={
            corpus.sentences[i]: [chunks[c].id for c in corpus.chunks_of[i]] for i in sorted(used)
        },
        order={corpus.sentences[i]: i for i in sorted(used)},
        lift=lift,
        lift_discount=cfg.lift_discount,
        max_evidence=cfg.max_evidence,
    )


def apply_links(
    graph: CausalGraph,
    ledger: SupportLedger,
    touched: set[Link],
    chunk_row: Mapping[str, int],
    report: UpdateReport,
) -> tuple[CausalEdge, ...]:
    """The graph's edges with the ``touched`` links recomputed from the ledger, in the builder's
    order (source name, then target name). ``graph.chunks`` must already hold every chunk the
    ledger names (``chunk_row``: chunk id -> row). Links between names that are not variables
    are skipped and counted."""
    names = {v.name for v in graph.variables}
    by_link = {(e.source, e.target): e for e in graph.edges}
    added, updated, removed = [], [], []
    for link in touched:
        old = by_link.get(link)
        if link not in ledger.links:
            if old is not None:
                removed.append(old.id)
                del by_link[link]
            continue
        if link[0] not in names or link[1] not in names:
            report.links_skipped += 1
            continue
        if link in ledger.rejected:
            continue  # a reviewer rejected it (``hcg apply``): the new support is kept, unused
        new = ledger.edge(link, chunk_row)
        if link in ledger.pinned:
            new = replace(new, **ledger.pinned[link])
        if old is None:
            added.append(new.id)
        else:
            # Its links stay the old ones until ``relink_edges`` below links every edge.
            new = replace(new, evidence=old.evidence)
            if new != old:
                updated.append(new.id)
        by_link[link] = new
    report.edges_added += tuple(sorted(added))
    report.edges_updated += tuple(sorted(updated))
    report.edges_removed += tuple(sorted(removed))
    return relink_edges(graph, [by_link[k] for k in sorted(by_link)], report, ledger.max_evidence)


def drop_evidence(
    edges: Sequence[CausalEdge], gone: set[str], report: UpdateReport
) -> tuple[CausalEdge, ...]:
    """Remove evidence links to ``gone`` chunks; an edge whose evidence was all removed goes too
    (the graph must not keep asserting a link no remaining passage backs)."""
    out: list[CausalEdge] = []
    for e in edges:
        evidence = tuple(c for c in e.evidence if c not in gone)
        if e.evidence and not evidence:
            report.edges_removed += (e.id,)
        else:
            out.append(e if evidence == e.evidence else replace(e, evidence=evidence))
    return tuple(out)


def relink_edges(
    graph: CausalGraph, edges: Sequence[CausalEdge], report: UpdateReport, per_edge: int
) -> tuple[CausalEdge, ...]:
    """``edges`` linked again by the one linker (``evidence.link_evidence``) over
    ``graph.chunks``: an edit's new text may state an old edge, and a build ends the same way,
    so an edited graph has the evidence a fresh build of the same graph would have. Edges whose
    evidence changed are counted as updated (once)."""
    linked = link_evidence(edges, graph.variables, graph.chunks, per_edge=per_edge)
    seen = set(report.edges_updated) | set(report.edges_added)
    for old, new in zip(edges, linked, strict=True):
        if new is not old:
            report.evidence_links_added += len(set(new.evidence) - set(old.evidence))
            if new.id not in seen:
                report.edges_updated += (new.id,)
                seen.add(new.id)
    return linked
