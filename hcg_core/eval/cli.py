"""``hcg eval``: measure a built graph directory against baselines on a QA file.

``hcg_core.cli`` wires it as ``add_eval_arguments(subparser)`` then ``run_eval(args) -> exit code``.
Modes: ``hybrid`` (default mode), ``hybrid-nograph`` (its ablation), ``paper`` (Stage 3 exactly);
baselines (all at the same word budget): vector top-k with the graph's embedder and BM25 over the
graph's own chunks, BM25 over plain 200/40 word windows of the same documents, and BM25 and vector
top-k over a re-chunking (the paper's NaiveRAG 1,200/200 top 5 by default). BM25 is the library's own
(``hcg_core.retrieval.lexical``, the bm25s "lucene" scoring), so no extra package is needed.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import replace
from functools import partial
from typing import Any

from ..arg_types import add_embedder_arguments, corpus_not_graph_hint
from ..config import DEFAULT_PASSAGE_WORDS
from ..errors import ConfigError, HCGError
from .baselines import bm25_system, documents_from_chunks, fill_budget, vector_system, word_windows
from .metric import DEFAULT_BUDGET
from .runner import System, evaluate, load_questions, load_sentences

MODES = ("hybrid", "paper", "hybrid-nograph")
DEFAULT_MODES = "hybrid,paper,hybrid-nograph"
DEFAULT_BASELINE_CHUNK_WORDS = 1200
DEFAULT_BASELINE_CHUNK_OVERLAP = 200
DEFAULT_BASELINE_K = 5  # the paper's NaiveRAG: top 5 chunks of 1,200 words
# The common plain baseline (and HolisQA's reference): BM25 over 200-word windows, 40 overlap.
PLAIN_CHUNK_WORDS, PLAIN_CHUNK_OVERLAP = 200, 40
_MANY = 200  # "enough chunks to reach the budget" when no --k is given
# A budget of at least this share of the corpus's words reads so much of it that recall says
# little (the user trial: 2,000 of 2,285 words, every system about 1.0): warned, more softly
# than a budget of the whole corpus, where every system can return everything.
BUDGET_SHARE_WARNING = 0.5
# Asked of every system once, untimed, before the timed run (warm_up).
WARM_UP_QUESTION = "what causes what"


def add_eval_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``hcg eval``'s arguments to ``parser`` (a subparser of the main CLI)."""
    parser.add_argument("directory", help="a graph directory written by `hcg build`")
    parser.add_argument(
        "--questions",
        required=True,
        help="JSON list or JSON Lines of {question, answer, ...}; gold 'context' (text or list) "
        "or 'context_sentence_ids' (with --sentences) adds context recall",
    )
    parser.add_argument(
        "--sentences",
        help="JSON Lines of {sentence_id, text}: resolves the questions' context_sentence_ids",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        help="words of context read per question (default %(default)s); warned when it is at "
        "least half the corpus",
    )
    parser.add_argument(
        "--k",
        type=int,
        help="chunks per system (default: as many as fill the word budget)",
    )
    parser.add_argument(
        "--passage-words",
        type=int,
        default=DEFAULT_PASSAGE_WORDS,
        help=f"hybrid modes: words per packed passage (default {DEFAULT_PASSAGE_WORDS}; 0: whole chunks)",
    )
    parser.add_argument(
        "--modes",
        default=DEFAULT_MODES,
        help=f"comma list of {', '.join(MODES)} (default %(default)s)",
    )
    rechunked = "of the re-chunked baselines"
    for flag, default, text in (
        ("--baseline-chunk-words", DEFAULT_BASELINE_CHUNK_WORDS, f"words per chunk {rechunked}"),
        ("--baseline-chunk-overlap", DEFAULT_BASELINE_CHUNK_OVERLAP, f"overlap words {rechunked}"),
        ("--baseline-k", DEFAULT_BASELINE_K, f"chunks {rechunked}, then cut to the budget"),
    ):
        parser.add_argument(flag, type=int, default=default, help=f"{text} (default %(default)s)")
    parser.add_argument("--no-baselines", action="store_true", help="only the HCG modes")
    parser.add_argument(
        "--ablations",
        action="store_true",
        help="also the paper's ablations: NaiveRAG (vector top 5 over 1,200/200 chunks), "
        "in-context (the whole corpus, in order) and nodes-only (edge triples, no evidence text)",
    )
    parser.add_argument("--limit", type=int, help="first N questions only (default: all)")
    add_embedder_arguments(parser, "default: the one named in the graph's manifest")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--out", help="also write the JSON report (per question) here")
    return parser


