"""The ``hcg`` console script: build a graph directory, inspect it, query it, evaluate it.

    hcg build INPUT... --out DIR [--tier M] [--outcome FILE] [--spec FILE] [--corrections FILE]
              [--llm-base-url URL]
    hcg inspect DIR [--json]
    hcg query DIR QUESTION [--k N] [--json]
    hcg eval DIR --questions FILE [--json]
    hcg add DIR FILES... | remove DIR DOC_ID...   (incremental edits of a graph directory)
    hcg relink DIR [--dry-run] [--json]   (link each edge to the chunks that state it, again)
    hcg view DIR [--out FILE.html] | apply DIR corrections.yaml --out NEW_DIR | diff DIR_A DIR_B
    hcg export DIR --format graphml|gexf|mermaid|cypher|csv [--out PATH]

Errors of the library (``HCGError``) are printed as one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import corpus, store
from .arg_types import (
    add_embedder_arguments,
    corpus_not_graph_hint,
    non_negative_int,
    number_type,
    positive_int,
)
from .bounded import read_yaml, short
from .config import (
    DEFAULT_EVIDENCE_PER_EDGE,
    DEFAULT_PASSAGE_WORDS,
    DEFAULT_TIER,
    TIERS,
    HybridConfig,
    RetrievalConfig,
)
from .embedders.factory import embedder_by_name
from .errors import (
    ConfigError,
    CorruptFileError,
    HCGError,
    IncompleteBuildError,
    InputError,
    LLMError,
)
from .graph_build import build_graph
from .graph_dir import LLM_CACHE
from .graph_lock import add_lock_timeout_argument, graph_lock
from .output_paths import check_cache_dir
from .remote_choice import check_remote_choice
from .retrieval import CausalGraphRetriever
from .safe_files import atomic_write_text, check_writable_dir
from .safe_text import env_secrets, has_lone_surrogate, redact, visible
from .types import OutcomeConfig

EXIT_USAGE = 2
EXIT_BUILD_INCOMPLETE = 3  # the LLM failed or the graph is degenerate; nothing was written


def _named_embedder(args: argparse.Namespace) -> Any:
    """The embedder ``--embedder`` names, or None: the one the graph's manifest names."""
    return embedder_by_name(args.embedder, args.embedder_base_url) if args.embedder else None


# ---------------------------------------------------------------- build


