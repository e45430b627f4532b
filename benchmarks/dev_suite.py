"""All development sets through every door: hcg as each user builds it, against the same-node baselines.

A *door* is one way a user builds hcg over their documents, each on its defaults:

- ``cli``: ``hcg build`` (hcg's structure-aware chunker);
- ``li-default``: LlamaIndex ``HCGIndex.from_documents(docs)`` on default ``Settings``;
- ``li-256``: LlamaIndex with ``transformations=[SentenceSplitter(chunk_size=256, chunk_overlap=32)]``;
- ``lc-default``: LangChain ``HCGRetriever.from_documents(docs)``;
- ``lc-presplit``: LangChain over ``RecursiveCharacterTextSplitter(chunk_size=1000,
  chunk_overlap=200, add_start_index=True)`` splits, passed with ``chunk=False``.

Every door is asked for 40 items on its defaults with no word budget; every system (hcg and the
baselines) is cut at 2,000 words and scored as ``hcg_core.eval`` does: gold-context recall where the
set carries gold sentences, lexical answer recall elsewhere (medical). Per door:

- ``hcg``: the door's retriever as built; ``hcg graph off``: the same with
  ``RetrievalConfig(use_graph=False)`` (the graph ablation); the CLI door also runs the paper's
  Stage 3 (``hcg paper``, filled to the budget as before);
- the framework's own retrievers with the same embedder (hcg's default MiniLM, wrapped as the
  framework's embedding class the adapters expose), each asked for 40, over (a) the nodes hcg
  indexed and (b) the user's own default nodes. LlamaIndex: ``BM25Retriever``
  (llama-index-retrievers-bm25) and a ``VectorStoreIndex`` retriever; (b) is what
  ``VectorStoreIndex.from_documents(docs)`` makes on default ``Settings``. LangChain: ``BM25Retriever``
  (langchain-community with rank_bm25, ``str.split`` tokens as a user gets it) and an
  ``InMemoryVectorStore`` retriever; (b) is the same LlamaIndex default nodes, so both frameworks are
  compared on the nodes a user's default vector index holds. The CLI door's (a) is the core's own
  BM25 and cosine top-k over its chunks;
- fixed anchors (once per set): ``bm25 200/40 top 10``, ``bm25 1200/200 top 5`` and
  ``vector 200/40`` (cosine top-k over 200/40-word windows, to the budget).

Margins of each door's hcg against the best BM25 anchor (target +3), vector 200/40 (+6) and the
framework's own BM25 and vector over the same and over the user's nodes (+3) come with 95%
paired-bootstrap intervals (2,000 resamples over questions, seed 0), as does graph on - off.

Documents: the corpus is read with ``hcg_core.corpus.load_inputs`` (what ``hcg build`` reads) and
handed to the frameworks as their ``Document`` with the same id and text, no metadata.

Caching: each door's build is persisted under ``--work/<set>/<door>/`` (persist dir or graph
directory) with its build time, and reused unless ``--rebuild``; builds run on the doors' own
defaults (no cache, so their times compare). Everything else embeds through one text -> vector
cache (seeded from the builds' stored chunk vectors, kept in ``--work/embed_cache``), so a text
that several doors or baselines hold, and each question, is embedded once.

Usage (data paths are arguments; nothing is read from outside them)::

    python benchmarks/dev_suite.py --work /tmp/dev \\
        --set medical=PATH/corpus.json:PATH/dev_questions.json \\
        --set psychology=PATH/all_abstracts.txt:PATH/qa.jsonl:PATH/sentences.jsonl \\
        --set business=...

Build timing (``--rounds N``): every door built N times into fresh folders, the order rotating
each round, without scoring; prints each build and the mean ratio to the CLI door.

Prints (and writes to ``--work/results.md``) one table per set, the margins and the build times;
writes ``--work/results.json`` with every per-question score.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hcg_core.blocks import embedding_texts
from hcg_core.cli import main as hcg_main
from hcg_core.config import RetrievalConfig
from hcg_core.corpus import chunk_documents, load_inputs
from hcg_core.embedders import default_embedder, embedder_from_name
from hcg_core.eval.baselines import (
    bm25_system,
    documents_from_chunks,
    fill_budget,
    vector_system,
    word_windows,
)
from hcg_core.eval.cli import hcg_systems
from hcg_core.eval.runner import evaluate, load_questions, load_sentences
from hcg_core.retrieval import CausalGraphRetriever

BUDGET = 2000  # every system is cut here
ASK = 40  # items every door and framework retriever is asked for
_MANY = 200  # "enough to reach the budget" for the anchors filled to it
RESAMPLES = 2000
CUTOFF = 0.2  # the cut-off docs/configuration.md documents for hcg scores
CALIBRATION_QUESTIONS = 200  # per set, for the score-calibration table
TARGETS = {"bm25": 3.0, "vector": 6.0, "own": 3.0}
DOORS = ("cli", "li-default", "li-256", "lc-default", "lc-presplit")
DOOR_TITLES = {
    "cli": "CLI `hcg build`",
    "li-default": "LlamaIndex `from_documents` (default Settings)",
    "li-256": "LlamaIndex `SentenceSplitter(256, 32)`",
    "lc-default": "LangChain `from_documents`",
    "lc-presplit": "LangChain pre-split (1000/200 chars, chunk=False)",
}
ANCHORS = ("bm25 200/40 top 10", "bm25 1200/200 top 5", "vector 200/40")

log = logging.getLogger("dev_suite")
TextSystem = Callable[[str], list[str]]


# ----------------------------------------------------------------------------- embedding cache


class CachedEmbedder:
    """A core embedder that embeds each distinct text once (documents and queries kept apart).

    Same ``name`` and ``dim`` as the wrapped model, so the adapters reuse vectors stored with it.
    Saved as ``vectors.npy`` + ``keys.json`` (blake2b of kind and text -> row), no pickle.
    """

    def __init__(self, inner: Any, folder: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.folder = folder
        self._rows: dict[str, int] = {}
        self._vectors: list[np.ndarray] = []
        self._saved = 0
        if folder is not None and (folder / "keys.json").exists():
            meta = json.loads((folder / "keys.json").read_text())
            if meta.get("name") == self.name:
                matrix = np.load(folder / "vectors.npy")
                if len(matrix) != meta.get("count"):
                    return  # the two files are not from the same save: start afresh
                self._rows = dict(meta["rows"])
                self._vectors = list(matrix)
                self._saved = len(self._vectors)

    @staticmethod
    def _key(kind: str, text: str) -> str:
        return hashlib.blake2b(f"{kind}\x00{text}".encode(), digest_size=12).hexdigest()

    def seed(self, chunks: Sequence[Any], vectors: np.ndarray | None) -> None:
        """Record vectors already made for ``chunks`` (a build's stored chunk vectors). A piece of
        a short block holds its block's vector, not its own text's (``blocks.embedding_texts``):
        only the texts embedded as themselves are recorded, so a baseline embeds its own."""
        if vectors is None or len(vectors) != len(chunks):
            return
        texts, rows = embedding_texts(chunks)
        vectors = np.asarray(vectors, dtype=np.float32)
        for c, row, vec in zip(chunks, rows.tolist(), vectors, strict=True):
            key = self._key("d", c.text)
            if texts[row] == c.text and key not in self._rows:
                self._rows[key] = len(self._vectors)
                self._vectors.append(vec)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key("d", t) for t in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self._rows)
        )
        if missing:
            made = np.asarray(self.inner.embed_documents(missing), dtype=np.float32)
            for text, vec in zip(missing, made, strict=True):
                self._rows[self._key("d", text)] = len(self._vectors)
                self._vectors.append(vec)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[self._rows[k]] for k in keys])

    def embed_query(self, text: str) -> np.ndarray:
        key = self._key("q", text)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = len(self._vectors)
            self._vectors.append(np.asarray(self.inner.embed_query(text), dtype=np.float32))
        return self._vectors[row]

    def save(self) -> None:
        if self.folder is None or len(self._vectors) == self._saved:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / "vectors.tmp.npy"
        np.save(tmp, np.stack(self._vectors))
        os.replace(tmp, self.folder / "vectors.npy")
        keys_tmp = self.folder / "keys.json.tmp"
        keys_tmp.write_text(
            json.dumps({"name": self.name, "count": len(self._vectors), "rows": self._rows})
        )
        os.replace(keys_tmp, self.folder / "keys.json")
        self._saved = len(self._vectors)


# ----------------------------------------------------------------------------- documents


def parse_set(text: str) -> tuple[str, list[Path]]:
    name, _, paths = text.partition("=")
    parts = [Path(p) for p in paths.split(":") if p]
    if not name or len(parts) not in (2, 3):
        raise SystemExit(f"--set NAME=CORPUS:QUESTIONS[:SENTENCES], got {text!r}")
    return name, parts


def core_documents(corpus: Path) -> list[Any]:
    docs, bad = load_inputs([corpus])
    if not docs:
        raise SystemExit(f"{corpus}: no documents ({bad})")
    return docs


def li_documents(docs: Sequence[Any]) -> list[Any]:
    from llama_index.core import Document

    return [Document(text=d.text, id_=d.id) for d in docs]


def lc_documents(docs: Sequence[Any]) -> list[Any]:
    from langchain_core.documents import Document

    return [Document(page_content=d.text, id=d.id) for d in docs]


def lc_presplit(docs: Sequence[Any]) -> list[Any]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=200, add_start_index=True
    )
    return splitter.split_documents(lc_documents(docs))


def li_user_nodes(docs: Sequence[Any]) -> list[Any]:
    """The nodes ``VectorStoreIndex.from_documents(docs)`` makes on default Settings."""
    from llama_index.core import Settings
    from llama_index.core.ingestion import run_transformations

    return run_transformations(li_documents(docs), Settings.transformations)


# ----------------------------------------------------------------------------- builds


def _timed(folder: Path, rebuild: bool, make: Callable[[Path], None]) -> float | None:
    """Build into ``folder`` unless a finished build is there; its build time (None: reused
    and no time was recorded)."""
    stamp = folder / "build.json"
    if stamp.exists() and not rebuild:
        return json.loads(stamp.read_text()).get("seconds")
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    make(folder)
    seconds = time.perf_counter() - t0
    tmp = folder / "build.json.tmp"
    tmp.write_text(json.dumps({"seconds": seconds}))
    os.replace(tmp, stamp)
    return seconds


def build_door(
    door: str,
    corpus: Path,
    docs: Sequence[Any],
    folder: Path,
    rebuild: bool,
    embedder_name: str | None = None,
) -> float:
    """Build ``door`` over the set's documents on its defaults (with ``embedder_name``'s model
    when given, as each door takes one); seconds (stored, when reused)."""

    def model(wrap: Callable[[Any], Any]) -> Any:
        return None if embedder_name is None else wrap(embedder_from_name(embedder_name))

    def cli(out: Path) -> None:
        args = ["build", str(corpus), "--out", str(out / "graph"), "--quiet", "--force"]
        if embedder_name:
            args += ["--embedder", embedder_name]
        if hcg_main(args) != 0:
            raise SystemExit(f"hcg build failed for {corpus}")

    def li(out: Path, transformations: list[Any] | None) -> None:
        from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

        index = HCGIndex.from_documents(
            li_documents(docs),
            transformations=transformations,
            embed_model=model(lambda e: HCGDefaultEmbedding(embedder=e)),
        )
        index.storage_context.persist(persist_dir=str(out / "storage"))

    def li_256(out: Path) -> None:
        from llama_index.core.node_parser import SentenceSplitter

        li(out, [SentenceSplitter(chunk_size=256, chunk_overlap=32)])

    def lc(out: Path, presplit: bool) -> None:
        from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

        embeddings = model(lambda e: HCGDefaultEmbeddings(embedder=e))
        if presplit:
            retriever = HCGRetriever.from_documents(
                lc_presplit(docs), chunk=False, embeddings=embeddings
            )
        else:
            retriever = HCGRetriever.from_documents(lc_documents(docs), embeddings=embeddings)
        retriever.save(out / "graph")

    makers: dict[str, Callable[[Path], None]] = {
        "cli": cli,
        "li-default": lambda out: li(out, None),
        "li-256": li_256,
        "lc-default": lambda out: lc(out, False),
        "lc-presplit": lambda out: lc(out, True),
    }
    seconds = _timed(folder, rebuild, makers[door])
    return float(seconds or 0.0)


def time_doors(
    name: str, paths: list[Path], args: argparse.Namespace, rounds: int
) -> dict[str, list[float]]:
    """Each door built ``rounds`` times into fresh folders, the door order rotating each round so
    that machine drift hits every door alike; every build's seconds, per door. The single timed
    builds of a normal run vary by up to a third between runs on a shared machine, too much to
    judge a 1.1x bound on one build each."""
    docs = core_documents(paths[0])
    times: dict[str, list[float]] = {d: [] for d in args.doors}
    for r in range(rounds):
        order = args.doors[r % len(args.doors) :] + args.doors[: r % len(args.doors)]
        for door in order:
            folder = Path(tempfile.mkdtemp(prefix=f"hcg-time-{door}-"))
            try:
                times[door].append(
                    build_door(door, paths[0], docs, folder / "b", True, args.embedder)
                )
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            log.info("%s: round %d, %s built in %.1f s", name, r + 1, door, times[door][-1])
    return times


def format_times(name: str, times: dict[str, list[float]], rounds: int) -> str:
    """Mean build seconds per door and the ratio to the CLI door's mean."""
    base = float(np.mean(times["cli"])) if times.get("cli") else 0.0
    lines = [
        f"#### {name}: build time, {rounds} rotating rounds",
        "",
        "| door | builds (s) | mean s | x CLI |",
        "|---|---|---|---|",
    ]
    for door, ts in times.items():
        mean = float(np.mean(ts))
        ratio = f"{mean / base:.2f}x" if base else "-"
        lines.append(f"| {door} | {', '.join(f'{t:.1f}' for t in ts)} | {mean:.1f} | {ratio} |")
    return "\n".join(lines) + "\n"


