"""Which Tier 2 candidates a live build's readers kept, by kind of pair and by association.

Reads a build's requests and replies (``calls.jsonl`` or a queue's ``log.jsonl``: every Tier 2
prompt lists its numbered candidates, every reply keeps some by number) and the graph directory
the build wrote (its spec and chunks), and prints the share kept: by kind of pair (the same
entity of a shared dimension, a stage or subtype of it, entities on different dimensions, one
side without entities) and by fifths of the association (``llm_tiers.tie``). With ``--rule`` it also
scores today's candidate rule (``candidate_score`` and the spread of ``tier2_batches``) on what
the readers judged: per call and template, the judged pairs the rule would still send (ranked by
``candidate_score``, each variable in at most ``PAIRS_PER_VARIABLE`` pairs, the per-template cap
the build recorded), how many, and the share kept. Only judged pairs can be scored: a pair the
old rule never sent is not counted. Example::

    python benchmarks/llm_keep.py /tmp/live/q2/log.jsonl /tmp/live/g2 --rule
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_CANDIDATE = re.compile(r"^(\d+)\. (.+?) -> (.+)$", re.M)


def parse_variable(name: str):
    from hcg_core.types import Variable

    metric, _, rest = name.partition("(")
    return Variable(metric, tuple(x.strip() for x in rest.rstrip(")").split(",") if x.strip()))


def judged(calls: Path) -> list[tuple[str, str, bool]]:
    """(source, target, kept) for every candidate a Tier 2 reply judged."""
    return [(s, t, k) for _, s, t, k in judged_by_call(calls)]


def judged_by_call(calls: Path) -> list[tuple[int, str, str, bool]]:
    """(call number, source, target, kept) for every candidate a Tier 2 reply judged."""
    out = []
    for call, line in enumerate(calls.read_text(encoding="utf-8").splitlines()):
        rec = json.loads(line)
        prompt = rec["request"]["messages"][-1]["content"]
        if not prompt.rstrip().endswith("Tier2Reply"):
            continue
        answer = rec["answer"]["content"]
        answer = json.loads(answer) if isinstance(answer, str) else answer
        kept = {k["candidate"] for k in answer.get("kept", [])}
        out += [(call, s, t, int(n) in kept) for n, s, t in _CANDIDATE.findall(prompt)]
    return out


def kind(spec, source, target) -> str:
    if not source.entities or not target.entities:
        return "one side without entities"
    s = dict(zip(spec.metric(source.metric).signature, source.entities, strict=False))
    t = dict(zip(spec.metric(target.metric).signature, target.entities, strict=False))
    shared = [d for d in s if d in t]
    if not shared:
        return "entities on different dimensions"
    if all(s[d] == t[d] for d in shared):
        return "same entity of a shared dimension"
    return "a stage or subtype of a shared dimension's entity"


def score_rule(calls: Path, spec, mentions, per_template: int) -> tuple[int, int]:
    """(pairs today's rule would still send, of them kept) among the judged candidates."""
    from hcg_core.graph_build.llm_tiers import candidate_score, spread_pairs

    groups: dict[tuple, list] = {}
    for call, s, t, kept in judged_by_call(calls):
        vs, vt = parse_variable(s), parse_variable(t)
        groups.setdefault((call, vs.metric, vt.metric), []).append((s, t, vs, vt, kept))
    sent = kept_n = 0
    asked: set[tuple[str, str]] = set()  # in call order: a pair is asked in one direction only
    for rows in groups.values():
        scored = [(candidate_score(spec, mentions, vs, vt), (s, t), k) for s, t, vs, vt, k in rows]
        ranked = sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))
        chosen = set(spread_pairs([p for _, p, _ in ranked], per_template, asked))
        asked |= chosen
        sent += len(chosen)
        kept_n += sum(k for _, p, k in ranked if p in chosen)
    return sent, kept_n


def main(argv: list[str] | None = None) -> None:
    from hcg_core.graph_build.evidence import EntityMentions
    from hcg_core.graph_build.llm_tiers import MAX_TEMPLATE_PAIRS, tie
    from hcg_core.store import load_graph

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calls", help="calls.jsonl or a queue's log.jsonl")
    ap.add_argument("graph", help="the graph directory the build wrote")
    ap.add_argument("--rule", action="store_true", help="score today's candidate rule")
    args = ap.parse_args(argv)
    loaded = load_graph(args.graph)
    graph = loaded.graph
    spec, mentions = graph.spec, EntityMentions(graph.chunks)
    rows = []
    for s, t, kept in judged(Path(args.calls)):
        vs, vt = parse_variable(s), parse_variable(t)
        rows.append((tie(spec, mentions, vs, vt)[1], kind(spec, vs, vt), kept))
    n = len(rows)
    print(f"{n} candidates judged, {sum(k for *_, k in rows)} kept")
    seen, kept = Counter(), Counter()
    for _, k, ok in rows:
        seen[k] += 1
        kept[k] += ok
    for k in sorted(seen, key=lambda k: -seen[k]):
        print(f"  {k:<52} {seen[k]:>5} judged, {kept[k] / seen[k]:.0%} kept")
    rows.sort(key=lambda r: r[0])
    for q in range(5):
        part = rows[q * n // 5 : (q + 1) * n // 5]
        if part:
            share = sum(ok for *_, ok in part) / len(part)
            print(
                f"  association {part[0][0]:.2f}-{part[-1][0]:.2f} (fifth {q + 1}): "
                f"{len(part)} judged, {share:.0%} kept"
            )
    if args.rule:
        t2 = (loaded.report or {}).get("stages", {}).get("tier2", {})
        per = int(t2.get("pairs_per_template") or MAX_TEMPLATE_PAIRS)
        sent, kept_n = score_rule(Path(args.calls), spec, mentions, per)
        print(
            f"today's rule would send {sent} of the {n} judged ({per} per template at most): "
            f"{kept_n} kept, {kept_n / max(1, sent):.0%}"
        )


if __name__ == "__main__":
    main()