def parse_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ConfigError(
            f"unknown mode(s) {bad or text!r}; use a comma list of {', '.join(MODES)}"
        )
    return modes


def hcg_systems(
    retriever: Any, modes: list[str], *, k: int | None, budget: int
) -> dict[str, System]:
    """Systems for an ``CausalGraphRetriever``: each mode as ``question -> RetrievalResult``.

    Each mode is the retriever itself with one setting changed (``with_config``), so what is
    measured is exactly what a user gets; without ``k`` every mode fills the word budget.
    """
    settings = {
        "hybrid": {"mode": "hybrid", "use_graph": True},
        "hybrid-nograph": {"mode": "hybrid", "use_graph": False},
        "paper": {"mode": "paper"},
    }
    systems: dict[str, System] = {}
    for mode in modes:
        clone = retriever.with_config(word_budget=None if k else budget, **settings[mode])
        systems[f"hcg {mode}"] = partial(clone.retrieve, k=k or _MANY)
    return systems


def _windows(docs: list[str], words: int, overlap: int) -> list[str]:
    """Every document cut into plain word windows (``word_windows``), in order."""
    return [w for doc in docs for w in word_windows(doc, words, overlap)]


def baseline_systems(retriever: Any, args: argparse.Namespace) -> dict[str, System]:
    """Vector top-k and BM25 over the graph's chunks and over a re-chunking, at the budget."""
    texts = [c.text for c in retriever.graph.chunks]
    k = args.k or _MANY
    out: dict[str, System] = {
        "vector top-k (same chunks)": vector_system(
            texts, retriever.embedder, k, embeddings=retriever.chunk_embeddings
        ),
        "bm25 (same chunks)": bm25_system(texts, k),
    }
    docs = documents_from_chunks(retriever.graph.chunks)
    plain = f"{PLAIN_CHUNK_WORDS}/{PLAIN_CHUNK_OVERLAP}"
    out[f"bm25 {plain}"] = bm25_system(_windows(docs, PLAIN_CHUNK_WORDS, PLAIN_CHUNK_OVERLAP), k)
    rechunked = _windows(docs, args.baseline_chunk_words, args.baseline_chunk_overlap)
    chunking = f"{args.baseline_chunk_words}/{args.baseline_chunk_overlap} top {args.baseline_k}"
    out[f"bm25 {chunking}"] = bm25_system(rechunked, args.baseline_k)
    out[f"vector {chunking}"] = vector_system(rechunked, retriever.embedder, args.baseline_k)
    if args.k is None:
        out = {name: fill_budget(s, args.budget) for name, s in out.items()}
    return out


def ablation_systems(retriever: Any, args: argparse.Namespace) -> dict[str, System]:
    """The paper's ablations (section 6): NaiveRAG, in-context, and nodes-only context."""
    docs = documents_from_chunks(retriever.graph.chunks)
    windows = _windows(docs, DEFAULT_BASELINE_CHUNK_WORDS, DEFAULT_BASELINE_CHUNK_OVERLAP)
    corpus = "\n\n".join(docs)
    return {
        "naive-rag vector 1200/200 top 5": vector_system(
            windows, retriever.embedder, DEFAULT_BASELINE_K
        ),
        "in-context (whole corpus)": lambda question: [corpus],
        "hcg nodes-only": lambda question: ["\n".join(retriever.graph_triples(question))],
    }


def warm_up(systems: dict[str, System]) -> None:
    """Call each system once, untimed: what loads on first use (the embedder's model session,
    an index's lazily built weights) would otherwise be timed on the first question, a large
    share of p95 (and of p50) when the questions are few or --no-baselines leaves nothing to
    load it before."""
    for system in systems.values():
        system(WARM_UP_QUESTION)


