"""Each step of the offline builder on its own: statements, vocabulary, support, dimensions, edges."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from hcg_core.config import OfflineBuildConfig
from hcg_core.errors import ConfigError
from hcg_core.graph_build.dimensions import dimensions, display_entity, spherical_kmeans
from hcg_core.graph_build.edges import edge_confidence, make_edges
from hcg_core.graph_build.extract import extract_statements
from hcg_core.graph_build.statements import (
    SentenceCorpus,
    collect_statements,
    containers,
    distinct_sentences,
)
from hcg_core.graph_build.support import (
    ancestors,
    choose_nodes,
    drop_leaving,
    drop_weak_nodes,
    link_support,
    roles,
)
from hcg_core.spec.offline_vocabulary import (
    NodeKey,
    Vocabulary,
    entity_key,
    generate_vocabulary,
    span_texts,
    unique_names,
)
from hcg_core.types import Chunk, OutcomeConfig, Variable

# ------------------------------------------------------------------ statements


def test_sentences_are_stored_once_with_their_chunks():
    c = collect_statements(
        [
            Chunk("a", "Smoking causes cancer. Salt raises blood pressure."),
            Chunk("b", "Salt raises blood pressure. The sky is blue."),
        ]
    )
    assert c.sentences == [
        "Smoking causes cancer.",
        "Salt raises blood pressure.",
        "The sky is blue.",
    ]
    assert c.chunks_of == [[0], [0, 1], [1]]
    assert [s.sentence for s in c.statements] == [0, 1]


def _naive_containers(sentences, ids):
    return {i: frozenset(j for j in ids if j != i and sentences[i] in sentences[j]) for i in ids}


def test_containers_match_the_pairwise_definition():
    s = [
        "Smoking causes lung cancer in most cases.",
        "causes lung cancer in",  # a chunk cut at both ends
        "Smoking causes lung cancer",  # cut at the end
        "lung cancer in most cases.",  # cut at the start
        "Salt kills.",  # two words: no inner word
        "kills.",
        "Heavy salt kills. Salt kills.",
        "cancer in most",  # contained in 0 and 3
    ]
    ids = list(range(len(s)))
    assert containers(s, ids) == _naive_containers(s, ids)
    assert containers(s, ids)[7] == {0, 3}
    assert containers(s, [1, 2]) == {1: frozenset(), 2: frozenset()}  # only within ``ids``


def test_containers_match_on_random_fragments():
    rng = np.random.default_rng(0)
    words = ["a", "bb", "ccc", "a.", "dd", "e"]
    s = [" ".join(rng.choice(words, size=rng.integers(1, 8))) for _ in range(120)]
    s = list(dict.fromkeys(s))  # sentences of a corpus are distinct
    assert containers(s, range(len(s))) == _naive_containers(s, list(range(len(s))))


def test_containers_match_on_fragments_cut_mid_word():
    # A chunk edge may cut a word: the fragment's first and last words are then only the end
    # and the start of the container's words; sentences sharing all but their first or last
    # word (indexed together) must not be taken for containers.
    rng = np.random.default_rng(1)
    words = ["lung", "cancer", "raises", "risk", "in", "case", "1.", "2.", "ab", "b"]
    full = [" ".join(rng.choice(words, size=rng.integers(2, 9))) for _ in range(60)]
    cuts = []
    for text in full:
        a, b = sorted(rng.integers(0, len(text) + 1, size=2))
        cuts.append(text[a:b].strip())
    s = list(dict.fromkeys(t for t in full + cuts if t))
    s += ["case 1. and more", "x case 1.", "case 1.x"]  # same inner words, other first/last
    s += ["risk  in case", "risk in\tcase 1.", " in case "]  # other whitespace: `in` decides
    ids = list(range(len(s)))
    got = containers(s, ids)
    assert got == _naive_containers(s, ids)
    assert sum(map(len, got.values())) > 50  # the cuts did produce containments to find


def test_distinct_sentences_drop_fragments_longest_first():
    s = ["Smoking causes lung cancer in most cases.", "causes lung cancer in", "Salt kills."]
    within = containers(s, [0, 1, 2])
    assert distinct_sentences([1, 2, 0], s, within) == [0, 2]
    assert distinct_sentences([1, 2], s, within) == [1, 2]  # no container among them


# ------------------------------------------------------------------ vocabulary


def test_node_key_orders_generic_existing_then_entities():
    keys = [NodeKey(1, "b"), NodeKey(1, existing=("z",)), NodeKey(1), NodeKey(0, "a")]
    assert sorted(keys, key=NodeKey.sort_key) == [keys[3], keys[2], keys[1], keys[0]]
    assert NodeKey(2, "cell skin basal").normalised() == NodeKey(2, "basal cell skin")
    assert NodeKey(2, existing=("b a",)).normalised() == NodeKey(2, existing=("b a",))
    assert NodeKey(2, "x").generic() == NodeKey(2)
    with pytest.raises(AttributeError):
        NodeKey(0).metric = 1  # frozen


def test_entity_key_and_names():
    assert entity_key("cell skin cell") == "cell skin"
    assert unique_names(["blood pressure", "blood-pressure"]) == [
        "Blood_Pressure",
        "Blood_Pressure_2",
    ]


def _statements(*sentences):
    out = []
    for i, s in enumerate(sentences):
        out.extend(extract_statements(s, i))
    return out


def test_generate_vocabulary_seeds_metrics_by_support_and_cue():
    sts = _statements(
        "Smoking causes lung cancer.",
        "Asbestos causes lung cancer.",
        "Salt affects mood.",  # one weak statement: neither head seeds a metric
    )
    texts = span_texts(sts)
    assert texts == ["smoking", "lung cancer", "asbestos", "salt", "mood"]
    vec = np.eye(len(texts), dtype=np.float32)  # orthogonal: nothing merges
    vocab = generate_vocabulary(sts, vec, {t: i for i, t in enumerate(texts)}, 40, 2, 0.7)
    # Ties on support and cue strength go alphabetically.
    assert vocab.heads == ["cancer", "asbestos", "smoking"]
    assert vocab.assign["lung cancer"] == NodeKey(0, "lung")
    assert vocab.assign["smoking"] == NodeKey(2)
    assert vocab.assign["salt"] is None and vocab.assign["mood"] is None
    assert vocab.dropped == 2
    # A rare span close to a metric's centroid joins it, keeping its head in the entity.
    vec[3] = vec[0]
    merged = generate_vocabulary(sts, vec, {t: i for i, t in enumerate(texts)}, 40, 2, 0.7)
    assert merged.assign["salt"] == NodeKey(2, "salt") and merged.dropped == 1
    # The cap keeps the best-supported heads.
    capped = generate_vocabulary(sts, vec, {t: i for i, t in enumerate(texts)}, 1, 2, 0.7)
    assert capped.heads == ["cancer"]


# ------------------------------------------------------------------ support


def _vocab(assign):
    return Vocabulary(heads=["smoking", "cancer", "death"], assign=assign)


def test_choose_nodes_keeps_supported_entities_and_collapses_the_rest():
    sts = _statements(
        "Smoking causes lung cancer.",
        "Asbestos causes lung cancer.",
        "Smoking causes skin cancer.",
    )
    vocab = _vocab(
        {
            "smoking": NodeKey(0),
            "asbestos": NodeKey(0, "asbestos"),
            "lung cancer": NodeKey(1, "lung"),
            "skin cancer": NodeKey(1, "skin"),
        }
    )
    nodes = choose_nodes(sts, vocab, min_support=2, max_per_metric=24)
    assert nodes.keep[NodeKey(1, "lung")] == NodeKey(1, "lung")
    assert nodes.keep[NodeKey(1, "skin")] == NodeKey(1)  # one statement
    assert nodes.keep[NodeKey(0, "asbestos")] == NodeKey(0)
    assert nodes.node_aliases()[NodeKey(1)] == Counter({"skin cancer": 1})
    assert nodes.metric_aliases()[1] == Counter({"lung cancer": 2, "skin cancer": 1})
    capped = choose_nodes(sts, vocab, min_support=1, max_per_metric=1)
    assert capped.keep[NodeKey(1, "lung")] == NodeKey(1, "lung")  # best supported first
    assert capped.keep[NodeKey(1, "skin")] == NodeKey(1)


def test_lift_supports_ancestors_at_a_discount():
    sts = _statements("Smoking causes basal cell skin cancer.", "Sun causes skin cancer.")
    vocab = _vocab(
        {
            "smoking": NodeKey(0),
            "sun": NodeKey(0, "sun"),
            "basal cell skin cancer": NodeKey(1, "basal cell skin"),
            "skin cancer": NodeKey(1, "skin"),
        }
    )
    nodes = choose_nodes(sts, vocab, min_support=1, max_per_metric=24)
    up = ancestors(nodes)
    assert up[NodeKey(1, "basal cell skin")] == [NodeKey(1), NodeKey(1, "skin")]
    assert up[NodeKey(1, "skin")] == [NodeKey(1)]
    assert up[NodeKey(0)] == []
    support, din, dout = link_support(sts, vocab, nodes, lift=True, lift_discount=0.5)
    smoke, basal = NodeKey(0), NodeKey(1, "basal cell skin")
    assert support[(smoke, basal)] == {0: 0.95}
    # "sun" is an entity of metric 0, so "Sun causes skin cancer" lifts onto Smoking(generic).
    assert support[(smoke, NodeKey(1, "skin"))] == {0: 0.475, 1: 0.475}
    assert support[(smoke, NodeKey(1))] == {0: 0.475, 1: 0.475}
    assert (din[1], dout[0]) == (2, 2)
    plain, _, _ = link_support(sts, vocab, nodes, lift=False, lift_discount=0.5)
    assert set(plain) == {(smoke, basal), (NodeKey(0, "sun"), NodeKey(1, "skin"))}


def test_drop_weak_and_terminal_links():
    a, b, c = NodeKey(0), NodeKey(1), NodeKey(2)
    support = {(a, b): {0: 0.95}, (b, c): {1: 0.6}, (a, c): {2: 0.95, 3: 0.6}}
    # c is stated by two sentences, b by two; nothing is a one-weak-sentence node.
    assert drop_weak_nodes(dict(support)) == 0
    weak = {(a, b): {0: 0.95}, (b, c): {1: 0.6}}
    assert drop_weak_nodes(weak) == 1 and weak == {(a, b): {0: 0.95}}  # c: one weak sentence
    assert drop_leaving(support, {1}) == 1 and (b, c) not in support


def test_roles_generated_and_forced():
    warnings: list[str] = []
    din, dout = Counter({1: 3, 2: 2}), Counter({0: 4, 1: 1})
    assert roles(3, ["A", "B", "C"], din, dout, None, None, warnings) == [
        "intermediate",
        "outcome",
        "terminal",
    ]
    forced = roles(3, ["A", "B", "C"], din, dout, OutcomeConfig(("a",), ("x",)), None, warnings)
    assert forced == ["outcome", "outcome", "terminal"]
    assert warnings == [
        "outcome configuration names 'x', which is not a metric of this graph; it was ignored"
    ]


# ------------------------------------------------------------------ dimensions


def test_spherical_kmeans_is_deterministic_and_capped():
    x = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert spherical_kmeans(x, np.ones(4), 2).tolist() == [0, 0, 1, 1]
    assert spherical_kmeans(x, np.ones(4), 10).tolist() == [0, 1, 2, 3]
    assert spherical_kmeans(x, np.ones(4), 1).tolist() == [0, 0, 0, 0]


def test_display_entity_uses_the_written_order():
    node = NodeKey(0, "cell skin")
    # The most frequent way of writing it wins.
    assert display_entity(node, Counter({"skin cell": 1, "cells of the skin": 3})) == "cell skin"
    assert display_entity(node, Counter({"skin cell": 3, "cells of the skin": 1})) == "skin cell"
    assert display_entity(NodeKey(0, "x y"), Counter()) == "x y"


def test_dimensions_cluster_metrics_with_entities():
    from hcg_core.embedders import HashingEmbedder

    used = [NodeKey(0), NodeKey(1), NodeKey(1, "lung"), NodeKey(2, "kidney")]
    aliases = {NodeKey(1, "lung"): Counter({"lung cancer": 2}), NodeKey(2, "kidney"): Counter()}
    vocab = Vocabulary(heads=["smoking", "cancer", "damage"], assign={})
    dims, sig, ents = dimensions(used, aliases, Counter(), vocab, None, 1, HashingEmbedder(dim=64))
    # One dimension (the cap), named by its most common last word (ties alphabetically).
    assert [d.name for d in dims] == ["kidney"]
    assert dims[0].entities == ("lung", "general", "kidney")
    assert sig == {1: ("kidney",), 2: ("kidney",)}
    assert ents == {
        NodeKey(0): (),
        NodeKey(1): ("general",),
        NodeKey(1, "lung"): ("lung",),
        NodeKey(2, "kidney"): ("kidney",),
    }


# ------------------------------------------------------------------ edges


def test_confidence_is_a_noisy_or_capped_below_one():
    assert edge_confidence([0.9]) == 0.54
    assert edge_confidence([0.95] * 20) == 0.99
    assert edge_confidence([]) == 0.0


def test_make_edges_mechanism_confidence_and_fragments():
    corpus = SentenceCorpus(
        sentences=["Smoking causes cancer in men.", "Smoking causes cancer", "Smoking harms."],
        chunks_of=[[1], [0], [2]],
    )
    a, b = NodeKey(0), NodeKey(1)
    var_of = {a: Variable("Smoking"), b: Variable("Cancer")}
    # Sentence 1 is a fragment of sentence 0: counted once, so one sentence's confidence.
    (edge,) = make_edges({(a, b): {0: 0.95, 1: 0.95}}, var_of, corpus)
    assert (edge.source, edge.target) == ("Smoking", "Cancer")
    assert edge.mechanism == "Smoking causes cancer in men."
    assert edge.confidence == edge_confidence([0.95])
    assert edge.evidence == ()  # the linker sets it (evidence.link_evidence), not make_edges
    # Two distinct sentences: the stronger is the mechanism.
    (edge,) = make_edges({(a, b): {0: 0.6, 2: 0.95}}, var_of, corpus)
    assert edge.mechanism == "Smoking harms."
    assert edge.confidence == edge_confidence([0.6, 0.95])


# ------------------------------------------------------------------ ledger


def test_ledger_lists_nodes_in_node_key_order():
    # incremental.json must not depend on a set's iteration order (hash(None) changes between
    # processes, and NodeKey holds None): the ledger lists its nodes sorted.
    from hcg_core.corpus import chunk_documents, load_inputs
    from hcg_core.embedders import HashingEmbedder
    from hcg_core.graph_build.offline import build_offline

    docs, _ = load_inputs([Path(__file__).resolve().parents[1] / "examples" / "corpus"])
    ledger = build_offline(chunk_documents(docs), embedder=HashingEmbedder(), progress=False).ledger
    nodes = list(ledger.nodes)
    assert len(nodes) > 20
    assert nodes == sorted(nodes, key=lambda n: NodeKey(n[0], n[1]).sort_key())


# ------------------------------------------------------------------ config


def test_offline_build_config_checks_and_options():
    assert OfflineBuildConfig().lift is True
    cfg = OfflineBuildConfig.from_options(OfflineBuildConfig(max_evidence=2), lift=False)
    assert (cfg.lift, cfg.max_evidence) == (False, 2)
    with pytest.raises(ConfigError, match="unknown offline build option.*max_hopz"):
        OfflineBuildConfig.from_options(max_hopz=3)
    with pytest.raises(ConfigError, match="max_evidence"):
        OfflineBuildConfig(max_evidence=0)
    with pytest.raises(ConfigError, match="lift_discount"):
        OfflineBuildConfig(lift_discount=1.5)
