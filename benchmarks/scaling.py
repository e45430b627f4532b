"""Offline build and query cost at about 0.2M, 0.5M and 1M words (issue 15, item 1).

Corpus: the dev corpora given on the command line, concatenated (GraphRAG-Bench medical
``corpus.json`` plus HolisQA ``all_abstracts.txt`` files, one abstract per line: about 0.6M words).
Documents are shuffled with a fixed seed so that every size mixes the domains in the same
proportions, and each size is a prefix of the next. Past the real corpus (the 1M size) the
documents repeat with light perturbation: each repeated document has its sentences in a
seeded random order, so its chunks (and content-hash ids) are new while its vocabulary and its
causal statements are real. That is the honest stand-in for more text of the same domains: the
offline builder sees the same statements again, so hub edges gather support as they would on a
larger corpus of the same kind (the case that exposes per-edge costs above linear).

Per size it runs, each in its own process under ``/usr/bin/time -v`` (peak RSS of that process):

* ``hcg build`` (offline pipeline, the chosen embedder, default chunking and tier);
* a query run: load the graph directory, then time the default retriever and a LlamaIndex
  ``VectorStoreIndex`` retriever given the same stored vectors (nothing re-embedded), queries
  alternating between the two so machine noise hits both alike.

It prints a table, the log-log slope of build time against words (the growth exponent), the
checks against the targets (exponent <= 1.15, peak RSS at 1M < 3 GB, query p50 <= 1.5x the
VectorStoreIndex, metrics and dimensions within the tier's caps), and with ``--doc`` writes the
table into that markdown file between ``<!-- scaling:EMBEDDER:start/end -->`` markers.

Usage::

    python benchmarks/scaling.py --corpus MEDICAL/corpus.json \
        --corpus HOLISQA/psychology/all_abstracts.txt --corpus HOLISQA/business/all_abstracts.txt \
        --questions MEDICAL/dev_questions.json --work /tmp/hcg-scaling \
        [--sizes 200000 500000 1000000] [--embedder hashing] [--queries 200] [--doc docs/performance.md]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (200_000, 500_000, 1_000_000)
# Medical corpus entries are whole books; cut them into documents of about this many words (at
# sentence ends) so that a size prefix does not depend on one huge document.
DOC_WORDS = 1_000
SEED = 0
TARGET_EXPONENT = 1.15
TARGET_RSS_GB_AT_1M = 3.0
TARGET_P50_RATIO = 1.5
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# ------------------------------------------------------------------ corpus


def read_documents(paths: list[str]) -> list[str]:
    """Document texts: JSON lists of objects (``context``/``text``) or text files, one per line."""
    docs: list[str] = []
    for p in paths:
        path = Path(p)
        if path.suffix == ".json":
            items = json.loads(path.read_text(encoding="utf-8"))
            texts = [str(it.get("context") or it.get("text") or "") for it in items]
        else:
            texts = path.read_text(encoding="utf-8").splitlines()
        for text in texts:
            docs.extend(_pieces(text.strip()))
    return [d for d in docs if d]


def _pieces(text: str) -> list[str]:
    """A long text as documents of about ``DOC_WORDS`` words, cut at sentence ends."""
    if len(text.split()) <= DOC_WORDS:
        return [text]
    out, cur, n = [], [], 0
    for sentence in _SENTENCE_END.split(text):
        cur.append(sentence)
        n += len(sentence.split())
        if n >= DOC_WORDS:
            out.append(" ".join(cur))
            cur, n = [], 0
    if cur:
        out.append(" ".join(cur))
    return out


def perturbed(text: str, rng: random.Random) -> str:
    """The document with its sentences in a seeded random order (new chunks, same statements)."""
    sentences = _SENTENCE_END.split(text)
    if len(sentences) > 1:
        rng.shuffle(sentences)
        if " ".join(sentences) == text:  # two sentences that happened to stay: swap them
            sentences.reverse()
    return " ".join(sentences)


def sized_corpus(docs: list[str], words: int, *, seed: int = SEED) -> list[str]:
    """A prefix of the shuffled documents holding ``words`` words, repeats perturbed past the end."""
    order = list(docs)
    random.Random(seed).shuffle(order)
    out: list[str] = []
    total, rep = 0, 0
    rng = random.Random(seed + 1)
    while total < words:
        for text in order:
            if total >= words:
                break
            doc = text if rep == 0 else perturbed(text, rng)
            out.append(doc)
            total += len(doc.split())
        rep += 1
    return out


def write_jsonl(docs: list[str], path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for i, text in enumerate(docs):
            f.write(json.dumps({"id": f"d{i:06d}", "text": text}, ensure_ascii=False) + "\n")
    return sum(len(d.split()) for d in docs)


# ------------------------------------------------------------------ measuring


def timed(cmd: list[str], log: Path) -> tuple[float, float]:
    """Run ``cmd`` under GNU time; return (wall seconds, peak RSS in GB). Raises on failure."""
    env = dict(os.environ, PYTHONPATH=str(REPO), ORT_DISABLE_TELEMETRY="1")
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *cmd], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}; see {log}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    rss_gb = int(m.group(1)) / 1024**2 if m else float("nan")
    return wall, rss_gb


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def query_run(graph_dir: str, questions: str, n_queries: int, k: int, out: str) -> None:
    """(Subprocess) time the default retriever and a VectorStoreIndex retriever on one graph."""
    import resource

    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from hcg_core.eval.runner import load_questions
    from hcg_core.retrieval import CausalGraphRetriever
    from llama_index_hcg import HCGDefaultEmbedding

    hcg = CausalGraphRetriever.load(graph_dir)
    qs = [q.question for q in load_questions(questions, limit=n_queries)]
    hcg.retrieve(qs[0], k=k)  # warm: the hybrid ranker's BM25 index is built on first use
    # Peak RSS of serving hcg alone (the graph loaded, one query run), before the baseline's
    # index exists in the same process (ru_maxrss is in KiB on Linux).
    hcg_rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    embed_model = HCGDefaultEmbedding(embedder=hcg.embedder)
    nodes = [
        TextNode(id_=c.id, text=c.text, embedding=hcg.chunk_embeddings[i].tolist())
        for i, c in enumerate(hcg.graph.chunks)
    ]
    vector = VectorStoreIndex(nodes, embed_model=embed_model).as_retriever(similarity_top_k=k)
    vector.retrieve(qs[0])
    t_hcg, t_vec = [], []
    for q in qs:
        t0 = time.perf_counter()
        vector.retrieve(q)
        t1 = time.perf_counter()
        hcg.retrieve(q, k=k)
        t2 = time.perf_counter()
        t_vec.append((t1 - t0) * 1000)
        t_hcg.append((t2 - t1) * 1000)
    Path(out).write_text(
        json.dumps(
            {
                "hcg_rss_gb": hcg_rss_gb,
                "queries": len(qs),
                "chunks": len(nodes),
                "hcg_p50": float(np.percentile(t_hcg, 50)),
                "hcg_p95": float(np.percentile(t_hcg, 95)),
                "vec_p50": float(np.percentile(t_vec, 50)),
                "vec_p95": float(np.percentile(t_vec, 95)),
            }
        )
    )


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(x): the growth exponent."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


# ------------------------------------------------------------------ main


def run(args: argparse.Namespace) -> list[dict]:
    from hcg_core.config import tier_caps
    from hcg_core.store import current_dir

    work = Path(args.work)
    docs = read_documents(args.corpus)
    print(f"corpus: {len(docs)} documents, {sum(len(d.split()) for d in docs):,} words", flush=True)
    caps = tier_caps(args.tier)
    rows = []
    for size in args.sizes:
        tag = f"{args.embedder}-{size // 1000}k"
        corpus = work / f"corpus-{size // 1000}k.jsonl"
        words = write_jsonl(sized_corpus(docs, size), corpus)
        graph = work / f"graph-{tag}"
        build_cmd = [
            sys.executable,
            "-m",
            "hcg_core.cli",
            "build",
            str(corpus),
            "--out",
            str(graph),
            "--quiet",
            "--force",
            "--tier",
            args.tier,
            "--embedder",
            args.embedder,
        ]
        print(f"[{tag}] building {words:,} words ...", flush=True)
        build_s, build_rss = timed(build_cmd, work / f"build-{tag}.log")
        manifest = json.loads((current_dir(graph) / "manifest.json").read_text())  # format 2
        counts = manifest["counts"]
        q_out = work / f"query-{tag}.json"
        query_cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--query-run",
            str(graph),
            args.questions,
            str(args.queries),
            str(args.k),
            str(q_out),
        ]
        print(f"[{tag}] built in {build_s:.0f} s, peak {build_rss:.2f} GB; querying", flush=True)
        _, query_rss = timed(query_cmd, work / f"query-{tag}.log")
        q = json.loads(q_out.read_text())
        row = {
            "words": words,
            "chunks": counts["chunks"],
            "edges": counts["edges"],
            "metrics": counts["metrics"],
            "dimensions": counts["dimensions"],
            "build_s": build_s,
            "build_rss_gb": build_rss,
            "disk_mb": dir_bytes(graph) / 1e6,
            "query_rss_gb": query_rss,
            **q,
            "within_caps": counts["metrics"] <= caps.max_metrics
            and counts["dimensions"] <= caps.max_dimensions,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict], embedder: str) -> str:
    lines = [
        f"Embedder `{embedder}`; offline build, default chunking (200/40 words), tier M; "
        f"{rows[0]['queries']} queries, k=10.",
        "",
        "| words | chunks | edges | metrics / dims | build s | build peak RSS | on disk | "
        "serving peak RSS (hcg alone / with baseline) | hcg p50 / p95 ms | "
        "VectorStoreIndex p50 / p95 ms | p50 ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['words']:,} | {r['chunks']:,} | {r['edges']:,} | {r['metrics']} / "
            f"{r['dimensions']} | {r['build_s']:.0f} | {r['build_rss_gb']:.2f} GB | "
            f"{r['disk_mb']:.0f} MB | {r.get('hcg_rss_gb', float('nan')):.2f} / "
            f"{r['query_rss_gb']:.2f} GB | {r['hcg_p50']:.1f} / "
            f"{r['hcg_p95']:.1f} | {r['vec_p50']:.1f} / {r['vec_p95']:.1f} | "
            f"{r['hcg_p50'] / r['vec_p50']:.2f}x |"
        )
    return "\n".join(lines)


def verdict(rows: list[dict]) -> list[str]:
    exp = slope([r["words"] for r in rows], [r["build_s"] for r in rows])
    last = rows[-1]
    ratio = last["hcg_p50"] / last["vec_p50"]
    # hcg's own peak: the build, and serving without the baseline's index in the process.
    peak = max(last["build_rss_gb"], last.get("hcg_rss_gb", last["query_rss_gb"]))
    return [
        f"build-time exponent (log-log slope over {len(rows)} sizes): {exp:.2f} "
        f"(target <= {TARGET_EXPONENT}: {'met' if exp <= TARGET_EXPONENT else 'MISSED'})",
        f"peak RSS at {last['words']:,} words: {peak:.2f} GB "
        f"(target < {TARGET_RSS_GB_AT_1M} GB: {'met' if peak < TARGET_RSS_GB_AT_1M else 'MISSED'})",
        f"query p50 at {last['words']:,} words: {ratio:.2f}x the VectorStoreIndex "
        f"(target <= {TARGET_P50_RATIO}x: {'met' if ratio <= TARGET_P50_RATIO else 'MISSED'})",
        "metrics and dimensions within the tier's caps at every size: "
        + ("met" if all(r["within_caps"] for r in rows) else "MISSED"),
    ]


def write_doc(doc: Path, embedder: str, text: str) -> None:
    start, end = f"<!-- scaling:{embedder}:start -->", f"<!-- scaling:{embedder}:end -->"
    body = doc.read_text(encoding="utf-8") if doc.exists() else ""
    block = f"{start}\n{text}\n{end}"
    if start in body and end in body:
        body = body[: body.index(start)] + block + body[body.index(end) + len(end) :]
    else:
        body = body.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(body, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--query-run":
        graph, questions, n, k, out = argv[1:6]
        query_run(graph, questions, int(n), int(k), out)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True, help="corpus file (repeat)")
    ap.add_argument("--questions", required=True, help="questions file (hcg eval format)")
    ap.add_argument("--work", required=True, help="folder for corpora, graphs and logs")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    ap.add_argument("--embedder", default="default", help="'default' (MiniLM) or 'hashing'")
    ap.add_argument("--tier", default="M")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--doc", help="markdown file to write the table into")
    args = ap.parse_args(argv)
    rows = run(args)
    text = table(rows, args.embedder)
    lines = verdict(rows)
    print("\n" + text + "\n")
    print("\n".join(lines))
    if args.doc:
        write_doc(Path(args.doc), args.embedder, text + "\n\n" + "\n".join(f"- {v}" for v in lines))


if __name__ == "__main__":
    main()