def budget_warning(budget: int, corpus_words: int) -> str | None:
    """What to tell a user whose budget reads most of the corpus, or None.

    >>> budget_warning(2000, 1500)[:60]
    '--budget 2,000 words is at least the corpus size (1,500 word'
    >>> budget_warning(2000, 10_000) is None
    True
    """
    if budget >= corpus_words:
        return (
            f"--budget {budget:,} words is at least the corpus size ({corpus_words:,} words): "
            "every system can return the whole corpus, so every recall is about 1.0 and the "
            "comparison says nothing; pass a --budget well under the corpus size"
        )
    if budget >= BUDGET_SHARE_WARNING * corpus_words:
        return (
            f"--budget {budget:,} words is {budget / corpus_words:.0%} of the corpus "
            f"({corpus_words:,} words): recall near 1.0 then says little; a smaller --budget "
            "tells the systems apart"
        )
    return None


def _progress_lines() -> Any:
    """``evaluate``'s progress: a line as each system finishes, when stderr is a terminal (as
    ``hcg build``'s bars), so a long run over hundreds of questions is not silent; a pipe or a log
    gets none."""
    if not sys.stderr.isatty():
        return None

    def say(system: str, done: int, total: int) -> None:
        if done == total:
            print(f"hcg eval: {system}: {total:,} questions done", file=sys.stderr, flush=True)

    return say


def run_eval(args: argparse.Namespace) -> int:
    """Run ``hcg eval`` with parsed arguments; print the table (or JSON); return the exit code."""
    from ..retrieval.retriever import CausalGraphRetriever

    try:
        if args.budget < 1:
            raise ConfigError(f"--budget must be at least 1, got {args.budget}")
        if args.k is not None and args.k < 1:
            raise ConfigError(f"--k must be at least 1, got {args.k}")
        modes = parse_modes(args.modes)
        if args.out:
            from ..output_paths import check_report_path

            check_report_path(args.out)
        sentences = load_sentences(args.sentences) if args.sentences else None
        # What the loader warns about (ids without --sentences) is said as hcg's own warning,
        # on stderr and in the report, not as a Python warning naming a source line.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            questions = load_questions(args.questions, limit=args.limit, sentences=sentences)
        notes = [str(w.message) for w in caught]
        for note in notes:
            print(f"hcg eval: warning: {note}", file=sys.stderr)
        from ..embedders import embedder_by_name
        from ..remote_choice import check_remote_choice

        check_remote_choice(args)
        embedder = (
            embedder_by_name(args.embedder, args.embedder_base_url)
            if getattr(args, "embedder", None)
            else None
        )
        retriever = CausalGraphRetriever.load(args.directory, embedder=embedder)
        corpus_words = sum(len(d.split()) for d in documents_from_chunks(retriever.graph.chunks))
        warning = budget_warning(args.budget, corpus_words)
        if warning:  # before the (long) run: the user may stop it
            print(f"hcg eval: warning: {warning}", file=sys.stderr)
            notes.append(warning)
        retriever = retriever.with_config(
            hybrid=replace(retriever.config.hybrid, passage_words=args.passage_words)
        )
        systems = hcg_systems(retriever, modes, k=args.k, budget=args.budget)
        if not args.no_baselines:
            systems.update(baseline_systems(retriever, args))
        if args.ablations:
            systems.update(ablation_systems(retriever, args))
        warm_up(systems)
        report = evaluate(systems, questions, budget=args.budget, progress=_progress_lines())
    except HCGError as exc:
        print(f"hcg eval: {exc}{corpus_not_graph_hint(exc)}", file=sys.stderr)
        return 2
    report.meta.update(
        directory=str(args.directory),
        questions_file=str(args.questions),
        k=args.k,
        chunks=len(retriever.graph.chunks),
        corpus_words=corpus_words,
        embedder=getattr(retriever.embedder, "name", "?"),
    )
    if notes:
        report.meta["warnings"] = notes
    if args.out:
        from ..safe_files import atomic_write_text

        try:
            atomic_write_text(args.out, report.to_json(per_question=True))
        except OSError as exc:
            print(f"hcg eval: cannot write --out {args.out}: {exc}", file=sys.stderr)
            return 2
    print(report.to_json() if args.json else report.format_table(), end="")
    return 0
