"""The LLM build's printed estimate against the calls the pipeline makes, per stage.

Two checks (issue 25, items 9 and 10):

1. ``--corpus PATH``: a scripted build of the corpus (files or folders, read and chunked as
   ``hcg build`` does) under the named responder ``benchmarks/reading_responder.py``, in
   process (no network); prints ``estimate_build``'s figures before the build (expected and upper
   bound) beside the calls made, per stage, and the ratio. Example::

       python benchmarks/llm_estimate.py --corpus DATA/graphrag-bench-medical/corpus.json

2. ``--recording DIR --corpus PATH``: a recorded real-LLM build (``calls.jsonl``, ``spec.yaml``
   and ``build_report.json``, side by side or the last two under ``graph/``, as in
   ``DATA/llm-recordings/example-corpus-xs`` and ``DATA/llm-builds/medical-xs``)
   replayed through today's planning: the
   Stage 1 calls for that corpus, one Tier 1 call per non-terminal metric of the recorded spec,
   and the Tier 2 batches today's compatibility rule and packing make of the templates the
   recorded Tier 1 replies found, over the recorded spec's variables. No reply is re-judged; the
   count is what this pipeline would ask given those answers, beside the estimate.

   python benchmarks/llm_estimate.py --recording DATA/llm-recordings/example-corpus-xs \\
       --corpus examples/corpus

``--embedder`` picks the embedder (default: the offline MiniLM the CLI uses).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # reading_responder.py


def load_chunks(paths: list[str]):
    from hcg_core.corpus import chunk_documents, load_inputs

    docs, bad = load_inputs(paths)
    if bad:
        print(f"skipped {len(bad)} unreadable input(s)", file=sys.stderr)
    return chunk_documents(docs)


def embedder_named(name: str | None):
    from hcg_core.embedders.factory import default_embedder, embedder_from_name

    return embedder_from_name(name) if name else default_embedder()


def row(name: str, expected: int, upper: int | None, made: int) -> str:
    ratio = made / expected if expected else float("nan")
    bound = "" if upper is None else str(upper)
    return f"| {name} | {expected} | {bound} | {made} | {ratio:.2f} |"


def print_table(est: dict, made: dict[str, int]) -> None:
    st = est["stages"]
    print(
        "| stage | expected | upper bound | calls made | made / expected |\n|---|---|---|---|---|"
    )
    print(row("stage 1", st["stage1"]["calls"], st["stage1"]["calls"], made["stage1"]))
    print(row("tier 1", st["tier1"]["calls"], st["tier1"].get("calls_max"), made["tier1"]))
    t2 = st["tier2"]
    print(row("tier 2", t2["calls_expected"], t2["calls_max"], made["tier2"]))
    total = sum(made.values())
    print(row("total", est["calls_expected"], est["calls_max"], total))
    lo, hi = 0.75 * est["calls_expected"], 1.25 * est["calls_expected"]
    inside = lo <= total <= hi
    print(
        f"\ncalls made {total}; expected {est['calls_expected']} "
        f"(+-25%: {lo:.0f}..{hi:.0f}) -> {'inside' if inside else 'OUTSIDE'} the band; "
        f"upper bound {est['calls_max']}"
    )


def scripted(args) -> None:
    from reading_responder import ReadingResponder

    from hcg_core.graph_build.llm_pipeline import build_with_llm, estimate_build, format_estimate
    from hcg_core.testing import ScriptedLLM

    chunks = load_chunks(args.corpus)
    est = estimate_build(chunks, None, args.tier)
    print(format_estimate(est))
    print(f"\n{len(chunks)} chunks; responder {ReadingResponder.NAME}; tier {args.tier}\n")
    t0 = time.perf_counter()
    result = build_with_llm(
        chunks,
        embedder=embedder_named(args.embedder),
        llm=ScriptedLLM(ReadingResponder(), name=f"scripted:{ReadingResponder.NAME}"),
        tier=args.tier,
        progress=False,
        allow_partial=True,
    )
    rep = result.report
    made = {s: int(rep["stages"][s]["calls"]) for s in ("stage1", "tier1", "tier2")}
    print_table(est, made)
    t2 = rep["stages"]["tier2"]
    print(
        f"\ncounts: {json.dumps(rep['counts'])}; templates {rep['stages']['tier1']['templates']}; "
        f"tier 2 candidates proposed {t2['candidates_proposed']}, kept by the rule "
        f"{t2['candidates']}, new edges {t2['new_edges']}; problems {rep['problems']}; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    if args.report:
        Path(args.report).write_text(json.dumps(rep, indent=1, default=str), encoding="utf-8")


def recorded_templates(calls: Path) -> list[tuple[str, str]]:
    """(source, target) of every causal link in the recorded Tier 1 replies (either schema)."""
    out = []
    for line in calls.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        fmt = rec["request"].get("response_format") or {}
        if (fmt.get("json_schema") or {}).get("name") != "Tier1Reply":
            continue
        answer = rec["answer"]["content"]
        answer = json.loads(answer) if isinstance(answer, str) else answer
        src = answer.get("source")
        for link in answer.get("links", []):
            if link.get("causal"):
                out.append((src, link["target"]))
        out += [(src, link["target"]) for link in answer.get("causal", [])]
    return sorted(set(out))


def replay(args) -> None:
    from hcg_core.graph_build.evidence import EntityMentions
    from hcg_core.graph_build.llm_pipeline import estimate_build
    from hcg_core.graph_build.llm_tiers import (
        Template,
        candidate_score,
        pairs_per_template,
        tier1_sources,
        tier2_batches,
    )
    from hcg_core.spec.generate import stage1_calls
    from hcg_core.store import current_dir, read_spec_file

    rec = Path(args.recording)
    # Either layout: the files side by side, or calls.jsonl beside a graph/ directory.
    graph = rec / "graph" if (rec / "graph" / "manifest.json").is_file() else rec
    graph = current_dir(graph)  # format 2 keeps the files in versions/<n>/
    chunks = load_chunks(args.corpus)
    spec = read_spec_file(graph / "spec.yaml")
    templates = [Template(s, t) for s, t in recorded_templates(rec / "calls.jsonl")]
    mentions = EntityMentions(chunks)
    per_template = pairs_per_template(args.tier, len(templates))
    batches, counts = tier2_batches(
        templates,
        spec.variables,
        args.max_batch_pairs,
        lambda s, t: candidate_score(spec, mentions, s, t),
        per_template=per_template,
    )
    made = {
        "stage1": stage1_calls(len(chunks), tier=args.tier),
        "tier1": len(tier1_sources(spec)),
        "tier2": len(batches),
    }
    old = json.loads((graph / "build_report.json").read_text(encoding="utf-8"))
    print(
        f"recording {rec.name}: {len(chunks)} chunks, {len(spec.metrics)} metrics, "
        f"{len(spec.variables)} variables, {len(templates)} templates; the recorded build made "
        f"{old['totals']['calls']} calls ("
        + ", ".join(f"{s} {old['stages'][s]['calls']}" for s in ("stage1", "tier1", "tier2"))
        + ")"
    )
    print(
        f"tier 2 today: {counts['candidates_proposed']} candidates proposed, "
        f"{counts['candidates'] + counts['candidates_over_template_cap']} supported by the rule, "
        f"{counts['candidates']} sent ({per_template} per template at most), "
        f"{counts['templates_without_candidates']} templates to populate, {len(batches)} calls\n"
    )
    print("estimate before Stage 1 (no spec):")
    print_table(estimate_build(chunks, None, args.tier), made)
    print("\nestimate with the recorded spec (Stage 1 skipped, so its row is 0 expected):")
    with_spec = estimate_build(chunks, spec, args.tier)
    print_table(with_spec, {**made, "stage1": 0})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="+", required=True, help="corpus files or folders")
    ap.add_argument("--recording", help="a recorded build directory (calls.jsonl, spec.yaml)")
    ap.add_argument("--tier", default="XS")
    ap.add_argument("--max-batch-pairs", type=int, default=50)
    ap.add_argument("--embedder", default=None, help="embedder name (default: offline MiniLM)")
    ap.add_argument("--report", help="write the scripted build's report JSON here")
    args = ap.parse_args(argv)
    if args.recording:
        replay(args)
    else:
        scripted(args)


if __name__ == "__main__":
    main()
