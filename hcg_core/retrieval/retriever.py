"""The core retriever: a loaded graph plus an embedder, answering queries with provenance.

It compiles the graph once (``CompiledGraph``) and then serves each query with the pure Stage 3
functions of ``paper.py``. It keeps no per-query state, so one instance is safe to share across
threads. The LlamaIndex and LangChain adapters are thin wrappers around this class.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..blocks import vectors_of_chunks
from ..config import HybridConfig, RetrievalConfig
from ..contract import vectors_match
from ..embedding import embed_texts, embedder_errors
from ..errors import ConfigError, EmbedderError
from ..ports import Embedder
from ..store import StoredGraph, load_graph, save_graph
from ..types import (
    BuildResult,
    CausalGraph,
    CausalPath,
    Chunk,
    RetrievalResult,
    RetrievedChunk,
    variable_text,
)
from . import updates
from .compiled import CompiledGraph, csr, gather
from .dense import DenseIndex
from .hybrid import HybridRanker
from .lexical import tokenize
from .matvec import matvec
from .paper import (
    Cones,
    all_source_hops,
    bfs_parents,
    bounded_bfs,
    cone_rank_of_nodes,
    match_nodes,
    outcome_cones,
    toward_ends,
)
from .walk import GraphWalk

logger = logging.getLogger(__name__)


def stored_ledger(stored: StoredGraph) -> Any:
    """The loaded directory's support ledger, or None (absent, or stale: logged)."""
    if stored.ledger is None:
        return None
    from ..errors import StoreError
    from ..graph_build.incremental import SupportLedger

    try:
        return SupportLedger.from_json(stored.ledger, stored.graph)
    except StoreError as exc:
        logger.warning(
            "%s: %s; edits will link evidence only (rebuild to restore)", stored.path, exc
        )
        return None


MAX_PATHS_PER_CHUNK = 3  # provenance: the best few causal paths behind each graph chunk
HOP_ROWS_MAX = 4_000_000
"""Entries (variables x hop rows, int64: 32 MB) of single-source BFS rows kept for reuse."""
HOP_TABLE_MAX = 1 << 18
"""Entries (variables squared, int64: 2 MB, 512 variables) up to which every variable's BFS row
is computed with the compiled graph (``EdgeLookup.of``, about 7 ms for 291 variables), so that no
query runs one; a larger graph keeps the rows its queries computed (``HOP_ROWS_MAX``)."""
_UNREACHED = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Traversal:
    """Stage 3 steps 1-3 for one query (array indices into the compiled graph).

    ``rows``/``sims``: matched variables; ``dist``/``parent``: BFS hop and discovering edge per
    variable; ``sub`` (+ ``sub_src``, ``sub_dst``): the BFS subgraph's edges; ``cones``: the kept
    outcome cones; ``node_rank``: per variable its best kept cone's rank (None without cones).
    """

    rows: np.ndarray
    sims: np.ndarray
    dist: np.ndarray | None = None
    parent: np.ndarray | None = None
    sub: np.ndarray | None = None
    sub_src: np.ndarray | None = None
    sub_dst: np.ndarray | None = None
    cones: Cones | None = None
    node_rank: np.ndarray | None = None

    def diagnostics(self) -> dict[str, Any]:
        d: dict[str, Any] = {"matched": int(self.rows.size)}
        if self.dist is not None:
            d.update(
                reached=int((self.dist >= 0).sum()),
                subgraph_edges=int(self.sub.size),
                cones=int(self.cones.groups.size),
            )
        return d


