"""Mutation check: small behaviour changes to a copy of hcg_core, each of which the core tests must catch.

Each mutant replaces one or a few exact snippets of a module (a tie-break dropped, a bound
inverted, an option ignored) in a temporary copy of the package and runs the core tests against
that copy. A mutant the tests still pass is "survived": a behaviour no test pins. A snippet that
no longer occurs exactly once is reported as "stale" (the code moved on; update the mutant).

Not part of the default test run (pytest collects ``test_*.py`` only). Run it from the repository
root (about a minute per ten mutants):

    python tests/mutants.py                 # all mutants; exit status 1 if any survived or is stale
    python tests/mutants.py --list          # names only
    python tests/mutants.py cone_rank_inverted budget_never_crosses   # some of them

See docs/testing.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_TESTS = (
    "tests/test_retrieval_paper.py",
    "tests/test_retrieval_cones.py",
    "tests/test_hybrid.py",
    "tests/test_walk.py",
    "tests/test_offline_build.py",
    "tests/test_offline_golden.py",
    "tests/test_offline_steps.py",
    "tests/test_doctests.py",
    "tests/test_incremental.py",
    "tests/test_generic_words.py",
    "tests/test_path_signs.py",
    "tests/test_blocks.py",
    "tests/test_evidence_linker.py",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository root
    edits: tuple[tuple[str, str], ...]  # (exact old snippet, replacement)
    why: str


def m(name: str, path: str, why: str, *edits: tuple[str, str]) -> Mutant:
    return Mutant(name, path, tuple(edits), why)


MUTANTS = (
    # ---------------------------------------------------------------- incremental edits
    m(
        "incremental_no_lift",
        "hcg_core/graph_build/incremental.py",
        "an inserted statement no longer supports its ancestors' links (the build's lifting)",
        ("if self.lift else ((), ())", "if False else ((), ())"),
    ),
    m(
        "incremental_updated_by_dropped_evidence",
        "hcg_core/graph_build/incremental.py",
        "a recomputed edge is compared with the old one without its links, so it counts as updated",
        ("            new = replace(new, evidence=old.evidence)\n", ""),
    ),
    m(
        "bm25_delta_ignored",
        "hcg_core/retrieval/lexical.py",
        "documents added since the last CSR merge are not scored",
        ("        if not delta_nnz:", "        if True:"),
    ),
    m(
        "delete_keeps_sentences",
        "hcg_core/graph_build/incremental.py",
        "a sentence no chunk holds any more keeps supporting its links",
        ("                if held:\n                    continue\n", "                continue\n"),
    ),
    # ---------------------------------------------------------------- Stage 3 (paper.py)
    m(
        "cone_similarity_tiebreak_removed",
        "hcg_core/retrieval/paper.py",
        "cones of equal convergence ordered by metric only, not by their best-matched node",
        (
            "order = np.lexsort((np.arange(present.size), -best_sim, -counts))",
            "order = np.lexsort((np.arange(present.size), -counts))",
        ),
    ),
    m(
        "cone_rank_inverted",
        "hcg_core/retrieval/paper.py",
        "a node in several cones takes the worst cone's rank instead of the best",
        (
            "table.argmax(axis=1)",
            "table.shape[1] - 1 - table[:, ::-1].argmax(axis=1)",
        ),
    ),
    m(
        "bfs_expands_end_nodes",
        "hcg_core/retrieval/paper.py",
        "BFS continues past outcome and terminal nodes",
        ("frontier = frontier[~stop[frontier]]", "frontier = frontier"),
        ("& ((hop == 0) | ~stop[out_src])", "& (hop >= 0)"),
        ("keep = ~stop[node]", "keep = node >= 0"),
    ),
    m(
        "band_threshold_max",
        "hcg_core/retrieval/paper.py",
        "the admission threshold is the larger of floor and band, not the smaller",
        (
            "tau = np.minimum(tau_min, best[kept]",
            "tau = np.maximum(tau_min, best[kept]",
        ),
    ),
    m(
        "per_metric_cap_ignored",
        "hcg_core/retrieval/paper.py",
        "more than P variables admitted per metric",
        (
            "out = rows[np.arange(rows.size) - first < per_metric]",
            "out = rows",
        ),
    ),
    # ---------------------------------------------------------------- retriever and hybrid
    m(
        "budget_never_crosses",
        "hcg_core/retrieval/retriever.py",
        "the word budget is never crossed, instead of the last chunk crossing it",
        (
            "before = used + np.cumsum(self.compiled.chunk_words[rows]) - self.compiled.chunk_words[rows]",
            "before = used + np.cumsum(self.compiled.chunk_words[rows])",
        ),
        (
            'return rows[: int(np.searchsorted(before, budget, side="left"))]',
            'return rows[: int(np.searchsorted(before, budget, side="right"))]',
        ),
    ),
    m(
        "walk_one_way",
        "hcg_core/retrieval/walk.py",
        "the graph walk follows edges from cause to effect only, never back",
        ("rows = np.concatenate([src, dst])", "rows = np.concatenate([src, src])"),
        ("cols = np.concatenate([dst, src])", "cols = np.concatenate([dst, dst])"),
    ),
    m(
        "walk_solved_restart_uncorrected",
        "hcg_core/retrieval/walk.py",
        "the walk solved at load drops the correction for mass restarting from edgeless variables",
        (
            "out[cited] = (1.0 - d) / (1.0 - d * float(u[top] @ s)) * (seeded @ s)",
            "out[cited] = (1.0 - d) * (seeded @ s)",
        ),
    ),
    m(
        "paper_query_order_unselected",
        "hcg_core/retrieval/retriever.py",
        "paper mode's query order ranks every chunk, not only those the cones' edges cite",
        ("            allowed=selected,\n", "            allowed=allowed,\n"),
    ),
    m(
        "walk_signal_unscaled",
        "hcg_core/retrieval/hybrid.py",
        "the walk's mass enters the fusion raw, not on the text signals' scale",
        (
            "return standardise(part, best), best",
            "return part, best",
        ),
    ),
    m(
        "parts_read_own_vector",
        "hcg_core/retrieval/hybrid.py",
        "a piece's part in the next paragraph reads its own piece's vector, not one centred there",
        (
            "rows = part_vector_rows(self.spans, self.parent, spans)",
            "rows = self.parent",
        ),
    ),
    m(
        "parts_not_joined",
        "hcg_core/retrieval/hybrid.py",
        "two parts of one piece come back as two results with one id",
        (
            "out = joined_parts(out, {self.units[r].id: self.chunks[self.parent[r]] for r in parts})",
            "out = list(out)",
        ),
    ),
    m(
        "parts_k_counts_units",
        "hcg_core/retrieval/hybrid.py",
        "k counts a piece's parts, so fewer than k pieces come back",
        (
            "owners=self.parent[pool] if self._has_parts else None,",
            "owners=None,",
        ),
    ),
    # ---------------------------------------------------------------- offline builder
    m(
        "offline_lift_off",
        "hcg_core/graph_build/offline.py",
        "the offline builder never lifts support to generic variables",
        ("    lift = cfg.lift and spec is None\n", "    lift = False\n"),
    ),
    m(
        "offline_drop_weak_off",
        "hcg_core/graph_build/offline.py",
        "weak single-sentence variables are kept",
        (
            "dropped_weak = drop_weak_nodes(support) if cfg.drop_weak else 0",
            "dropped_weak = 0",
        ),
    ),
    m(
        "offline_generic_words_kept",
        "hcg_core/graph_build/generic.py",
        "one-word variables of generic words are kept",
        (
            "        if share >= min_share and ridf < max_ridf:",
            "        if False:",
        ),
    ),
    m(
        "offline_edge_sign_dropped",
        "hcg_core/graph_build/edges.py",
        "offline edges carry no sign",
        (
            "        effect=sentence_effect(sentence),",
            '        effect="",',
        ),
    ),
    m(
        "offline_max_evidence_ignored",
        "hcg_core/graph_build/offline.py",
        "the offline build links evidence without its max_evidence cap",
        (
            "graph, linking = relink_graph(graph, per_edge=build.cfg.max_evidence)",
            "graph, linking = relink_graph(graph, per_edge=10**9)",
        ),
    ),
    # ---------------------------------------------------------------- the evidence linker
    m(
        "evidence_one_endpoint_enough",
        "hcg_core/graph_build/evidence.py",
        "a chunk naming either endpoint is evidence, not only one naming both",
        (
            "both = masks[edge.source] & masks[edge.target]",
            "both = masks[edge.source] | masks[edge.target]",
        ),
    ),
    m(
        "evidence_chunk_cap_ignored",
        "hcg_core/graph_build/evidence.py",
        "a chunk naming many endpoints becomes the evidence of every edge (a hub)",
        (
            "if way >= SENTENCE and load[c_i] >= cap:",
            "if way >= SENTENCE and load[c_i] >= 10**9:",
        ),
    ),
    m(
        "evidence_chunk_level_always",
        "hcg_core/graph_build/evidence.py",
        "a chunk naming the endpoints apart is linked even when a sentence names both",
        (
            "if way == CHUNK and any(w < CHUNK for w, _n, _c in picks):",
            "if False:",
        ),
    ),
    m(
        "evidence_quote_not_first",
        "hcg_core/graph_build/evidence.py",
        "the quote holder is ranked like any other chunk",
        (
            "cands.append((way, -score, e_i, c_i))",
            "cands.append((SENTENCE, -score, e_i, c_i))",
        ),
    ),
    m(
        "offline_fragments_counted_twice",
        "hcg_core/graph_build/statements.py",
        "a sentence fragment cut by a chunk edge counts as a second supporting sentence",
        ("if not within[i] & kept:", "if True:"),
    ),
    m(
        "offline_terminal_edges_kept",
        "hcg_core/graph_build/offline.py",
        "edges leaving a terminal metric are kept",
        (
            'support, {i for i, r in enumerate(metric_roles) if r == "terminal"}',
            "support, set()",
        ),
    ),
    m(
        "offline_min_variable_support_ignored",
        "hcg_core/graph_build/support.py",
        "every entity becomes its own variable, however rarely stated",
        (
            "key.is_existing or (support[key] >= min_support and kept[key.metric] < max_per_metric)",
            "key.is_existing or kept[key.metric] < max_per_metric",
        ),
    ),
    m(
        "offline_sentence_weight",
        "hcg_core/graph_build/edges.py",
        "a supporting sentence adds more confidence",
        ("SENTENCE_WEIGHT = 0.6", "SENTENCE_WEIGHT = 0.7"),
    ),
    m(
        "extract_negation_ignored",
        "hcg_core/graph_build/extract.py",
        "negated cues ('does not cause') become statements",
        (
            'return any(w in _NEGATIONS or w.endswith("n\'t") for w in tail)',
            "return False",
        ),
    ),
)


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "hcg_core", dest / "hcg_core", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    # test_incremental.py edits the example corpus through both adapters.
    for extra in ("llama_index_hcg", "langchain_hcg", "examples/corpus"):
        shutil.copytree(ROOT / extra, dest / extra, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def _apply(dest: Path, mutant: Mutant) -> str | None:
    """Apply the edits in ``dest``; the reason it cannot be applied, or None."""
    path = dest / mutant.path
    text = path.read_text(encoding="utf-8")
    for old, new in mutant.edits:
        n = text.count(old)
        if n != 1:
            return f"snippet found {n} times in {mutant.path}: {old!r}"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return None


def _run_tests(dest: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess:
    # The copy comes first on the path (cwd and PYTHONPATH), so the editable install is not used.
    env = {**os.environ, "PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    return subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True)


def _first_failure(out: str) -> str:
    for line in out.splitlines():
        if line.startswith("FAILED") or line.startswith("ERROR"):
            return line[:150]
    return out.strip().splitlines()[-1][:150] if out.strip() else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="run only these mutants (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--tests", nargs="+", default=list(CORE_TESTS), help="test files to run")
    args = ap.parse_args(argv)
    if args.list:
        for mu in MUTANTS:
            print(f"{mu.name:40} {mu.path:36} {mu.why}")
        return 0
    unknown = set(args.names) - {mu.name for mu in MUTANTS}
    if unknown:
        ap.error(f"unknown mutant(s): {', '.join(sorted(unknown))}")
    chosen = [mu for mu in MUTANTS if not args.names or mu.name in args.names]
    tests = tuple(args.tests)
    with tempfile.TemporaryDirectory(prefix="hcg-mutants-") as tmp:
        base = Path(tmp) / "base"
        _copy_tree(base)
        t = time.perf_counter()
        proc = _run_tests(base, tests)
        if proc.returncode != 0:
            print("the unmutated copy fails the tests; fix them first:\n" + proc.stdout[-2000:])
            return 2
        print(f"baseline: core tests pass ({time.perf_counter() - t:.1f} s)")
        killed, survived, stale = [], [], []
        for mu in chosen:
            dest = Path(tmp) / mu.name
            _copy_tree(dest)
            problem = _apply(dest, mu)
            if problem:
                stale.append(mu.name)
                print(f"STALE     {mu.name}: {problem}")
                continue
            t = time.perf_counter()
            proc = _run_tests(dest, tests)
            took = time.perf_counter() - t
            if proc.returncode == 0:
                survived.append(mu.name)
                print(f"SURVIVED  {mu.name} ({took:.1f} s): {mu.why}")
            else:
                killed.append(mu.name)
                print(f"killed    {mu.name} ({took:.1f} s): {_first_failure(proc.stdout)}")
            shutil.rmtree(dest, ignore_errors=True)
    print(f"\n{len(killed)}/{len(chosen)} killed, {len(survived)} survived, {len(stale)} stale")
    return 0 if not survived and not stale else 1


if __name__ == "__main__":
    sys.exit(main())