class Door:
    """A built door, loaded: its hcg systems (graph on/off), the nodes it indexed, and its
    framework (``core``, ``llamaindex`` or ``langchain``)."""

    def __init__(
        self, name: str, framework: str, systems: dict[str, Callable[[str], Any]], nodes: list[Any]
    ) -> None:
        self.name = name
        self.framework = framework
        self.systems = systems
        self.nodes = nodes  # LlamaIndex nodes or LangChain Documents or core chunks


def load_door(door: str, folder: Path, embedder: CachedEmbedder) -> tuple[Door, Any]:
    """The door's systems over its persisted build; also its core retriever (for seeding)."""
    if door == "cli":
        core = CausalGraphRetriever.load(folder / "graph", embedder=embedder)
        embedder.seed(core.graph.chunks, core.chunk_embeddings)
        off = core.with_config(use_graph=False)
        systems: dict[str, Callable[[str], Any]] = {
            "hcg": lambda q: core.retrieve(q, k=ASK),
            "hcg graph off": lambda q: off.retrieve(q, k=ASK),
        }
        # The paper's Stage 3 exactly, filled to the budget (as this suite reported it before).
        systems["hcg paper"] = hcg_systems(core, ["paper"], k=None, budget=BUDGET)["hcg paper"]
        return Door(door, "core", systems, list(core.graph.chunks)), core
    if door.startswith("li"):
        from llama_index.core import StorageContext, load_index_from_storage
        from llama_index.core.schema import MetadataMode

        from llama_index_hcg import HCGDefaultEmbedding

        embed = HCGDefaultEmbedding(embedder=embedder)
        index = load_index_from_storage(
            StorageContext.from_defaults(persist_dir=str(folder / "storage")), embed_model=embed
        )
        core = index.core_retriever
        embedder.seed(core.graph.chunks, core.chunk_embeddings)
        on = index.as_retriever(similarity_top_k=ASK)
        off = index.as_retriever(similarity_top_k=ASK, config=RetrievalConfig(use_graph=False))

        def texts(retriever: Any) -> TextSystem:
            return lambda q: [
                n.node.get_content(metadata_mode=MetadataMode.NONE) for n in retriever.retrieve(q)
            ]

        nodes = index.docstore.get_nodes([c.id for c in core.graph.chunks])
        return Door(
            door, "llamaindex", {"hcg": texts(on), "hcg graph off": texts(off)}, nodes
        ), core
    from langchain_core.documents import Document

    from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

    retriever = HCGRetriever.from_persist_dir(
        folder / "graph", embeddings=HCGDefaultEmbeddings(embedder=embedder), k=ASK
    )
    core = retriever.core
    embedder.seed(core.graph.chunks, core.chunk_embeddings)
    off = HCGRetriever(core=core.with_config(use_graph=False), k=ASK)

    def lc_texts(r: Any) -> TextSystem:
        return lambda q: [d.page_content for d in r.invoke(q)]

    nodes = [Document(page_content=c.text, id=c.id) for c in core.graph.chunks]
    systems = {"hcg": lc_texts(retriever), "hcg graph off": lc_texts(off)}
    return Door(door, "langchain", systems, nodes), core