def cmd_build(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if not args.estimate:  # an estimate sends nothing anywhere
        check_remote_choice(args)
    say = _progress_printer(args.quiet)
    # Checked before the (possibly long and paid) build, not after it: a folder that is not a
    # graph, an input folder, a read-only disk.
    store.check_output_dir(args.out, inputs=args.inputs, force=args.force, probe=not args.estimate)
    chunks, given = _read_and_chunk(args, say)
    spec, outcome, corrections = _read_build_files(args)
    llm = _llm_from_args(args)
    if args.estimate:
        return _print_estimate(chunks, spec, args.tier, llm)
    embedder = embedder_by_name(args.embedder, args.embedder_base_url)
    result = _run_build(args, say, chunks, embedder, llm, outcome, spec)
    if result is None:
        return EXIT_BUILD_INCOMPLETE
    report = dict(result.report)  # with the input's figures and the embedder
    report["input"] = {**report.get("input", {}), **given}
    report["embedder"] = embedder.name
    graph, vectors = result.graph, result.variable_embeddings
    ledger = result.ledger.to_json(result.graph) if result.ledger is not None else None
    if corrections is not None:
        done = _apply_build_corrections(args.corrections, result, corrections, embedder)
        graph, vectors, ledger = done.graph, done.variable_embeddings, done.ledger
        report["corrections"] = {"file": str(args.corrections), **done.report.as_dict()}
    report["total_seconds"] = round(time.perf_counter() - t0, 2)
    dropped = _dropped_variables_note(report)
    if dropped:
        say(dropped)
    say(f"writing {args.out}")
    store.save_graph(
        graph,
        args.out,
        embedder_name=embedder.name,
        variable_embeddings=vectors,
        chunk_embeddings=result.chunk_embeddings,
        report=report,
        force=args.force,
        ledger=ledger,
        lock_timeout=args.lock_timeout,
    )
    print(
        f"built {args.out}{' (PARTIAL)' if report.get('partial') else ''}: "
        f"{len(graph.variables)} variables, {len(graph.edges)} edges, "
        f"{len(graph.spec.metrics)} metrics, {len(graph.chunks)} chunks in "
        f"{report['total_seconds']:.1f} s"
    )
    return 0


def _dropped_variables_note(report: dict[str, Any]) -> str | None:
    """What the offline builder's two drop rules took out, said at build time: a corpus whose
    graph came out thin otherwise shows only its counts (a long log that repeats a topic word in
    every record makes that word generic, and its variable goes)."""
    stage = report.get("stages", {}).get("graph", {})
    weak = stage.get("weak_single_sentence_variables_dropped") or 0
    generic = stage.get("generic_variables_dropped") or 0
    parts = [f"{weak:,} stated by one sentence with a weak cue"] if weak else []
    if generic:
        words = stage.get("generic_words") or "-"
        parts.append(f"{generic:,} named by a word spread over the whole corpus ({words})")
    if not parts:
        return None
    return (
        f"dropped variables, with their edges: {'; '.join(parts)} "
        "(drop_weak, drop_generic: docs/offline-builder.md)"
    )


def _load_inputs(paths: list, *, follow_symlinks: bool) -> tuple[list, list]:
    """``corpus.load_inputs``, its warnings (a file read as Windows-1252, front matter that is
    not YAML) printed as ``warning:`` lines, shown even with --quiet like the skipped files."""

    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    with _routed_log("hcg_core.corpus", emit=warn, at=logging.WARNING):
        return corpus.load_inputs(paths, follow_symlinks=follow_symlinks)


def _read_and_chunk(args: argparse.Namespace, say: Any) -> tuple[list, dict[str, Any]]:
    """The inputs read and chunked (skipped ones printed), and what the report records of them."""
    say(f"reading {', '.join(map(str, args.inputs))}")
    docs, bad = _load_inputs(args.inputs, follow_symlinks=args.follow_symlinks)
    # A name the disk could not decode, printable.
    bad = [(corpus.display_path(p), r) for p, r in bad]
    for path, reason in bad:  # input left out: shown even with --quiet
        print(f"skipped {path}: {reason}", file=sys.stderr)
    words = sum(len(d.text.split()) for d in docs)
    whole = corpus.WHOLE_BLOCK_FACTOR * args.chunk_words
    say(f"chunking {len(docs):,} documents ({words:,} words)")
    chunks = corpus.chunk_documents(
        docs,
        chunk_words=args.chunk_words,
        overlap_words=args.chunk_overlap,
        max_chars=args.chunk_chars,
    )
    say(
        f"read {len(docs)} documents ({words:,} words) -> {len(chunks)} chunks (paragraphs of up "
        f"to {whole} words whole; {args.chunk_words}-word windows, "
        f"{args.chunk_overlap} overlap, in longer text)"
    )
    given = {
        "documents": len(docs),
        "words": words,
        "chunks": len(chunks),
        "skipped": [[p, r] for p, r in bad],
        "chunk_words": args.chunk_words,
        "chunk_overlap": args.chunk_overlap,
        "whole_words": whole,
        "chunk_chars": args.chunk_chars,
    }
    return chunks, given


def _read_build_files(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """``--spec``, ``--outcome`` and ``--corrections``, read before the build: a bad file must
    not cost one."""
    spec = store.read_spec_file(args.spec) if args.spec else None
    outcome = _read_outcome(args.outcome) if args.outcome else None
    corrections = None
    if args.corrections:
        from .audit.corrections import read_corrections

        corrections = read_corrections(args.corrections)
    return spec, outcome, corrections


def _llm_cache_dir(args: argparse.Namespace) -> str:
    return args.llm_cache or str(Path(args.out) / LLM_CACHE)


def _llm_from_args(args: argparse.Namespace) -> Any:
    """The LLM client ``--llm-model`` / ``--llm-base-url`` name, or None (the offline builder)."""
    if not (args.llm_model or args.llm_base_url):
        return None
    from .llm import OpenAIStructuredLLM

    if not args.llm_model:
        raise HCGError("--llm-base-url needs --llm-model NAME")
    cache_dir = _llm_cache_dir(args)
    if not args.estimate:  # a reply that cannot be cached is a paid reply lost
        check_cache_dir(cache_dir, args.out)
        check_writable_dir(cache_dir, what="LLM reply cache (--llm-cache)")
    from .llm.openai_compat import NO_KEY

    return OpenAIStructuredLLM(
        args.llm_model,
        base_url=args.llm_base_url,
        # An estimate sends nothing: it needs no key, even for OpenAI's API.
        api_key=NO_KEY if args.estimate and not os.environ.get("OPENAI_API_KEY") else None,
        max_concurrency=args.max_concurrency,
        timeout=args.timeout,
        max_retries=args.max_retries,
        cache_dir=cache_dir,
        temperature=None if args.no_temperature else args.temperature,
        max_tokens=args.max_tokens,
    )


def _print_estimate(chunks: list, spec: Any, tier: str, llm: Any) -> int:
    """``hcg build --estimate``: the calls and tokens the build would make."""
    if llm is None:
        print("the offline builder makes no LLM calls: 0 calls, 0 tokens")
        return 0
    from .graph_build.llm_pipeline import estimate_build, format_estimate

    print(format_estimate(estimate_build(chunks, spec, tier)))
    return 0


def _run_build(
    args: argparse.Namespace, say: Any, chunks: list, embedder: Any, llm: Any, outcome, spec
) -> Any:
    """The build, with its stage lines and warnings printed as they come (the report's others
    after it); None when it was incomplete (reported by ``_build_or_report``)."""
    progress = None if not args.quiet else False  # bars: on a terminal, unless --quiet
    shown: set[str] = set()

    def warn(message: str) -> None:
        # The library's warnings, printed as this command's own when they happen (a build may
        # warn before its long part), and collected so the report does not print them again.
        shown.add(message)
        print(f"warning: {message}", file=sys.stderr)

    with (
        _routed_log("hcg_core", emit=warn, at=logging.WARNING),
        # The builder's stage lines (``graph_build.offline.progress_log``) through ``say``.
        _routed_log("hcg_core.graph_build.progress", logging.INFO, say),
    ):
        result = _build_or_report(
            args,
            lambda: build_graph(
                chunks,
                embedder=embedder,
                llm=llm,
                tier=args.tier,
                outcome=outcome,
                spec=spec,
                progress=progress,
            ),
        )
    for warning in (result.report.get("warnings") or []) if result is not None else []:
        if warning not in shown:
            print(f"warning: {warning}", file=sys.stderr)
    return result


class _Emit(logging.Handler):
    """A logging handler that passes each record's message to ``emit(message)``."""

    def __init__(self, emit: Any, level: int) -> None:
        super().__init__(level)
        self.emit_message = emit

    def emit(self, record: logging.LogRecord) -> None:
        self.emit_message(record.getMessage())


@contextlib.contextmanager
def _routed_log(
    name: str, level: int | None = None, emit: Any = None, at: int = logging.INFO
) -> Iterator[None]:
    """While inside: logger ``name`` set to ``level`` (None: unchanged), and, with ``emit``, its
    records from level ``at`` up passed to ``emit(message)``. Restored after: ``main`` may run
    again in the same process (tests, notebooks)."""
    log = logging.getLogger(name)
    before, handler = log.level, _Emit(emit, at) if emit else None
    if handler:
        log.addHandler(handler)
    if level is not None:
        log.setLevel(level)
    try:
        yield
    finally:
        if handler:
            log.removeHandler(handler)
        log.setLevel(before)


def _progress_printer(quiet: bool) -> Any:
    """``say(line)``: one progress line on stderr, unless ``--quiet`` (which hides progress only:
    warnings, errors and skipped inputs are printed whatever it says)."""
    return (lambda line: None) if quiet else functools.partial(print, file=sys.stderr, flush=True)


def _apply_build_corrections(path: str, result: Any, corrections: list, embedder: Any) -> Any:
    """``hcg build --corrections``: the review's corrections applied to the fresh graph, each
    matched by what it is about (so a rebuild's renamed variables still match); printed."""
    from .audit.corrections import correct_graph

    done = correct_graph(
        result.graph,
        corrections,
        variable_embeddings=result.variable_embeddings,
        embedder=embedder,
        ledger=result.ledger,
    )
    # Names from the graph and the file: no raw controls, as `hcg apply` prints its report.
    print(visible(f"corrections ({path}): {done.report.format()}"), file=sys.stderr)
    return done


def _build_or_report(args: argparse.Namespace, build: Any) -> Any:
    """Run the build; an incomplete LLM build prints its failures by cause and returns None,
    unless --allow-partial, which returns the partial result after a warning."""
    try:
        return build()
    except IncompleteBuildError as exc:
        if args.allow_partial and exc.result is not None:
            print(f"hcg build: warning: writing a PARTIAL graph: {exc}", file=sys.stderr)
            return exc.result
        error, report = exc, exc.report
    except LLMError as exc:
        # A failure every item would share (401, 404, a full disk under the reply cache): the
        # build stops. Documented like a failed item: exit 3, no graph, the report kept.
        error, report = exc, {"error": str(exc), "cause": type(exc).__name__, "partial": True}
    message = redact(str(error), env_secrets())
    print(visible(f"hcg build: error: {message}"), file=sys.stderr)
    print(f"hcg build: no graph written to {args.out}", file=sys.stderr)
    if report:
        # Kept beside the reply cache (not as the graph's build_report.json: there is no graph).
        path = Path(_llm_cache_dir(args)) / "failed_build.json"
        text = redact(json.dumps(report, indent=1, default=str), env_secrets())
        try:
            atomic_write_text(path, text)
        except OSError as exc:  # the disk that failed the cache may refuse this too
            print(f"hcg build: could not write {path}: {exc.strerror or exc}", file=sys.stderr)
        else:
            print(f"hcg build: the failed build's report: {path}", file=sys.stderr)
    return None


def _read_outcome(path: str):
    """An outcome configuration file: YAML ``{outcomes: [...], terminals: [...]}``."""
    if not Path(path).is_file():
        kind = "is a folder" if Path(path).is_dir() else "is not a regular file"
        why = kind if Path(path).exists() else "no such file"
        raise CorruptFileError(
            f"cannot read the outcome configuration: {why}; pass a YAML file "
            "{outcomes: [...], terminals: [...]}",
            path=path,
        )
    data = read_yaml(path) or {}
    shape = "a mapping {outcomes: [metric names], terminals: [metric names]}"
    if not isinstance(data, dict):
        raise CorruptFileError(f"is a {type(data).__name__}; expected {shape}", path=path)
    for key in ("outcomes", "terminals"):
        value = data.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(x, str) for x in value)
        ):
            raise CorruptFileError(f"{key!r} is {short(value)}; expected {shape}", path=path)
    return OutcomeConfig(
        tuple(str(x) for x in data.get("outcomes") or ()),
        tuple(str(x) for x in data.get("terminals") or ()),
        str(data.get("description", "") or ""),
    )


