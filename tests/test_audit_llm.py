"""Corrections survive an LLM rebuild: build over HTTP (stub server), correct, rebuild from the
corrected spec with the same reply cache, re-apply the same corrections.yaml."""

from __future__ import annotations

import pytest
import yaml
from fixtures.llm.responder import respond
from test_llm_pipeline import EMB, http_build

from hcg_core.audit import apply_to_directory, diff_graphs
from hcg_core.audit.diff import is_empty
from hcg_core.store import load_graph, save_graph
from hcg_core.testing import StubLLMServer


def save(result, path):
    save_graph(
        result.graph,
        path,
        embedder_name=EMB.name,
        variable_embeddings=result.variable_embeddings,
        chunk_embeddings=result.chunk_embeddings,
    )
    return path


@pytest.mark.slow
def test_llm_rebuild_from_the_corrected_spec_keeps_the_corrections(tmp_path):
    cache = tmp_path / "cache"
    with StubLLMServer(respond) as srv:
        first = http_build(srv, cache)
        assert srv.calls > 0
        g = first.graph
        seeds = {(r.source, r.target) for r in g.spec.relations}
        accept, reject = [e for e in g.edges if (e.source, e.target) not in seeds][:2]
        corrections = tmp_path / "corrections.yaml"
        corrections.write_text(
            yaml.safe_dump(
                {
                    "format": "hcg-corrections",
                    "version": 1,
                    "corrections": [
                        {"op": "accept_edge", "edge": accept.id},
                        {"op": "reject_edge", "edge": reject.id},
                        {"op": "edit_edge", "edge": accept.id, "confidence": 0.99},
                    ],
                }
            ),
            encoding="utf-8",
        )
        report = apply_to_directory(save(first, tmp_path / "g"), corrections, tmp_path / "g2")
        assert not report.refused
        corrected = load_graph(tmp_path / "g2").graph
        assert (accept.source, accept.target) in {
            (r.source, r.target) for r in corrected.spec.relations
        }

        srv.reset_counts()
        rebuilt = http_build(srv, cache, spec=corrected.spec)
        # Rejecting and editing edges changes no prompt. Accepting one adds a seed relation,
        # which Tier 1 is shown (the paper's Algorithm 1 passes R0): at most the Tier 1 call of
        # its source metric is asked again; every other reply is cached.
        assert set(srv.by_schema) <= {"Tier1Reply"} and srv.calls <= 1
        assert rebuilt.report["totals"]["calls"] == srv.calls
        ids = {e.id for e in rebuilt.graph.edges}
        assert accept.id in ids  # a seed relation of the corrected spec: the pipeline keeps it
        assert reject.id in ids  # the builder does not know it was rejected ...

        apply_to_directory(save(rebuilt, tmp_path / "g3"), corrections, tmp_path / "g4")
        again = load_graph(tmp_path / "g4").graph
        # ... so the same corrections.yaml, applied again, gives back the corrected graph.
        assert is_empty(diff_graphs(corrected, again))
        assert reject.id not in {e.id for e in again.edges}