# ----------------------------------------------------------------------------- baselines


def li_baselines(
    nodes: Sequence[Any], embedder: CachedEmbedder
) -> dict[str, Callable[[], TextSystem]]:
    """LlamaIndex's BM25Retriever and VectorStoreIndex retriever over ``nodes``, 40 each (made
    when called)."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import MetadataMode
    from llama_index.retrievers.bm25 import BM25Retriever

    from llama_index_hcg import HCGDefaultEmbedding

    nodes = [n.model_copy() for n in nodes]  # the framework may set fields (embedding) on them

    def texts(r: Any) -> TextSystem:
        return lambda q: [
            n.node.get_content(metadata_mode=MetadataMode.NONE) for n in r.retrieve(q)
        ]

    return {
        "bm25": lambda: texts(BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=ASK)),
        "vector": lambda: texts(
            VectorStoreIndex(
                nodes, embed_model=HCGDefaultEmbedding(embedder=embedder)
            ).as_retriever(similarity_top_k=ASK)
        ),
    }


def lc_baselines(
    docs: Sequence[Any], embedder: CachedEmbedder
) -> dict[str, Callable[[], TextSystem]]:
    """LangChain's BM25Retriever and an InMemoryVectorStore retriever over ``docs``, 40 each
    (made when called)."""
    import warnings

    from langchain_core.vectorstores import InMemoryVectorStore

    with warnings.catch_warnings():
        # langchain-community's import warns that it is being sunset; its BM25Retriever is
        # still what a LangChain user gets.
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever

    from langchain_hcg import HCGDefaultEmbeddings

    def texts(r: Any) -> TextSystem:
        return lambda q: [d.page_content for d in r.invoke(q)]

    return {
        "bm25": lambda: texts(BM25Retriever.from_documents(docs, k=ASK)),
        "vector": lambda: texts(
            InMemoryVectorStore.from_documents(
                docs, HCGDefaultEmbeddings(embedder=embedder)
            ).as_retriever(search_kwargs={"k": ASK})
        ),
    }


def anchors(chunks: Sequence[Any], embedder: CachedEmbedder) -> dict[str, TextSystem]:
    docs = documents_from_chunks(chunks)
    w200 = [w for d in docs for w in word_windows(d, 200, 40)]
    w1200 = [w for d in docs for w in word_windows(d, 1200, 200)]
    return {
        "bm25 200/40 top 10": bm25_system(w200, 10),
        "bm25 1200/200 top 5": bm25_system(w1200, 5),
        "vector 200/40": fill_budget(vector_system(w200, embedder, _MANY), BUDGET),
    }


def _as_lc(nodes: Sequence[Any]) -> list[Any]:
    from langchain_core.documents import Document
    from llama_index.core.schema import MetadataMode

    return [
        Document(page_content=n.get_content(metadata_mode=MetadataMode.NONE), id=n.node_id)
        for n in nodes
    ]


def _as_li(items: Sequence[Any]) -> list[Any]:
    from llama_index.core.schema import TextNode

    out = []
    for item in items:
        text = getattr(item, "page_content", None)
        if text is None:  # a core chunk
            out.append(TextNode(text=item.text, id_=item.id))
        else:
            out.append(TextNode(text=text, id_=item.id or f"n{len(out)}"))
    return out


def _texts_key(texts: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for t in texts:
        h.update(t.encode())
        h.update(b"\x00")
    return h.hexdigest()


# ----------------------------------------------------------------------------- one set


class Scorer:
    """Runs systems once each (a system shared by doors, e.g. a baseline over the same nodes, is
    run once) and keeps each one's per-question primary score."""

    def __init__(self, questions: Sequence[Any]) -> None:
        self.questions = list(questions)
        self.has_context = all(q.context for q in self.questions)
        self.scores: dict[str, list[float]] = {}
        self.p50: dict[str, float] = {}

    def run(self, key: str, system: Callable[[str], Any]) -> str:
        if key in self.scores:
            return key
        t0 = time.perf_counter()
        report = evaluate({key: system}, self.questions, budget=BUDGET)
        self.scores[key] = [
            (q.context_recall if self.has_context else q.recall) for q in report.scores[key]
        ]
        self.p50[key] = report.row(key).latency_p50_ms
        log.info(
            "  %-48s %.3f  (%.0f s)",
            key,
            float(np.mean(self.scores[key])),
            time.perf_counter() - t0,
        )
        return key