# ---------------------------------------------------------------- inspect


def inspect_summary(directory: str) -> dict[str, Any]:
    from .graph_build.health import graph_health

    stored = store.load_graph(directory)
    g = stored.graph
    per_metric = Counter(v.metric for v in g.variables)
    roles = Counter(m.role for m in g.spec.metrics)
    summary: dict[str, Any] = {
        "directory": str(directory),
        "files": str(store.current_dir(directory)),  # where to edit graph.json by hand
        "embedder": stored.embedder_name,
        "counts": store.graph_counts(g),
        "metric_roles": dict(roles),
        "variables_per_metric": {m.name: per_metric.get(m.name, 0) for m in g.spec.metrics},
        "notes": list(stored.notes),
        "health": graph_health(g),
    }
    if stored.report is not None:
        summary["build_report"] = stored.report
    return summary


def cmd_inspect(args: argparse.Namespace) -> int:
    s = inspect_summary(args.dir)
    if args.json:
        print(json.dumps(store.strict_json(s), indent=1, default=str, allow_nan=False))
        return 0
    _print_inspect(s)
    return 0


def _show(line: str) -> None:
    """Print ``line`` through ``safe_text.visible``: names, reports and chunks come from the corpus
    and a hand-edited graph, and must not drive the terminal."""
    print(visible(line))