class CausalGraphRetriever:
    """Graph-guided retrieval over one causal graph.

    Setup::

        from hcg_core.retrieval import CausalGraphRetriever
        retriever = CausalGraphRetriever.load("graph_dir")          # the embedder named in the manifest
        result = retriever.retrieve("What raises stroke risk?", k=5)
        for rc in result.chunks:
            print(rc.route, round(rc.score, 3), [str(p) for p in rc.paths], rc.chunk.text[:80])
    """

    def __init__(
        self,
        graph: CausalGraph,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
        *,
        variable_embeddings: np.ndarray | None = None,
        chunk_embeddings: np.ndarray | None = None,
        dense_index: DenseIndex | None = None,
    ) -> None:
        self.graph = graph
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        if variable_embeddings is None:
            variable_embeddings = embed_texts(
                embedder, [variable_text(v) for v in graph.variables], what="variables"
            )
        if chunk_embeddings is None:
            chunk_embeddings = vectors_of_chunks(embedder, graph.chunks)
        self.variable_embeddings = variable_embeddings
        self.chunk_embeddings = chunk_embeddings
        self.build_report: dict[str, Any] | None = None
        # Where the hybrid ranker's dense candidates come from (retrieval/dense.py): None is the
        # in-process matrix of chunk_embeddings; the adapters pass a vector store's wrapper.
        self.dense_index = dense_index
        self.compiled = CompiledGraph.compile(graph, variable_embeddings, chunk_embeddings)
        # Shared by clones (with_config): one ranker per hybrid setting, one BM25 index for all.
        self._rankers: dict[HybridConfig, HybridRanker] = {}
        self._ranker_lock = threading.Lock()
        self._walk: GraphWalk | None = None  # the graph signal's arrays, built on first use
        # The offline builder's support ledger (graph_build.incremental), for insert/delete.
        self.ledger: Any = None
        # Incremental edits (updates.py): the growable per-chunk buffers (rebuilt when absent),
        # the retriever whose arrays a with_config view shares (None: its own), and the ledger
        # version this retriever last saw (None: the ledger's own).
        self._edit_state: Any = None
        self._edit_owner: CausalGraphRetriever | None = None
        self._ledger_version: int | None = None

    # Pickling and deepcopy (LangChain copies retrievers; multiprocessing pickles them): the lock
    # is recreated, everything else is plain data plus the embedder, which must pickle too.
    def __getstate__(self) -> dict[str, Any]:
        import pickle  # only to name an embedder that cannot be copied; nothing is persisted

        try:
            pickle.dumps(self.embedder)
        except Exception as exc:
            raise ConfigError(
                f"cannot copy or pickle this retriever: its embedder "
                f"{getattr(self.embedder, 'name', type(self.embedder).__name__)!r} cannot be "
                f"pickled ({type(exc).__name__}: {exc}); use an embedder that pickles, or "
                "rebuild the retriever in the other process with from_persist_dir/load"
            ) from exc
        # The edit buffers (grown with spare capacity) are rebuilt on the next edit, the
        # provenance tables (which hold a lock) with the compiled graph.
        left_out = ("_ranker_lock", "_edit_state", "_lookup")
        return {k: v for k, v in self.__dict__.items() if k not in left_out}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._ranker_lock = threading.Lock()
        self._edit_state = None
        self.compiled = self._compiled

    @property
    def compiled(self) -> CompiledGraph:
        """The graph's arrays (``CompiledGraph``). Setting it (at load, after an edit) also builds
        provenance's tables (``EdgeLookup``) for it, so that no query pays for them."""
        return self._compiled

    @compiled.setter
    def compiled(self, g: CompiledGraph) -> None:
        self._compiled = g
        self._lookup = EdgeLookup.of(g, self.config.max_hops, self.__dict__.get("_lookup"))

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_graph(
        cls,
        graph: CausalGraph,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
        **kwargs: Any,
    ) -> CausalGraphRetriever:
        return cls(graph, embedder, config, **kwargs)

    @classmethod
    def from_build(
        cls,
        result: BuildResult,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
        **kwargs: Any,
    ) -> CausalGraphRetriever:
        """A retriever over a fresh build: its vectors reused, its support ledger kept (so
        ``insert``/``delete`` re-extract edges) and its report as ``build_report``."""
        core = cls(
            result.graph,
            embedder,
            config,
            variable_embeddings=result.variable_embeddings,
            chunk_embeddings=result.chunk_embeddings,
            **kwargs,
        )
        core.ledger = result.ledger
        core.build_report = result.report
        return core

    @classmethod
    def from_stored(
        cls,
        stored: StoredGraph,
        embedder: Embedder | None = None,
        config: RetrievalConfig | None = None,
    ) -> CausalGraphRetriever:
        """Use a loaded directory; its vectors are reused only if ``embedder`` made them."""
        if embedder is None:
            from ..embedders import embedder_from_name

            if not stored.embedder_name:
                raise ConfigError(f"{stored.path}: the manifest names no embedder; pass one")
            embedder = embedder_from_name(stored.embedder_name)
        stored_dim = next(
            (
                int(a.shape[1])
                for a in (stored.chunk_embeddings, stored.variable_embeddings)
                if a is not None and a.ndim == 2 and a.size
            ),
            None,
        )
        same = vectors_match(stored.embedder_name, stored_dim, embedder)
        if not same and (
            stored.chunk_embeddings is not None or stored.variable_embeddings is not None
        ):
            logger.warning(
                "%s: stored vectors were made by %r (dim %s) and the embedder is %r (dim %s): "
                "all vectors are recomputed; pass the original embedder to reuse them",
                stored.path,
                stored.embedder_name,
                stored_dim,
                getattr(embedder, "name", "?"),
                getattr(embedder, "dim", "?"),
            )
        retriever = cls(
            stored.graph,
            embedder,
            config,
            variable_embeddings=stored.variable_embeddings if same else None,
            chunk_embeddings=stored.chunk_embeddings if same else None,
        )
        retriever.build_report = stored.report
        retriever.ledger = stored_ledger(stored)
        return retriever

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike,
        embedder: Embedder | None = None,
        config: RetrievalConfig | None = None,
    ) -> CausalGraphRetriever:
        """Load a graph directory (see docs/format.md); embeddings missing on disk are computed."""
        return cls.from_stored(load_graph(directory), embedder, config)

    def save(self, directory: str | os.PathLike, *, report: dict | None = None) -> None:
        """Write the graph directory (with its vectors, the build report it was loaded with, and
        the support ledger that incremental edits use)."""
        save_graph(
            self.graph,
            directory,
            embedder_name=self.embedder.name,
            variable_embeddings=self.variable_embeddings,
            chunk_embeddings=self.chunk_embeddings,
            report=report if report is not None else self.build_report,
            ledger=self.ledger_json(),
        )

    # ------------------------------------------------------------------ incremental edits

    def insert(self, documents_or_chunks: Any, **options: Any) -> Any:
        """Add documents (chunked with ``chunk_words``/``overlap_words``) or chunks, in place.

        Costs O(new text): only the new chunks are embedded, tokenised and split; the chunk
        vectors, BM25 index and compiled graph grow instead of being rebuilt. The graph's edges
        are updated from the new text's causal statements with the offline builder's rules
        (existing metrics and variables only). Returns a
        :class:`~hcg_core.graph_build.incremental.UpdateReport`; what the current vocabulary
        cannot express is counted there and logged, never dropped silently. Raises
        ``InputError`` when a chunk id or document id is already indexed (nothing changes).
        Edits are not safe while other threads query this retriever: serialise them.
        See docs/offline-builder.md, "Incremental updates".
        """
        return updates.insert(self, documents_or_chunks, **options)

    def relink(self, per_edge: int | None = None) -> Any:
        """Link every edge again to the chunks that state it (``hcg relink`` in memory): no LLM
        call, no edge added or removed. ``per_edge``: the cap (default: the one the graph was
        linked with). Returns an ``UpdateReport`` (``edges_updated``: edges whose evidence
        changed). Save the retriever to keep the result."""
        return updates.relink(self, per_edge)

    def delete(self, doc_ids: Any = (), *, chunk_ids: Any = ()) -> Any:
        """Remove documents (by doc id) and/or chunks (by chunk id), in place.

        Their evidence links go; an edge whose support all came from them is removed (its id is
        in the returned ``UpdateReport.edges_removed``, and logged). Ids not found are listed in
        ``UpdateReport.missing``.
        """
        if isinstance(doc_ids, str):
            doc_ids = [doc_ids]
        if isinstance(chunk_ids, str):
            chunk_ids = [chunk_ids]
        return updates.delete(self, doc_ids, chunk_ids)

    def ledger_json(self) -> dict | None:
        """The support ledger as JSON for ``save_graph``; None when absent, or when another
        retriever sharing it (a ``with_config`` view's origin) has edited it since."""
        ledger = self.ledger
        if ledger is None:
            return None
        if not self.ledger_current():
            logger.warning(
                "this retriever's support ledger was edited through another retriever; it is "
                "saved without one (later inserts link evidence only; rebuild to restore it)"
            )
            return None
        return ledger.to_json(self.graph)

    def ledger_current(self) -> bool:
        """Whether the ledger is as this retriever last left it (not advanced through another
        retriever sharing it)."""
        seen = self._ledger_version
        return self.ledger is not None and (seen is None or seen == self.ledger.version)

    def edits_owned(self) -> bool:
        """Whether this retriever owns its arrays (it is no ``with_config`` view of another)."""
        return self._edit_owner is None or self._edit_owner is self

    def edited(self, state: Any, *, ledger_version: int | None = None) -> None:
        """Record an edit's buffers (``updates.EditState``) and the ledger version it left."""
        self._edit_state = state
        if ledger_version is not None:
            self._ledger_version = ledger_version

    def with_config(self, **changes: Any) -> CausalGraphRetriever:
        """A retriever sharing this one's compiled arrays, with some settings changed."""
        unknown = set(changes) - set(RetrievalConfig.field_names())
        if unknown:
            raise ConfigError(
                f"unknown retrieval setting(s) {sorted(unknown)}; known: "
                f"{', '.join(RetrievalConfig.field_names())}"
            )
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.config = replace(self.config, **changes)
        # A view: it shares this retriever's arrays and ledger, so only this one may edit them.
        clone._edit_owner = self._edit_owner or self
        if self.ledger is not None:
            clone._ledger_version = (
                self.ledger.version if self._ledger_version is None else self._ledger_version
            )
        return clone

    # ------------------------------------------------------------------ querying

    def embed_query(self, query: str) -> np.ndarray:
        """The L2-normalised query vector, checked like stored vectors are."""
        who = getattr(self.embedder, "name", "?")
        with embedder_errors(f"embedder {who!r} failed on the query"):
            vec = self.embedder.embed_query(query)
        return self.query_vector(vec)

    def query_vector(self, vector: Any) -> np.ndarray:
        """A query vector made elsewhere (a framework's query bundle, an async embedder), checked
        against the graph's dimension and L2-normalised."""
        who = getattr(self.embedder, "name", "?")
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        dims = {a.shape[1] for a in (self.compiled.chunk_emb, self.compiled.var_emb) if a.size}
        if dims and vec.shape[0] not in dims:
            raise EmbedderError(
                f"embedder {who!r} gave a query vector of dimension "
                f"{vec.shape[0]}; the graph's vectors have {dims.pop()}"
            )
        if not np.all(np.isfinite(vec)):
            raise EmbedderError(f"embedder {who!r} gave non-finite values for the query")
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def retrieve(
        self, query: str, k: int | None = None, *, allowed: np.ndarray | None = None
    ) -> RetrievalResult:
        """Return the chunks for ``query``, best first (see the configured ``mode``).

        ``allowed``: a boolean mask over ``graph.chunks`` (a metadata filter, evaluated by the
        caller); only those chunks are ranked, so ``k`` of them come back when ``k`` exist.

        Raises:
            ConfigError: ``query`` is not a string, or empty or whitespace only (nothing to match:
                every chunk would score 0).
        """
        if not isinstance(query, str) or not query.strip():
            raise ConfigError(f"the question must be a non-empty string, got {query!r}")
        return self.retrieve_by_vector(query, self.embed_query(query), k, allowed=allowed)

    def _allowed(self, allowed: Any) -> np.ndarray | None:
        if allowed is None:
            return None
        mask = np.asarray(allowed)
        n = len(self.graph.chunks)
        if mask.dtype != np.bool_ or mask.shape != (n,):
            raise ConfigError(
                f"allowed must be a boolean mask with one entry per chunk ({n}), "
                f"got dtype {mask.dtype} and shape {mask.shape}"
            )
        return mask

    def traverse(self, qvec: np.ndarray) -> Traversal:
        """Stage 3 steps 1-3 for an embedded query: matching, bounded BFS, outcome cones."""
        cfg, g = self.config, self.compiled
        rows, sims = match_nodes(
            matvec(g.var_emb, qvec),
            g.metric_starts,
            tau_min=cfg.tau_min,
            top_metrics=cfg.top_metrics,
            band=cfg.band,
            per_metric=cfg.per_metric,
        )
        if rows.size == 0:
            return Traversal(rows, sims)
        dist = self.lookup.hops(rows, cfg.max_hops)
        parent = bfs_parents(dist, g.out_src, g.out_dst, g.out_eid, g.is_end)
        reached = dist >= 0
        # G_q's edges, taken in out-CSR order so they come grouped by source.
        pos = (reached[g.out_src] & reached[g.out_dst]).nonzero()[0]
        sub, sub_src, sub_dst = g.out_eid[pos], g.out_src[pos], g.out_dst[pos]
        cones = outcome_cones(reached, sub_src, sub_dst, g.end_group, rows, sims, cfg.max_cones)
        node_rank = cone_rank_of_nodes(cones, g.n_vars) if cones.groups.size else None
        return Traversal(rows, sims, dist, parent, sub, sub_src, sub_dst, cones, node_rank)

    def retrieve_by_vector(
        self,
        query: str,
        qvec: np.ndarray,
        k: int | None = None,
        *,
        allowed: np.ndarray | None = None,
    ) -> RetrievalResult:
        """Retrieval for an already embedded query, in the configured mode (``allowed``: see
        :meth:`retrieve`)."""
        cfg = self.config
        k = cfg.top_k if k is None else int(k)
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        allowed = self._allowed(allowed)
        if cfg.mode == "paper":
            return self.retrieve_paper(query, qvec, k, allowed=allowed)
        # Both BM25 indexes (the chunks', the walk's over the variables) split text with
        # lexical.tokenize: the question is split once.
        tokens = tokenize(query)
        result = self.ranker.rank(
            query,
            qvec,
            k=k,
            word_budget=cfg.word_budget,
            use_graph=cfg.use_graph,
            allowed=allowed,
            walk=self.walk.chunk_scores(tokens) if cfg.use_graph else None,
            tokens=tokens,
        )
        return self.with_paths(result, qvec, allowed) if cfg.use_graph else result

    def with_paths(
        self, result: RetrievalResult, qvec: np.ndarray, allowed: np.ndarray | None = None
    ) -> RetrievalResult:
        """The hybrid mode's provenance: each returned unit whose chunk the edges Stage 3
        selects for the query cite (the kept cones', else the BFS subgraph's) comes back with
        route "graph" and its best few citing edges' causal paths; of a chunk split into
        passages, a passage holding none of their mechanism sentences keeps route "fallback".
        Only the returned units are looked up: the paper route adds no candidate here."""
        g, t = self.compiled, self.traverse(qvec)
        edges, ranks, served_by = self._selected_edges(t, allowed)
        chunks, parent, units_of = list(result.chunks), self.ranker.parent, self.ranker.units_of
        rows = parent[[units_of[_chunk_id(rc)][0] for rc in chunks]].tolist()
        lookup = self.lookup
        citing = lookup.citing(rows, edges, ranks)
        toward = self._toward(t) if served_by == "cones" and any(citing.values()) else None
        parent, toward = _as_lists(t.parent), _as_lists(toward)
        for i, (rc, row) in enumerate(zip(chunks, rows, strict=True)):
            paths = tuple(lookup.path(e, parent, toward) for e in citing[row])
            if paths and _vouched(rc, paths, self.graph.chunks[row]):
                details = {**rc.details, "graph_edges": len(paths)}
                chunks[i] = RetrievedChunk(rc.chunk, rc.score, "graph", paths, details)
        diagnostics = {
            **result.diagnostics,
            "graph_chunks": sum(rc.route == "graph" for rc in chunks),
            "graph_served_by": served_by,
            **{f"graph_{k_}": v for k_, v in t.diagnostics().items()},
        }
        matched = tuple(g.var_names[r] for r in t.rows)
        return RetrievalResult(result.query, tuple(chunks), matched, result.served_by, diagnostics)

    @property
    def walk(self) -> GraphWalk:
        """The graph signal's arrays (``walk.py``) for the current compiled graph, rebuilt when an
        edit recompiles it (a few ms: one BM25 index over the variables' words)."""
        walk = self._walk
        if walk is None or walk.compiled is not self.compiled:
            with self._ranker_lock:
                walk = self._walk
                if walk is None or walk.compiled is not self.compiled:
                    same = walk.over(self.compiled) if walk is not None else None
                    walk = self._walk = same or GraphWalk.of(self.graph, self.compiled)
        return walk

    @property
    def ranker(self) -> HybridRanker:
        """The hybrid mode's BM25 index and packer, built on first use and shared by clones."""
        key = self.config.hybrid
        ranker = self._rankers.get(key)
        if ranker is None:
            with self._ranker_lock:
                ranker = self._rankers.get(key)
                if ranker is None:
                    # Clones with other hybrid settings reuse the indexes of the same passages.
                    same = [r for c, r in self._rankers.items() if c.unit_split == key.unit_split]
                    ranker = HybridRanker(
                        self.graph.chunks,
                        self.chunk_embeddings,
                        key,
                        bm25=same[0].bm25 if same else None,
                        dense=self.dense_index,
                        # The n-gram index is over the chunks: any clone's fits.
                        grams=next(
                            (r.grams for r in self._rankers.values() if r.grams is not None), None
                        ),
                    )
                    self._rankers[key] = ranker
        return ranker

    def retrieve_paper(
        self,
        query: str,
        qvec: np.ndarray,
        k: int,
        *,
        allowed: np.ndarray | None = None,
    ) -> RetrievalResult:
        """Stage 3 as the paper (the part the latency benchmark times).

        Graph evidence first, the selected chunks by text relevance (``_evidence_by_query``);
        with ``config.paper.vector_fill``, vector top-k fills up to ``k``, marked "fallback".
        """
        cfg, g = self.config, self.compiled
        t = self.traverse(qvec)
        diag: dict[str, Any] = t.diagnostics()
        edges, ranks, served_by = self._selected_edges(t, allowed)
        chunk_rows = np.zeros(0, np.int64)
        if edges.size:
            chunk_rows = self._evidence_by_query(query, qvec, k, edges, allowed)
        toward = self._toward(t) if served_by == "cones" else None
        picked = self._within_budget(chunk_rows[:k])
        citing = self.lookup.citing(picked.tolist(), edges, ranks)
        out = self._graph_chunks(picked, qvec, citing, t.parent, toward)
        budget = cfg.word_budget
        room = budget is None or int(g.chunk_words[picked].sum()) < budget
        if len(out) < k and cfg.paper.vector_fill and room:
            out.extend(self._vector_fill(qvec, k - len(out), picked, allowed))
        diag["graph_chunks"] = sum(rc.route == "graph" for rc in out)
        matched = tuple(g.var_names[r] for r in t.rows)
        return RetrievalResult(query, tuple(out), matched, served_by, diag)

    def _toward(self, t: Traversal) -> np.ndarray:
        """Per variable, the next edge on its way to an end of the kept cones (``toward_ends``)."""
        g = self.compiled
        inside = t.node_rank < t.cones.groups.size
        ends = (inside & g.is_end).nonzero()[0]
        return toward_ends(g.in_ptr, g.in_src, g.in_eid, ends, inside, self.lookup.in_dst)

    def _selected_edges(
        self, t: Traversal, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """The edges whose evidence Stage 3 selects, each with its rank, and what served them:
        the kept cones' edges (rank: the cone's), else, with ``bfs_fallback``, the BFS subgraph's
        (rank: the hop of the edge's source; docs/method.md, "Falling back"), each only when
        some of its evidence is ``allowed``; else none ("vector")."""
        empty = np.zeros(0, np.int64)
        if t.node_rank is not None:
            edges, ranks = _kept_cone_edges(t)
            if self._cite_any(edges, allowed):
                return edges, ranks, "cones"
        if self.config.bfs_fallback and t.sub is not None and self._cite_any(t.sub, allowed):
            return t.sub, t.dist[t.sub_src], "bfs"
        return empty, empty, "vector"

    def _cite_any(self, edges: np.ndarray, allowed: np.ndarray | None) -> bool:
        """Whether ``edges`` cite any chunk (any ``allowed`` one, with a filter)."""
        g = self.compiled
        if allowed is None:  # any edge with evidence: its CSR row is not empty
            return bool((g.ev_ptr[edges + 1] > g.ev_ptr[edges]).any())
        pos, _ = gather(g.ev_ptr, edges)
        return bool(allowed[g.ev_chunk[pos]].any())

    def _evidence_by_query(
        self,
        query: str,
        qvec: np.ndarray,
        k: int,
        edges: np.ndarray,
        allowed: np.ndarray | None,
    ) -> np.ndarray:
        """The chunk rows ``edges`` cite, ranked as the hybrid mode ranks chunks (BM25 and dense
        fused, packed by MMR under the word budget) but over these chunks only."""
        g = self.compiled
        pos, _ = gather(g.ev_ptr, edges)
        selected = np.zeros(g.chunk_emb.shape[0], dtype=bool)
        selected[g.ev_chunk[pos]] = True
        if allowed is not None:
            selected &= allowed
        ranker = self.ranker
        ranked = ranker.rank(
            query,
            qvec,
            k=k,
            word_budget=self.config.word_budget,
            use_graph=False,
            allowed=selected,
        )
        # A result is a stored chunk, or a passage or part of one: its chunk row, once each.
        ids = [_chunk_id(rc) for rc in ranked.chunks]
        rows = ranker.parent[[ranker.units_of[i][0] for i in ids]] if ids else edges[:0]
        return rows[np.sort(np.unique(rows, return_index=True)[1])].astype(np.int64)

    def graph_triples(self, query: str, max_edges: int = 200) -> list[str]:
        """The paper's nodes-only ablation: the kept cones' edges as text, not evidence chunks.

        Returns ``"source -> target: mechanism"`` lines (best cone first, then confidence), or
        the BFS subgraph's edges when no cone was kept; empty when nothing matched.
        """
        g = self.compiled
        t = self.traverse(self.embed_query(query))
        if t.sub is None or t.sub.size == 0:
            return []
        if t.node_rank is not None:
            edges, ranks = _kept_cone_edges(t)
        else:
            edges, ranks = t.sub, t.dist[t.sub_src]
        order = np.lexsort((g.edge_conf_order[edges], ranks))[:max_edges]
        return [
            f"{g.var_names[g.edge_src[e]]} -> {g.var_names[g.edge_dst[e]]}: "
            f"{g.mechanisms[e]}".rstrip(": ")
            for e in edges[order]
        ]

    # ------------------------------------------------------------------ helpers

    def _within_budget(self, rows: np.ndarray, used: int = 0) -> np.ndarray:
        """The prefix of ``rows`` that starts before the word budget is spent (the last chunk
        may cross it: chunks are returned whole)."""
        budget = self.config.word_budget
        if budget is None or rows.size == 0:
            return rows
        before = used + np.cumsum(self.compiled.chunk_words[rows]) - self.compiled.chunk_words[rows]
        return rows[: int(np.searchsorted(before, budget, side="left"))]

    def _vector_fill(
        self,
        qvec: np.ndarray,
        need: int,
        picked: np.ndarray,
        allowed: np.ndarray | None = None,
    ) -> list[RetrievedChunk]:
        """Up to ``need`` more chunks by cosine, skipping the ``picked`` rows (route fallback)
        and, with ``allowed``, every chunk it excludes."""
        g = self.compiled
        n = g.chunk_emb.shape[0]
        if n == 0:
            return []
        sims = matvec(g.chunk_emb, qvec)
        if allowed is not None:
            sims = np.where(allowed, sims, -np.inf)
            n = int(allowed.sum())
            if n == 0:
                return []
        want = min(n, need + picked.size)
        top = np.argpartition(-sims, want - 1)[:want] if want < sims.size else np.arange(n)
        top = top[np.lexsort((top, -sims[top]))]
        rows = top[~np.isin(top, picked)][:need]
        rows = self._within_budget(rows, int(g.chunk_words[picked].sum()))
        chunks = self.graph.chunks
        return [RetrievedChunk(chunks[r], float(sims[r]), "fallback") for r in rows]

    def _graph_chunks(
        self,
        rows: np.ndarray,
        qvec: np.ndarray,
        citing: dict[int, list[int]],
        parent: np.ndarray | None,
        toward: np.ndarray | None,
    ) -> list[RetrievedChunk]:
        """The picked evidence chunks with their best few citing edges' causal paths."""
        if rows.size == 0:
            return []
        g, lookup = self.compiled, self.lookup
        scores = matvec(g.chunk_emb[rows], qvec)
        parent, toward = _as_lists(parent), _as_lists(toward)
        return [
            RetrievedChunk(
                self.graph.chunks[r],
                float(score),
                "graph",
                tuple(lookup.path(e, parent, toward) for e in citing[r]),
                {"edges": len(citing[r])},
            )
            for r, score in zip(rows.tolist(), scores.tolist(), strict=True)
        ]

    @property
    def lookup(self) -> EdgeLookup:
        """Per-edge and per-chunk tables for provenance (``EdgeLookup``), made with each compiled
        graph (``compiled``'s setter)."""
        return self._lookup


def _as_lists(per_variable: np.ndarray | None) -> list[int] | None:
    """A per-variable array as a list, read many times by ``EdgeLookup.path`` (None stays None)."""
    return None if per_variable is None else per_variable.tolist()


def _kept_cone_edges(t: Traversal) -> tuple[np.ndarray, np.ndarray]:
    """The BFS subgraph's edges into the kept cones, each with its best cone's rank."""
    edge_rank = t.node_rank[t.sub_dst]
    keep = edge_rank < t.cones.groups.size
    return t.sub[keep], edge_rank[keep]


@dataclass(frozen=True, eq=False)
class EdgeLookup:
    """What provenance reads per result, made once per compiled graph: each edge's ends as Python
    lists (``path`` walks them; a list read costs a fraction of a numpy scalar read) and, per
    chunk row, the edges citing it (CSR, the inverse of ``ev_ptr``/``ev_chunk``), so that a query
    looks up the few chunks it returns instead of every selected edge's evidence."""

    compiled: CompiledGraph
    src: list[int]
    dst: list[int]
    chunk_ptr: np.ndarray
    chunk_edge: np.ndarray
    in_dst: np.ndarray  # each in-CSR entry's node (``toward_ends``)
    # Every variable's BFS hops for ``table_hops`` (``_UNREACHED`` where not reached), made
    # with the compiled graph when small enough (``HOP_TABLE_MAX``), else None.
    hop_table: np.ndarray | None = None
    table_hops: int = -1
    # (variable row, max_hops) -> the BFS hops from that variable alone (``hops``).
    hop_rows: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    # Held to check the cache's size and insert in one step: concurrent queries cannot overshoot.
    hop_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(
        cls, g: CompiledGraph, max_hops: int | None = None, previous: EdgeLookup | None = None
    ) -> EdgeLookup:
        """The tables of ``g``; with ``max_hops``, every variable's BFS row for it too, when
        the graph has at most ``HOP_TABLE_MAX`` of them squared (taken from ``previous`` when
        that was made for the same edges: an insert that changed none)."""
        ev_edge = np.repeat(np.arange(g.edge_src.size), np.diff(g.ev_ptr))
        ptr, edge, _ = csr(g.ev_chunk, ev_edge, ev_edge, g.chunk_emb.shape[0])
        table = None
        if (
            previous is not None
            and previous.compiled.out_ptr is g.out_ptr
            and previous.compiled.out_dst is g.out_dst
            and previous.table_hops == max_hops
        ):
            table = previous.hop_table
        elif max_hops is not None and g.n_vars * g.n_vars <= HOP_TABLE_MAX:
            table = all_source_hops(g.out_ptr, g.out_dst, max_hops, g.is_end)
            table[table < 0] = _UNREACHED
        hops = -1 if table is None else max_hops
        in_dst = np.repeat(np.arange(g.n_vars), np.diff(g.in_ptr))
        return cls(g, g.edge_src.tolist(), g.edge_dst.tolist(), ptr, edge, in_dst, table, hops)

    def hops(self, sources: np.ndarray, max_hops: int) -> np.ndarray:
        """``bounded_bfs``'s hop distances from ``sources`` (-1: not reached). A node's distance
        from several sources is the least of its distances from each alone: a shortest path
        through another source is longer than the one from that source. So each source's own
        BFS is kept (up to ``HOP_ROWS_MAX`` entries) and a query takes a minimum over rows."""
        if self.hop_table is not None and max_hops == self.table_hops:
            dist = self.hop_table[sources].min(axis=0)
            dist[dist == _UNREACHED] = -1
            return dist
        g = self.compiled
        rows = []
        for s in sources.tolist():
            row = self.hop_rows.get((s, max_hops))
            if row is None:
                row, _ = bounded_bfs(
                    g.out_ptr, g.out_dst, g.out_eid, np.array([s]), max_hops, stop=g.is_end
                )
                row = np.where(row < 0, _UNREACHED, row)
                with self.hop_lock:
                    if len(self.hop_rows) * row.size < HOP_ROWS_MAX:
                        self.hop_rows[(s, max_hops)] = row
            rows.append(row)
        dist = np.min(rows, axis=0)
        dist[dist == _UNREACHED] = -1
        return dist

    def path(self, edge: int, parent: Sequence[int], toward: Sequence[int] | None) -> CausalPath:
        """Matched node -> ... -> edge -> ... -> outcome, via BFS parents and the cone's next hops
        (``parent`` and ``toward`` per variable, as lists: ``_as_lists``)."""
        g, src, dst = self.compiled, self.src, self.dst
        edges: list[int] = [edge]
        node, seen = src[edge], set[int]()
        while parent[node] >= 0 and node not in seen:  # back to the matched node that reached it
            seen.add(node)
            edges.insert(0, parent[node])
            node = src[edges[0]]
        on_path = {src[e] for e in edges}
        node = dst[edge]
        while toward is not None and toward[node] >= 0 and node not in on_path:  # on to the end
            on_path.add(node)
            edges.append(toward[node])
            node = dst[edges[-1]]
        nodes = [src[edges[0]], *map(dst.__getitem__, edges)]
        return CausalPath(
            tuple(map(g.var_names.__getitem__, nodes)),
            tuple(map(g.edge_ids.__getitem__, edges)),
            tuple(map(g.mechanisms.__getitem__, edges)),
            tuple(map(g.effects.__getitem__, edges)) if g.effects else (),
        )

    def citing(
        self, rows: Sequence[int], edges: np.ndarray, ranks: np.ndarray
    ) -> dict[int, list[int]]:
        """Each chunk row's first ``MAX_PATHS_PER_CHUNK`` distinct ``edges`` citing it, best rank
        (``ranks``, one per edge), then confidence, first."""
        g = self.compiled
        rank = np.full(g.edge_src.size, -1, dtype=np.int64)
        rank[edges] = ranks
        chunks = np.array(sorted(set(rows)), dtype=np.int64)
        pos, owner = gather(self.chunk_ptr, chunks)
        edge = self.chunk_edge[pos]
        keep = rank[edge] >= 0
        edge, owner = edge[keep], owner[keep]
        order = np.lexsort((g.edge_conf_order[edge], rank[edge], owner))
        return _citing(rows, np.stack([chunks[owner[order]], edge[order]], axis=1))


def _citing(rows: Sequence[int], pairs: np.ndarray) -> dict[int, list[int]]:
    """Each chunk row's first ``MAX_PATHS_PER_CHUNK`` distinct edges, in the order of the
    ``(chunk, edge)`` pairs (one pass: they come in rank order)."""
    citing: dict[int, list[int]] = {int(r): [] for r in rows}
    for chunk, edge in pairs.tolist():
        edges = citing.get(chunk)
        if edges is not None and len(edges) < MAX_PATHS_PER_CHUNK and edge not in edges:
            edges.append(edge)
    return citing


def _chunk_id(rc: RetrievedChunk) -> str:
    """The stored chunk a result comes from (a passage or part names it as its parent)."""
    return rc.parent_id or rc.chunk.id


# Characters of a mechanism looked for in a passage: enough to be specific, short enough that a
# sentence cut by a passage boundary still matches on the passage holding its start.
_MECHANISM_PROBE = 60


def _vouched(rc: RetrievedChunk, paths: Sequence[CausalPath], stored: Chunk) -> bool:
    """Whether the graph vouches with ``paths`` for result ``rc`` of the ``stored`` chunk they
    cite: a whole chunk always; a passage when it holds a mechanism sentence of the paths (the
    statement the edge rests on), or when no part of the chunk does (an edge linked by search)."""
    if _chunk_id(rc) == rc.chunk.id:
        return True
    probes = [" ".join(m.split())[:_MECHANISM_PROBE] for p in paths for m in p.mechanisms]
    probes = [m for m in probes if m]
    passage, chunk = " ".join(rc.chunk.text.split()), " ".join(stored.text.split())
    return any(m in passage for m in probes) or not any(m in chunk for m in probes)