def run_set(
    name: str,
    paths: list[Path],
    args: argparse.Namespace,
    embedder: CachedEmbedder,
    questions: Sequence[Any],
    cores: dict[str, Any],
) -> dict[str, Any]:
    docs = core_documents(paths[0])
    scorer = Scorer(questions)
    work = args.work / name
    builds: dict[str, float] = {}
    for door in args.doors:
        log.info("%s: building %s", name, door)
        builds[door] = build_door(door, paths[0], docs, work / door, args.rebuild, args.embedder)
        log.info("%s: %s built in %.0f s", name, door, builds[door])
    if args.build_only:
        return {"builds": builds}
    user_nodes = li_user_nodes(docs)
    user_key = _texts_key([n.text for n in user_nodes])
    rows: dict[str, dict[str, str]] = {}
    chunk_counts: dict[str, int] = {}
    anchor_keys: dict[str, str] = {}
    vector_ran_as: dict[str, str] = {}
    for door in args.doors:
        loaded, core = load_door(door, work / door, embedder)
        if door == "cli":
            cores[name] = core  # for the score-calibration table
        chunk_counts[door] = len(loaded.nodes)
        log.info("%s / %s: %d nodes", name, door, len(loaded.nodes))
        if not anchor_keys:
            # Over the documents as hcg's chunker sees them (its words), whichever door is first.
            plain = anchors(chunk_documents(docs), embedder)
            anchor_keys = {a: scorer.run(a, s) for a, s in plain.items()}
        row = {s: scorer.run(f"{door}: {s}", system) for s, system in loaded.systems.items()}
        texts = [getattr(n, "text", None) or getattr(n, "page_content", "") for n in loaded.nodes]
        same = _texts_key(texts)
        if loaded.framework == "core":
            chunks = [c.text for c in loaded.nodes]
            emb = core.chunk_embeddings
            same_made = {
                "bm25": lambda chunks=chunks: bm25_system(chunks, ASK),
                "vector": lambda chunks=chunks, emb=emb: vector_system(
                    chunks, embedder, ASK, embeddings=emb
                ),
            }
            fw, user_made = "core", li_baselines(user_nodes, embedder)
            user_fw = "li"
        else:
            fw = "li" if loaded.framework == "llamaindex" else "lc"
            make = li_baselines if fw == "li" else lc_baselines
            same_made = make(loaded.nodes, embedder)
            user_made = make(user_nodes if fw == "li" else _as_lc(user_nodes), embedder)
            user_fw = fw
        for which, key, made, who in (
            ("same", same, same_made, fw),
            ("user", user_key, user_made, user_fw),
        ):
            # BM25 per framework (each tokenises its own way). The exact cosine top-k of the
            # core, of VectorStoreIndex (SimpleVectorStore) and of InMemoryVectorStore rank the
            # same texts by the same vectors identically, so each node set's is run once, by
            # the first framework that holds it (vector_ran_as says which).
            bm25_key = f"{who} bm25 @{key}"
            if bm25_key not in scorer.scores:
                scorer.run(bm25_key, made["bm25"]())
            vector_key = f"vector @{key}"
            if vector_key not in scorer.scores:
                scorer.run(vector_key, made["vector"]())
                vector_ran_as[vector_key] = who
            row[f"own bm25 {which} nodes"] = bm25_key
            row[f"own vector {which} nodes"] = vector_key
        rows[door] = row
        embedder.save()
    return {
        "questions": len(questions),
        "primary_metric": "context recall" if scorer.has_context else "answer recall",
        "nodes": chunk_counts,
        "user_default_nodes": len(user_nodes),
        "builds": builds,
        "anchors": anchor_keys,
        "vector_ran_as": vector_ran_as,
        "doors": rows,
        "scores": scorer.scores,
        "p50_ms": scorer.p50,
    }