def _print_inspect(s: dict[str, Any]) -> None:
    c = s["counts"]
    _show(f"{s['directory']}  (embedder: {s['embedder']})")
    if s["files"] != s["directory"]:
        _show(f"  files in        {s['files']}")
    for key in ("dimensions", "metrics", "variables", "edges", "chunks", "evidence_links"):
        _show(f"  {key:<16}{c[key]:>8,}")
    _show(
        "  metric roles    "
        + (", ".join(f"{k} {v}" for k, v in sorted(s["metric_roles"].items())) or "none")
    )
    if not c["edges"]:
        _show(
            "  the causal graph is empty (no edges): retrieval uses text only (BM25 and the "
            "embedder)"
        )
    if "health" in s:
        _show("graph health:")
        for key, value in s["health"].items():
            text = f"{value:.3f}" if isinstance(value, float) else str(value)
            _show(f"  {key:<28}{text:>10}")
    if "build_report" in s:
        _show(format_build_report(s["build_report"]))
    _show("variables per metric:")
    for name, n in sorted(s["variables_per_metric"].items(), key=lambda kv: (-kv[1], kv[0])):
        _show(f"  {n:>5}  {name}")
    for note in s["notes"]:
        _show(f"note: {note}")


def format_build_report(report: dict[str, Any]) -> str:
    """The build report as a table: seconds and counts per stage, then the LLM's cost."""
    head = ", ".join(
        f"{k} {report[k]}"
        for k in ("builder", "llm", "tier", "embedder")
        if isinstance(report.get(k), (str, int, float))
    )
    total = report.get("total_seconds")
    lines = [f"build report ({head}{f', {total} s in all' if total is not None else ''}):"]
    stages = report.get("stages") or {}
    if not isinstance(stages, dict):
        lines.append(f"  (its 'stages' is a {type(stages).__name__}, not an object: not shown)")
        stages = {}
    for name, row in stages.items():
        row = dict(row) if isinstance(row, dict) else {"value": row}
        secs = row.pop("seconds", None)
        details = " ".join(f"{k}={v}" for k, v in row.items() if not isinstance(v, (dict, list)))
        lines.append(f"  {name:<18}{secs if secs is not None else '':>9} s  {details}")
    # The offline builder reports its (zero) LLM cost under "llm"; the LLM pipeline under "totals".
    cost = report.get("llm") if isinstance(report.get("llm"), dict) else report.get("totals")
    if isinstance(cost, dict):
        lines.append(
            "  LLM: "
            + ", ".join(
                f"{v} {k.replace('_', ' ')}"
                for k, v in cost.items()
                if not isinstance(v, (dict, list))
            )
        )
    linking = report.get("evidence")
    if isinstance(linking, dict) and isinstance(linking.get("links_by_way"), dict):
        ways = ", ".join(f"{k} {v}" for k, v in linking["links_by_way"].items())
        lines.append(
            f"  evidence links by way: {ways}; edges without evidence "
            f"{linking.get('edges_without_evidence')} (at most {linking.get('per_edge')} per "
            f"edge, {linking.get('chunk_cap')} edges per chunk by search)"
        )
    if report.get("partial"):
        lines.append("  PARTIAL graph: " + "; ".join(report.get("problems") or []))
    if isinstance(report.get("coverage"), dict):
        lines.append(
            "  coverage: "
            + ", ".join(
                f"{k.replace('_', ' ')} {v:.0%}"
                for k, v in report["coverage"].items()
                if isinstance(v, (int, float))
            )
        )
    for key in ("failures", "warnings"):
        items = report.get(key) or []
        for item in items if isinstance(items, list) else [items]:
            lines.append(f"  {key[:-1]}: {item}")
    given = report.get("input")
    skipped = given.get("skipped") if isinstance(given, dict) else None
    for item in skipped if isinstance(skipped, list) else []:
        pair = isinstance(item, (list, tuple)) and len(item) == 2
        lines.append(
            f"  skipped input: {item[0]}: {item[1]}" if pair else f"  skipped input: {item}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- add / remove


def _print_update(report: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.as_dict(), indent=1))
        return
    print(visible(report.summary()))
    # An empty graph's note is the warning that matters (its statements need a rebuild); the
    # generic "not expressible" warning below would only repeat it less plainly.
    empty = [n for n in report.notes if n.startswith(EMPTY_VOCABULARY)]
    for note in report.notes:
        print(f"{'warning' if note in empty else 'note'}: {note}", file=sys.stderr)
    if report.statements_unmapped and not empty:
        print(
            f"warning: {report.statements_unmapped} causal statement(s) of the new text name "
            "quantities the graph's vocabulary does not have (e.g. "
            + "; ".join(report.examples[:3])
            + "); `hcg build` re-derives the vocabulary",
            file=sys.stderr,
        )
    if report.edges_removed:
        print(
            f"warning: {len(report.edges_removed)} edge(s) lost their last support and were "
            "removed: " + ", ".join(report.edges_removed[:5]),
            file=sys.stderr,
        )


# The incremental edits' one-line log: the commands print the report themselves.
_UPDATE_LOG = "hcg_core.graph_build.incremental"
# How the note of an insert into an empty graph starts (``incremental.empty_vocabulary_note``).
EMPTY_VOCABULARY = "the graph is empty"


def cmd_add(args: argparse.Namespace) -> int:
    check_remote_choice(args)
    embedder = _graph_to_edit(args)
    # Refused (InputError) when no document is readable: then nothing is added.
    docs, bad = _load_inputs(args.files, follow_symlinks=False)
    for path, reason in bad:
        print(f"skipped {corpus.display_path(path)}: {reason}", file=sys.stderr)
    return _edit_in_place(args, embedder, lambda retriever: _add_documents(args, retriever, docs))


