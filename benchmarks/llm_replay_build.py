"""Replay a recorded live LLM build through this code, over real HTTP, with no model.

A queue build (``../shared/tools/llm_queue``) leaves every request and reply in ``log.jsonl``. This
script serves those replies from ``hcg_core.testing.StubLLMServer`` on 127.0.0.1, keyed by the
request's messages, and runs ``hcg build`` against it. A request the recording does not hold is
answered ``{}`` (which fails validation) and counted as a miss: a refactor of the LLM build that
leaves its prompts and their order of meaning unchanged makes no miss and writes the same graph as
the recorded build (compare the two with ``--compare``).

    python benchmarks/llm_replay_build.py QUEUE/log.jsonl CORPUS --out OUT [--compare GRAPH] -- --tier XS
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from hcg_core.testing import StubLLMServer


def _key(messages) -> str:
    return json.dumps([[m.get("role"), m.get("content")] for m in messages], sort_keys=True)


def load_replies(log: Path) -> dict[str, str]:
    """messages → reply text, for every request the recording answered."""
    replies = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        content = (rec.get("answer") or {}).get("content")
        if content is None:
            continue
        replies[_key(rec["request"]["messages"])] = (
            content if isinstance(content, str) else json.dumps(content)
        )
    return replies


def graph_files(graph: Path) -> dict[str, str]:
    """The current version's graph files that a build decides (no timings, no report)."""
    manifest = json.loads((graph / "manifest.json").read_text(encoding="utf-8"))
    version = graph / manifest.get("current", ".")
    return {
        name: (version / name).read_text(encoding="utf-8")
        for name in ("graph.json", "spec.yaml", "chunks.jsonl")
        if (version / name).exists()
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("corpus")
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", type=Path, help="the recorded build's graph directory")
    ap.add_argument("--hcg", default="hcg")
    args, flags = ap.parse_known_args(argv)
    flags = [f for f in flags if f != "--"]
    replies = load_replies(args.log)
    misses = []

    def respond(req):
        reply = replies.get(_key(req.messages))
        if reply is None:
            misses.append(req.schema_name)
            return {}
        return reply

    with StubLLMServer(respond, model="queue-model") as srv:
        cmd = [
            args.hcg,
            "build",
            args.corpus,
            "--out",
            args.out,
            "--llm-base-url",
            srv.base_url,
            "--llm-model",
            "queue-model",
            "--max-retries",
            "1",
            *flags,
        ]
        rc = subprocess.run(cmd, env={**os.environ, "OPENAI_API_KEY": "sk-local"}).returncode
        print(
            f"build exit {rc}; {srv.calls} requests; {len(replies)} recorded replies; "
            f"{len(misses)} not in the recording {sorted(set(misses))}"
        )
    if args.compare:
        old, new = graph_files(args.compare), graph_files(Path(args.out))
        differ = [n for n in sorted(set(old) | set(new)) if old.get(n) != new.get(n)]
        print("graph files identical" if not differ else f"graph files differ: {differ}")
        return 1 if differ or misses or rc else 0
    return 1 if misses or rc else 0


if __name__ == "__main__":
    sys.exit(main())