# ----------------------------------------------------------------------------- report


def paired_interval(
    a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES
) -> tuple[float, float]:
    """95% paired-bootstrap interval of mean(a - b) over the same questions, in points.

    >>> lo, hi = paired_interval([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    >>> 0 <= lo <= hi <= 100
    True
    """
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, diff.size, (resamples, diff.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return 100 * float(lo), 100 * float(hi)


def margin(res: dict[str, Any], mine: str, theirs: str) -> dict[str, float]:
    a, b = res["scores"][mine], res["scores"][theirs]
    lo, hi = paired_interval(a, b)
    return {"points": 100 * (float(np.mean(a)) - float(np.mean(b))), "lo": lo, "hi": hi}


MARGINS = (
    ("best BM25 anchor", "bm25"),
    ("vector 200/40", "vector"),
    ("own BM25 same nodes", "own"),
    ("own vector same nodes", "own"),
    ("own BM25 user nodes", "own"),
    ("own vector user nodes", "own"),
)


def margins(res: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    scores = res["scores"]
    best = max(ANCHORS[:2], key=lambda k: float(np.mean(scores[res["anchors"][k]])))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for door, row in res["doors"].items():
        others = {
            "best BM25 anchor": res["anchors"][best],
            "vector 200/40": res["anchors"]["vector 200/40"],
            "own BM25 same nodes": row["own bm25 same nodes"],
            "own vector same nodes": row["own vector same nodes"],
            "own BM25 user nodes": row["own bm25 user nodes"],
            "own vector user nodes": row["own vector user nodes"],
            "graph on - off": row["hcg graph off"],
        }
        out[door] = {label: margin(res, row["hcg"], key) for label, key in others.items()}
        out[door]["best BM25 anchor"]["anchor"] = best  # type: ignore[assignment]
    return out


def _cell(m: dict[str, Any], target: float | None) -> str:
    text = f"{m['points']:+.1f} [{m['lo']:+.1f}, {m['hi']:+.1f}]"
    if target is not None and m["points"] < target:
        text += " ✗"
    return text


def format_set(name: str, res: dict[str, Any]) -> str:
    scores = res["scores"]
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    lines = [
        f"### {name}: {res['questions']} questions, {res['primary_metric']} at {BUDGET:,} words "
        f"(every system asked for {ASK}; user-default LlamaIndex nodes: {res['user_default_nodes']})",
        "",
        "Anchors: "
        + ", ".join(f"{a} {mean[res['anchors'][a]]:.3f}" for a in ANCHORS if a in res["anchors"]),
        "",
        "| door | nodes | hcg | graph off | own BM25 same nodes | own vector same nodes | "
        "own BM25 user nodes | own vector user nodes | hcg p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for door, row in res["doors"].items():
        paper = f" (paper {mean[row['hcg paper']]:.3f})" if "hcg paper" in row else ""
        lines.append(
            f"| {DOOR_TITLES[door]} | {res['nodes'][door]} | **{mean[row['hcg']]:.3f}**{paper} | "
            f"{mean[row['hcg graph off']]:.3f} | {mean[row['own bm25 same nodes']]:.3f} | "
            f"{mean[row['own vector same nodes']]:.3f} | {mean[row['own bm25 user nodes']]:.3f} | "
            f"{mean[row['own vector user nodes']]:.3f} | {res['p50_ms'][row['hcg']]:.0f} |"
        )
    lines += [
        "",
        f"Margins of hcg, points [95% paired bootstrap]; ✗ = short of the target "
        f"(+{TARGETS['bm25']:.0f} BM25, +{TARGETS['vector']:.0f} vector 200/40, "
        f"+{TARGETS['own']:.0f} the framework's own):",
        "",
        "| door | vs best BM25 anchor | vs vector 200/40 | vs own BM25 same nodes | "
        "vs own vector same nodes | vs own BM25 user nodes | vs own vector user nodes | "
        "graph on - off | build s (x CLI) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cli_build = res["builds"].get("cli") or 0.0
    for door, m in res["margins"].items():
        cells = [_cell(m[label], TARGETS[kind]) for label, kind in MARGINS]
        cells.append(_cell(m["graph on - off"], None))
        b = res["builds"].get(door) or 0.0
        ratio = f" ({b / cli_build:.2f}x)" if cli_build else ""
        cells.append(f"{b:.0f}{ratio}")
        lines.append(f"| {DOOR_TITLES[door]} | " + " | ".join(cells) + " |")
    best = next(iter(res["margins"].values()))["best BM25 anchor"]["anchor"]
    lines.append("")
    lines.append(f"Best BM25 anchor on this set: {best}.")
    return "\n".join(lines) + "\n"


def calibrate(cores: dict[str, Any], question_sets: dict[str, Any]) -> dict[str, Any]:
    """The CLI door's top score for its own set's questions and for the other sets' (off-topic
    there), first CALIBRATION_QUESTIONS of each."""
    out = {}
    for name, core in cores.items():
        own = [q.question for q in question_sets[name][:CALIBRATION_QUESTIONS]]
        foreign = [
            q.question
            for other, qs in question_sets.items()
            if other != name
            for q in qs[:CALIBRATION_QUESTIONS]
        ]
        top = (
            [core.retrieve(q, k=1).chunks for q in own],
            [core.retrieve(q, k=1).chunks for q in foreign],
        )
        out[name] = {
            "own": [c[0].score for c in top[0] if c],
            "foreign": [c[0].score for c in top[1] if c],
        }
    return out


def format_calibration(calibration: dict[str, Any]) -> str:
    lines = [
        f"### top score of the CLI door: own questions vs other sets' (cut-off {CUTOFF})",
        "",
        "| corpus | own p10 | own p50 | own >= cut-off | others' p50 | others' p90 | "
        "others' < cut-off |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, cal in calibration.items():
        own, other = np.asarray(cal["own"]), np.asarray(cal["foreign"])
        if other.size == 0 or own.size == 0:
            continue
        lines.append(
            f"| {name} | {np.percentile(own, 10):.2f} | {np.percentile(own, 50):.2f} | "
            f"{(own >= CUTOFF).mean():.0%} | {np.percentile(other, 50):.2f} | "
            f"{np.percentile(other, 90):.2f} | {(other < CUTOFF).mean():.0%} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], type=parse_set)
    parser.add_argument("--work", type=Path, required=True, help="builds, cache and results")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per set")
    parser.add_argument("--rebuild", action="store_true", help="rebuild doors already in --work")
    parser.add_argument(
        "--doors", default=",".join(DOORS), help=f"comma-separated subset of {', '.join(DOORS)}"
    )
    parser.add_argument("--build-only", action="store_true", help="build (and time) the doors only")
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="no scoring: build every door this many times into fresh folders, rotating the "
        "order each round, and print mean build times and ratios to the CLI door",
    )
    parser.add_argument(
        "--results",
        default="results",
        help="stem of the result files in --work (NAME.json, NAME.md); one per process when sets "
        "run in parallel processes",
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        type=Path,
        default=None,
        help="no run: merge these result JSON files (from parallel runs) into --results",
    )
    parser.add_argument(
        "--embedder",
        default=None,
        help="build every door with this embedder (hcg build --embedder; default the library's); "
        "the vector baselines use the same one",
    )
    args = parser.parse_args(argv)
    if args.combine:
        return combine(args)
    if not args.set:
        parser.error("at least one --set NAME=CORPUS:QUESTIONS[:SENTENCES] is needed")
    if args.rounds < 0:
        parser.error(f"--rounds must be at least 1 (0: off), got {args.rounds}")
    args.doors = [d for d in args.doors.split(",") if d]
    unknown = [d for d in args.doors if d not in DOORS]
    if unknown:
        raise SystemExit(f"unknown door(s) {unknown}; choose from {', '.join(DOORS)}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    for noisy in ("hcg_core", "llama_index_hcg", "langchain_hcg", "bm25s", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.rounds:  # timing only: no embedder cache, no questions
        blocks = [
            format_times(name, time_doors(name, paths, args, args.rounds), args.rounds)
            for name, paths in args.set
        ]
        print("\n".join(blocks))
        return 0
    inner = embedder_from_name(args.embedder) if args.embedder else default_embedder()
    # One cache per result stem: runs made in parallel processes never write the same files.
    cache = args.work / "embed_cache" / inner.name
    embedder = CachedEmbedder(inner, cache if args.results == "results" else cache / args.results)
    question_sets = {
        name: load_questions(
            paths[1],
            limit=args.limit,
            sentences=load_sentences(paths[2]) if len(paths) == 3 else None,
        )
        for name, paths in args.set
    }
    results: dict[str, Any] = {}
    text: list[str] = []
    cores: dict[str, Any] = {}
    for name, paths in args.set:
        res = run_set(name, paths, args, embedder, question_sets[name], cores)
        results[name] = res
        if args.build_only:
            continue
        res["margins"] = margins(res)
        block = format_set(name, res)
        text.append(block)
        print(block)
        sys.stdout.flush()
    if len(cores) > 1:  # the other sets' questions are the off-topic ones
        calibration = calibrate(cores, question_sets)
        for name, cal in calibration.items():
            results[name]["calibration"] = cal
        block = format_calibration(calibration)
        text.append(block)
        print(block)
    command = "python benchmarks/dev_suite.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    write_results(args.work, args.results, [command], results, text)
    return 0


def write_results(
    work: Path, stem: str, commands: list[str], results: dict[str, Any], text: list[str]
) -> None:
    work.mkdir(parents=True, exist_ok=True)
    for fname, content in (
        (f"{stem}.json", json.dumps({"commands": commands, "sets": results}, indent=1)),
        (f"{stem}.md", "".join(f"`{c}`\n\n" for c in commands) + "\n".join(text)),
    ):
        tmp = work / (fname + ".tmp")
        tmp.write_text(content)
        os.replace(tmp, work / fname)


def combine(args: argparse.Namespace) -> int:
    """Merge result files of runs made in parallel (one set each) into one, tables remade."""
    commands: list[str] = []
    results: dict[str, Any] = {}
    for path in args.combine:
        data = json.loads(path.read_text())
        commands += data["commands"]
        for name, res in data["sets"].items():
            if name not in results:
                results[name] = res
                continue
            # The same set run for other doors in another process: the doors' rows, scores and
            # builds join (anchors and shared baselines are the same systems over the same text).
            mine = results[name]
            for key in ("doors", "nodes", "builds", "scores", "p50_ms", "vector_ran_as"):
                mine[key] = {**res.get(key, {}), **mine.get(key, {})}
    for res in results.values():
        if "doors" in res:
            res["doors"] = {d: res["doors"][d] for d in DOORS if d in res["doors"]}
            res["margins"] = margins(res)
    text = [format_set(name, res) for name, res in results.items() if "margins" in res]
    print("\n".join(text))
    write_results(args.work, args.results, commands, results, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