def _graph_to_edit(args: argparse.Namespace) -> Any:
    """The embedder ``--embedder`` names (or None), after ``args.dir``'s manifest is read: a
    directory that is not a graph is refused before it is locked (the lock would write in it)."""
    embedder = _named_embedder(args)
    store.read_pointer(args.dir)
    return embedder


def _edit_in_place(args: argparse.Namespace, embedder: Any, edit: Any) -> int:
    """``edit(retriever)`` on the graph directory, saved; its update report printed."""
    # Locked from load to save: a second `hcg add` waits, then edits the graph this one wrote,
    # instead of both editing the same old graph and one update being lost.
    with graph_lock(args.dir, timeout=args.lock_timeout):
        # Loading reuses every stored vector (checked by digest): only new chunks are embedded.
        retriever = CausalGraphRetriever.load(args.dir, embedder)
        report = edit(retriever)
        retriever.save(args.dir)  # atomic: the old graph stays loadable until the new one is whole
    _print_update(report, args.json)
    return 0


def _add_documents(args: argparse.Namespace, retriever: Any, docs: list) -> Any:
    """Chunk ``docs`` as the graph's build did (unless told otherwise) and insert them."""
    # The build's chunking (recorded in its report), unless given: new text is cut the same way.
    built = corpus.recorded_chunking(retriever.build_report)  # odd-typed values are ignored
    chunk_words = args.chunk_words or built.get("chunk_words") or corpus.DEFAULT_CHUNK_WORDS
    overlap = args.chunk_overlap
    if overlap is None:
        overlap = built.get("chunk_overlap", corpus.DEFAULT_OVERLAP_WORDS)
    max_chars = args.chunk_chars or built.get("chunk_chars")
    whole = None if args.chunk_words else built.get("whole_words")
    chunks = corpus.chunk_documents(
        docs,
        chunk_words=int(chunk_words),
        overlap_words=int(overlap),
        max_chars=max_chars,
        whole_words=whole,
    )
    with _routed_log(_UPDATE_LOG, logging.ERROR):
        return retriever.insert(chunks)


def cmd_remove(args: argparse.Namespace) -> int:
    embedder = _graph_to_edit(args)

    def remove(retriever: Any) -> Any:
        check_doc_ids(args.doc_ids, [c.doc_id for c in retriever.graph.chunks], args.dir)
        with _routed_log(_UPDATE_LOG, logging.ERROR):
            return retriever.delete(args.doc_ids)

    return _edit_in_place(args, embedder, remove)


def check_doc_ids(given: Sequence[str], known: Sequence[str], where: str) -> None:
    """Refuse, naming the ids the graph knows, document ids that are not in it.

    A file's documents are ``FILE#0``, ``FILE#1``... (a JSON list or JSONL), so ``notes.jsonl``
    is answered with those; other misses with a few of the known ids.
    """
    have = dict.fromkeys(known)
    missing = [d for d in given if d not in have]
    if not missing:
        return
    first = missing[0]
    parts = [d for d in have if d.startswith(f"{first}#")]
    if parts:
        hint = (
            f"{first} holds {len(parts)} documents: {', '.join(parts[:5])}"
            f"{', ...' if len(parts) > 5 else ''}; name them (e.g. {parts[0]!r})"
        )
    else:
        sample = [d for d in have if d][:5]
        hint = (
            f"known ids include {', '.join(sample)}{', ...' if len(have) > 5 else ''}"
            if sample
            else "the graph has no document ids"
        )
    raise InputError(
        f"{len(missing)} document id(s) are not in {where} (first: {first!r}); {hint}; "
        "nothing was removed"
    )


# ---------------------------------------------------------------- relink


def cmd_relink(args: argparse.Namespace) -> int:
    from .graph_build.relink import relink_directory

    result = relink_directory(
        args.dir, dry_run=args.dry_run, per_edge=args.per_edge, lock_timeout=args.lock_timeout
    )
    figures = result.as_dict()
    print(json.dumps(figures, indent=1) if args.json else visible(format_relink(figures, args.dir)))
    return 0


def format_relink(r: dict[str, Any], where: str) -> str:
    """The evidence figures before and after a relink, side by side, and the links by way."""
    rows = (
        ("edges with evidence", "edges_with_evidence"),
        ("evidence links", "links"),
        ("chunks cited", "chunks_cited"),
        ("max edges per chunk", "max_edges_per_chunk"),
        ("  its share of edges", "max_share_of_edges"),
    )
    b, a, k = r["before"], r["after"], r["linking"]
    lines = [
        f"{where}: {a['edges']:,} edges, {a['chunks']:,} chunks",
        f"{'':<24}{'before':>10}{'after':>10}",
    ]
    for label, key in rows:
        fmt = "{:>10.2%}" if key == "max_share_of_edges" else "{:>10,}"
        lines.append(f"{label:<24}" + fmt.format(b[key]) + fmt.format(a[key]))
    ways = ", ".join(f"{w} {n:,}" for w, n in k["links_by_way"].items())
    lines.append(f"links by way: {ways}; edges without evidence {k['edges_without_evidence']:,}")
    lines.append(
        # The cap binds search links only (ways 3 and 4): a chunk can hold more edges by quote or
        # mechanism, so "max edges per chunk" above may pass it.
        f"per edge at most {k['per_edge']}, per chunk at most {k['chunk_cap']} edges by search "
        f"(sentence, chunk; {k['edges_short_by_cap']:,} edges got fewer links as a chunk stating "
        "them was full); "
        f"{k['seconds']} s"
    )
    lines.append("written as a new version" if r["written"] else "dry run: nothing was written")
    return "\n".join(lines)


# ---------------------------------------------------------------- query


def cmd_query(args: argparse.Namespace) -> int:
    check_remote_choice(args)
    embedder = _named_embedder(args)
    config = RetrievalConfig(
        mode=args.mode,
        use_graph=not args.no_graph,
        hybrid=HybridConfig(passage_words=args.passage_words),
    )
    question = _check_question(args.question)
    stored = store.load_graph(args.dir)
    for note in stored.notes:
        if note.startswith("warning:"):
            print(f"hcg query: {note}", file=sys.stderr)
    retriever = CausalGraphRetriever.from_stored(stored, embedder=embedder, config=config)
    result = retriever.retrieve(question, k=args.k)
    if args.json:
        try:
            # Strict JSON: a NaN or infinite score would print as NaN, which no JSON parser reads.
            print(json.dumps(result_to_dict(result), indent=1, allow_nan=False))
        except ValueError:
            raise HCGError("a score is not a finite number; rebuild the graph") from None
        return 0
    _print_result(result)  # corpus text: no raw ESC sequence reaches the terminal
    return 0


def _print_result(result: Any) -> None:
    """``hcg query``'s text: each chunk with its place, signals, paths and its text, cut."""
    _show(f"served by: {result.served_by}; matched: {', '.join(result.matched) or '-'}")
    for i, rc in enumerate(result.chunks, 1):
        _show(f"\n[{i}] {rc.route:<8} score {rc.score:.3f}  {_place_text(rc)}")
        signals = _signals_text(result_signals(rc))
        if signals:
            _show(f"    signals: {signals}")
        for p in rc.paths:
            _show(f"    path: {p}")
            for eid, mech in zip(p.edge_ids, p.mechanisms, strict=True):
                if mech:
                    _show(f"      {eid}: {_cut(mech, MECHANISM_CHARS_SHOWN)}")
        _show(f"    {_cut(' '.join(rc.chunk.text.split()), CHUNK_CHARS_SHOWN)}")


# How much of an edge's mechanism and of a chunk's text ``hcg query`` prints (``--json`` has all).
MECHANISM_CHARS_SHOWN = 160
CHUNK_CHARS_SHOWN = 400


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, with "..." when cut, so a cut never reads as whole.

    >>> _cut("abcdef", 3), _cut("abc", 3)
    ('abc...', 'abc')
    """
    return f"{text[:limit]}..." if len(text) > limit else text


# The ranking signals of a hybrid result (``RetrievedChunk.details``), as printed: each in [0, 1]
# with its rank among that signal's candidates (None: not among them; printed only beside a
# part above 0, ``_signals_text``).
RESULT_SIGNALS = (("bm25", "bm25"), ("dense", "dense"), ("graph", "graph walk"), ("grams", "grams"))


def result_place(rc: Any) -> dict[str, Any]:
    """Where a result's text is: its document (id and file), the chunk's number in it and its
    word range (0-based, end exclusive, as ``chunk_documents`` records them), and, for a part of
    the chunk, its characters in the chunk's text (``span``) or the passage's number."""
    meta = rc.chunk.metadata or {}
    place: dict[str, Any] = {"doc_id": rc.chunk.doc_id, "chunk_id": rc.parent_id or rc.chunk.id}
    for key, name in (
        ("source", "source"),
        ("index", "chunk_index"),
        ("start_word", "start_word"),
        ("end_word", "end_word"),
        ("start_char_idx", "start_char"),
        ("end_char_idx", "end_char"),
        ("passage", "passage_index"),
    ):
        value = meta.get(key)
        # The numbers are printed 1-based (``+ 1``): a string there, from a user's own metadata
        # in a hand-made or adapter-built graph, is left out rather than fail the query.
        kinds = str if key == "source" else int
        if isinstance(value, kinds) and not isinstance(value, bool):
            place[name] = value
    if "span" in rc.details:
        place["span"] = list(rc.details["span"])
    return place


def result_signals(rc: Any) -> dict[str, Any]:
    """A hybrid result's ranking signals: each part and its rank, and the fused relevance the
    ranking sorted by (empty for the paper route, whose score is the query-chunk cosine)."""
    details = rc.details or {}
    out: dict[str, Any] = {}
    for key, _ in RESULT_SIGNALS:
        if key in details:
            out[key] = float(details[key])
            out[f"{key}_rank"] = details.get(f"{key}_rank")
    if out and "fused_score" in details:
        out["fused"] = float(details["fused_score"])
    return out


def _place_text(rc: Any) -> str:
    """``04-diabetes.md, chunk 1 (words 1-164)  [c_ab800e17c288]``: 1-based, ends included."""
    place = result_place(rc)
    # A file name may hold a line break or a tab: written as escapes, the header stays one line.
    text = (place["doc_id"] or "(no document)").replace("\n", "\\n").replace("\t", "\\t")
    if "chunk_index" in place:
        text += f", chunk {place['chunk_index'] + 1}"
    if "start_word" in place and "end_word" in place:
        text += f" (words {place['start_word'] + 1}-{place['end_word']})"
    elif "start_char" in place and "end_char" in place:
        text += f" (characters {place['start_char'] + 1}-{place['end_char']})"
    if "passage_index" in place:
        text += f" passage {place['passage_index'] + 1}"
    elif "span" in place:
        text += f" part: characters {place['span'][0] + 1}-{place['span'][1]}"
    return f"{text}  [{rc.chunk.id}]"


def _signals_text(signals: dict[str, Any]) -> str:
    """``bm25 0.597 (#1), dense 0.555 (#1), graph walk 0.648 (#4)``; ``(-)``: the signal gave
    the chunk nothing.

    A rank is shown only beside a part above 0: the graph walk ranks the chunks it reached by
    their walk mass, but its part counts only above the mean of the walk's best chunks, so a
    chunk it reached can rank #2 and add nothing; ``0.000 (#2)`` read as a match that counted.

    >>> _signals_text({"bm25": 0.5, "bm25_rank": 1, "graph": 0.0, "graph_rank": 2})
    'bm25 0.500 (#1), graph walk 0.000 (-)'
    """
    parts = []
    for key, label in RESULT_SIGNALS:
        if key in signals:
            shown = f"{signals[key]:.3f}"
            rank = signals[f"{key}_rank"] if float(shown) > 0 else None
            parts.append(f"{label} {shown} ({'#' + str(rank) if rank else '-'})")
    return ", ".join(parts)


def _check_question(question: str) -> str:
    """The question, refused when empty or not valid UTF-8 (bytes the shell passed undecoded)."""
    if has_lone_surrogate(question):
        raise ConfigError("the question is not valid UTF-8 text; check the terminal's encoding")
    if not question.strip():
        raise ConfigError('the question is empty; ask something, e.g. "Why does X raise Y?"')
    return question


_PATH_PARTS = ("variables", "edge_ids", "effects", "mechanisms")  # in the JSON's key order


def result_to_dict(result) -> dict[str, Any]:
    return {
        "query": result.query,
        "served_by": result.served_by,
        "matched": list(result.matched),
        # A diagnostic may be infinite (a ratio over one candidate); strict JSON has no such
        # number, so it prints as null. Scores are not passed through this: a bad score is an error.
        "diagnostics": store.strict_json(dict(result.diagnostics)),
        "chunks": [
            {
                "id": rc.chunk.id,
                "doc_id": rc.chunk.doc_id,
                "score": rc.score,
                "route": rc.route,
                # Where the text is (file, chunk number, word range) and why it ranked.
                "place": result_place(rc),
                "signals": result_signals(rc),
                # Each path as `hcg query` prints it (with each edge's sign), then its parts.
                "paths": [
                    {"text": str(p), **{key: list(getattr(p, key)) for key in _PATH_PARTS}}
                    for p in rc.paths
                ],
                "text": rc.chunk.text,
            }
            for rc in result.chunks
        ],
    }


# ---------------------------------------------------------------- parser

# argparse types: seconds above 0 and a sampling temperature in [0, 2], finite (no nan, no inf).
_positive_seconds = number_type(
    lambda x: math.isfinite(x) and x > 0,
    "a finite number of seconds above 0",
    noun="a number of seconds",
)
_temperature = number_type(lambda x: math.isfinite(x) and 0 <= x <= 2, "a finite number in [0, 2]")


# The embedder's default of the commands that read a graph.
FROM_MANIFEST = "default: the one named in the graph's manifest"


def _flag(p: argparse.ArgumentParser, flag: str, text: str) -> None:
    p.add_argument(flag, action="store_true", help=text)


def _add_chunking_arguments(p: argparse.ArgumentParser, words: Any, overlap: Any, chars: str):
    """``--chunk-words``, ``--chunk-overlap``, ``--chunk-chars``: (default, help) for the first
    two, the help of the third (whose default is None)."""
    p.add_argument("--chunk-words", type=positive_int, default=words[0], help=words[1])
    p.add_argument("--chunk-overlap", type=non_negative_int, default=overlap[0], help=overlap[1])
    p.add_argument("--chunk-chars", type=positive_int, default=None, help=chars)


def _build_parser(sub: Any) -> None:
    b = sub.add_parser("build", help="build a graph directory from text/markdown/JSON files")
    b.add_argument("inputs", nargs="+", help=".txt, .md, .json, .jsonl files or folders of them")
    b.add_argument("--out", required=True, help="the graph directory to write")
    b.add_argument(
        "--tier",
        default=DEFAULT_TIER,
        choices=sorted(TIERS),
        help="scaling tier: caps metrics and dimensions (default %(default)s)",
    )
    b.add_argument(
        "--outcome", help="outcome configuration YAML {outcomes: [...], terminals: [...]}"
    )
    b.add_argument("--spec", help="build from this (possibly hand-edited) spec.yaml; skips Stage 1")
    b.add_argument(
        "--corrections",
        help="apply this corrections.yaml (hcg view's download) to the new graph: a rebuild "
        "keeps the review's rejections, edits, merges and deletions",
    )
    _add_chunking_arguments(
        b,
        (200, "words per chunk (default 200)"),
        (40, "overlap words (default 40)"),
        "character cap per chunk (default: 36 x --chunk-words, 7,200 at 200)",
    )
    _flag(b, "--force", "write into an existing --out that is not an hcg graph directory")
    _flag(b, "--follow-symlinks", "read symbolic links in input folders that lead outside them")
    add_embedder_arguments(b, "default: 'default'")
    _flag(b, "--quiet", "no progress (stage lines and bars); warnings and errors are still printed")
    _add_llm_arguments(b)
    add_lock_timeout_argument(b)
    b.set_defaults(func=cmd_build)


def _add_llm_arguments(b: argparse.ArgumentParser) -> None:
    """``hcg build``'s LLM options (an LLM build), ``--allow-partial`` and ``--estimate``."""
    b.add_argument("--llm-base-url", help="OpenAI-compatible base URL (key from OPENAI_API_KEY)")
    b.add_argument("--llm-model", help="model name; selects the LLM pipeline")
    b.add_argument("--llm-cache", help="reply cache folder (default DIR/.llm_cache)")
    b.add_argument("--max-concurrency", type=positive_int, default=8)
    b.add_argument("--timeout", type=_positive_seconds, default=60.0)
    b.add_argument("--max-retries", type=non_negative_int, default=5)
    b.add_argument(
        "--temperature", type=_temperature, default=0.0, help="sampling temperature (0.0)"
    )
    _flag(
        b,
        "--no-temperature",
        "send no temperature (it is also dropped when the provider rejects it)",
    )
    b.add_argument("--max-tokens", type=int, help="completion token limit per LLM request")
    _flag(
        b,
        "--allow-partial",
        "write the graph even when LLM items failed or it is degenerate (marked partial)",
    )
    _flag(b, "--estimate", "print the calls and tokens the build would make, and stop")


def _graph_command(sub: Any, name: str, text: str, func: Any, dir_help: str | None = None) -> Any:
    """Subcommand ``name`` (run by ``func``), its first argument a graph directory ``dir``."""
    p = sub.add_parser(name, help=text)
    p.add_argument("dir", help=dir_help)
    p.set_defaults(func=func)
    return p


def _inspect_parser(sub: Any) -> None:
    text = "counts, graph health, variables per metric, build report"
    _graph_command(sub, "inspect", text, cmd_inspect).add_argument("--json", action="store_true")


def _query_parser(sub: Any) -> None:
    text = "retrieve chunks for a question, with route, score, paths"
    q = _graph_command(sub, "query", text, cmd_query)
    q.add_argument("question")
    q.add_argument("--k", type=positive_int, default=5)
    q.add_argument("--json", action="store_true")
    q.add_argument(
        "--mode",
        choices=["hybrid", "paper"],
        default="hybrid",
        help="hybrid (default: graph + BM25 + dense, packed) or paper (Stage 3 only)",
    )
    _flag(q, "--no-graph", "hybrid mode without the graph signal (the ablation)")
    q.add_argument(
        "--passage-words",
        type=non_negative_int,
        default=DEFAULT_PASSAGE_WORDS,
        help=f"hybrid mode: words per returned passage (default {DEFAULT_PASSAGE_WORDS}; "
        "0: whole chunks)",
    )
    add_embedder_arguments(q, FROM_MANIFEST)


def _add_parser(sub: Any) -> None:
    text = "add documents to a graph directory in place (only the new text is embedded)"
    a = _graph_command(
        sub, "add", text, cmd_add, "an existing graph directory (hcg build's output)"
    )
    a.add_argument("files", nargs="+", help=".txt, .md, .json, .jsonl files or folders of them")
    _add_chunking_arguments(
        a,
        (None, f"words per chunk (default: the build's, else {corpus.DEFAULT_CHUNK_WORDS})"),
        (None, f"overlap words (default: the build's, else {corpus.DEFAULT_OVERLAP_WORDS})"),
        "character cap per chunk (default: the build's)",
    )
    _edit_arguments(a)


def _remove_parser(sub: Any) -> None:
    text = "remove documents (by doc id) from a graph directory"
    r = _graph_command(sub, "remove", text, cmd_remove, "an existing graph directory")
    r.add_argument("doc_ids", nargs="+", help="document ids (chunks.jsonl's doc_id)")
    _edit_arguments(r)


def _edit_arguments(p: argparse.ArgumentParser) -> None:
    """``hcg add``'s and ``hcg remove``'s last options: ``--json``, the embedder, the lock."""
    _flag(p, "--json", "print the update report as JSON")
    add_embedder_arguments(p, FROM_MANIFEST)
    add_lock_timeout_argument(p)


def _relink_parser(sub: Any) -> None:
    text = "link each edge to the chunks that state it again (no LLM call, no edge removed)"
    rl = _graph_command(
        sub, "relink", text, cmd_relink, "an existing graph directory (format 1 or 2)"
    )
    _flag(rl, "--dry-run", "print the figures before and after; write nothing")
    rl.add_argument(
        "--per-edge",
        type=positive_int,
        default=DEFAULT_EVIDENCE_PER_EDGE,
        help=f"evidence chunks per edge (default {DEFAULT_EVIDENCE_PER_EDGE}, the paper's)",
    )
    _flag(rl, "--json", "print the figures as JSON")
    add_lock_timeout_argument(rl)


def _eval_parser(sub: Any) -> None:
    from .eval.cli import add_eval_arguments, run_eval

    e = sub.add_parser("eval", help="compare HCG with vector top-k and BM25 on a QA file")
    add_eval_arguments(e)
    e.set_defaults(func=run_eval)


def build_parser() -> argparse.ArgumentParser:
    from .audit.cli import add_review_commands

    p = argparse.ArgumentParser(prog="hcg", description="HCG-RAG: causal-graph retrieval.")
    sub = p.add_subparsers(dest="command", required=True)
    for add_parser in (
        _build_parser,
        _inspect_parser,
        _query_parser,
        _add_parser,
        _remove_parser,
        _relink_parser,
        _eval_parser,
    ):
        add_parser(sub)
    add_review_commands(sub)  # view, apply, diff, export
    return p


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except HCGError as exc:
        message = f"hcg {args.command}: error: {exc}{corpus_not_graph_hint(exc)}"
        print(visible(redact(message, env_secrets())), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"hcg {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`hcg query ... | head`): stop quietly, as Python's docs advise.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
