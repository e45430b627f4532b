"""The evidence linker (``evidence.link_evidence``): each edge to the chunks that state it.

Small hand-made corpora, one rule each: both endpoints named -> linked, one only -> not; the quote
holder first; the per-edge cap; a chunk naming many endpoints shared out by the chunk cap; a
sentence naming both endpoints before a chunk that only holds them apart.
"""

from __future__ import annotations

from hcg_core.graph_build.evidence import (
    LinkStats,
    chunk_cap,
    endpoint_terms,
    evidence_figures,
    link_evidence,
    metric_words,
    relink_graph,
)
from hcg_core.types import CausalEdge, CausalGraph, Chunk, DomainSpec, Metric, Variable

SALT = Variable("Intake", ("salt",))
PRESSURE = Variable("Pressure", ("blood vessels",))
STROKE = Variable("StrokeRisk")
VARS = (SALT, PRESSURE, STROKE)


def edge(src: Variable, tgt: Variable, eid: str = "e1", **kw) -> CausalEdge:
    return CausalEdge(eid, src.name, tgt.name, kw.pop("mechanism", ""), **kw)


def link(edges, chunks, variables=VARS, **kw):
    stats = LinkStats()
    out = link_evidence(edges, variables, chunks, stats=stats, **kw)
    return out, stats


def test_a_chunk_naming_both_endpoints_is_linked_one_naming_one_is_not():
    chunks = [
        Chunk("only-salt", "Salt is in bread and cheese."),
        Chunk("both", "Too much salt stiffens the blood vessels over the years."),
        Chunk("only-vessels", "Blood vessels carry blood."),
    ]
    (e,), stats = link([edge(SALT, PRESSURE)], chunks)
    assert e.evidence == ("both",)
    assert stats.links["sentence"] == 1 and stats.edges_without_evidence == 0


def test_an_edge_no_chunk_states_gets_no_evidence():
    chunks = [Chunk("a", "Salt is in bread."), Chunk("b", "Blood vessels carry blood.")]
    (e,), stats = link([edge(SALT, PRESSURE, evidence=("a",))], chunks)
    assert e.evidence == ()  # its old evidence is not kept: nothing states it
    assert stats.edges_without_evidence == 1


def test_entity_words_are_whole_words_and_an_acronym_keeps_its_case():
    leukaemia = Variable("Remission", ("ALL",))
    chemo = Variable("Dose", ("chemo",))
    chunks = [
        Chunk("words", "In all cases chemotherapy helps."),  # "all" is not ALL, chemo- not chemo
        Chunk("acronym", "For ALL, chemo is given in phases."),
    ]
    (e,), _ = link([edge(chemo, leukaemia)], chunks, (leukaemia, chemo))
    assert e.evidence == ("acronym",)


def test_a_variable_without_entities_is_named_by_its_metric_words():
    assert metric_words("WhiteBloodCellCount") == ("white", "blood", "cell")  # "count" measures
    assert endpoint_terms(STROKE) == ("stroke", "risk")
    assert endpoint_terms(PRESSURE) == ("blood vessels",)  # an entity: the metric is not needed
    chunks = [
        Chunk("stroke-only", "A stroke damages the brain; blood vessels burst."),
        Chunk("both", "Stiff blood vessels raise the risk of a stroke."),
    ]
    (e,), _ = link([edge(PRESSURE, STROKE)], chunks)
    assert e.evidence == ("both",)


def test_the_quote_holder_comes_first_even_without_the_endpoints():
    chunks = [
        Chunk("search", "Salt stiffens blood vessels. Salt and blood vessels, again."),
        Chunk("quoted", "As the report put it, a salty diet hardens the arteries within years."),
    ]
    quote = "a salty diet hardens the arteries"
    (e,), stats = link([edge(SALT, PRESSURE, quote=quote)], chunks)
    assert e.evidence == ("quoted", "search")
    assert stats.links["quote"] == 1 and stats.edges_by_way["quote"] == 1
    (e,), _ = link([edge(SALT, PRESSURE)], chunks, quotes={"e1": quote.upper()})  # given apart
    assert e.evidence[0] == "quoted"


def test_an_offline_edges_mechanism_sentence_finds_its_chunk():
    chunks = [
        Chunk("other", "Salt and blood vessels are words in this sentence."),
        Chunk("source", "Doctors agree. Salt damages the blood vessels of the kidney. More text."),
    ]
    mech = "Salt damages the blood vessels of the kidney."
    (e,), stats = link([edge(SALT, PRESSURE, mechanism=mech)], chunks)
    assert e.evidence[0] == "source" and stats.links["mechanism"] == 1


def test_at_most_per_edge_chunks_best_first():
    chunks = [Chunk(f"c{i}", f"Salt hurts blood vessels, note {i}.") for i in range(5)]
    chunks.append(Chunk("best", "Salt hurts blood vessels."))  # shortest: the best BM25 share
    (e,), _ = link([edge(SALT, PRESSURE)], chunks)
    assert len(e.evidence) == 2 and e.evidence[0] == "best"
    (e,), _ = link([edge(SALT, PRESSURE)], chunks, per_edge=4)
    assert len(e.evidence) == 4
    (e,), _ = link([edge(SALT, PRESSURE)], chunks, per_edge=1)
    assert e.evidence == ("best",)


def test_one_sentence_naming_both_beats_a_chunk_naming_them_apart():
    chunks = [
        Chunk("apart", "Salt is cheap. " + "Filler words here. " * 3 + "Blood vessels age."),
        Chunk("sentence", "Salt, eaten daily for years, stiffens the blood vessels."),
    ]
    (e,), stats = link([edge(SALT, PRESSURE)], chunks)
    # The chunk that names them apart is no evidence once a sentence names both.
    assert e.evidence == ("sentence",)
    assert stats.links["chunk"] == 0
    (e,), stats = link([edge(SALT, PRESSURE)], chunks[:1])
    assert e.evidence == ("apart",) and stats.links["chunk"] == 1  # when nothing states more


def _hub_case(n_edges: int, own_chunks: bool):
    variables, edges, chunks = [], [], []
    for i in range(n_edges):
        a, b = Variable("Cause", (f"alpha{i}",)), Variable("Effect", (f"beta{i}",))
        variables += [a, b]
        edges.append(edge(a, b, f"e{i}"))
        if own_chunks:
            chunks.append(Chunk(f"own{i}", f"alpha{i} raises beta{i}."))
    hub = "; ".join(f"alpha{i} raises beta{i}" for i in range(n_edges)) + "."
    chunks.append(Chunk("hub", hub))
    return variables, edges, chunks


def test_a_hub_chunk_is_shared_out_by_the_chunk_cap():
    n = 30
    variables, edges, chunks = _hub_case(n, own_chunks=True)
    out, stats = link(edges, chunks, variables)
    cap = chunk_cap(n, len(chunks))
    assert stats.chunk_cap == cap == 2  # 2 links x 30 edges over 31 chunks
    # Every edge's own chunk first (more specific), the hub second for at most the cap.
    assert all(e.evidence[0] == f"own{i}" for i, e in enumerate(out))
    assert sum("hub" in e.evidence for e in out) == cap
    assert stats.edges_short_by_cap == n - cap
    graph = CausalGraph(_spec(), tuple(variables), out, tuple(chunks))
    assert evidence_figures(graph)["max_edges_per_chunk"] == cap
    # Alone, the hub is shared out too: its cap is then the even share, the rest get none.
    variables, edges, chunks = _hub_case(n, own_chunks=False)
    out, stats = link(edges, chunks, variables)
    assert stats.chunk_cap == 2 * n  # one chunk for every link: no chunk is "too busy"
    assert all(e.evidence == ("hub",) for e in out)
    out, stats = link(edges, [*chunks, *(Chunk(f"x{i}", "filler") for i in range(99))], variables)
    assert stats.chunk_cap == 2 * n  # chunks naming no endpoint do not count
    lone = [Chunk(f"x{i}", f"alpha{i % n} alone.") for i in range(99)]  # one endpoint each
    out, stats = link(edges, [*chunks, *lone], variables)
    assert stats.chunk_cap == 1  # 60 links over the 100 chunks naming an endpoint
    assert sum(bool(e.evidence) for e in out) == 1 and stats.edges_without_evidence == n - 1


def test_the_cap_is_two_percent_of_the_edges_unless_the_corpus_is_too_small():
    assert chunk_cap(2158, 1155) == 43  # the recorded medical graph: 2% of its edges
    assert chunk_cap(2158, 1155, share=0.05) == 107
    assert chunk_cap(195, 1155) == 3  # the even share is 1: 2% rules
    assert chunk_cap(52, 8) == 13  # 104 links over 8 chunks
    assert chunk_cap(0, 0) == 1


def _spec() -> DomainSpec:
    return DomainSpec((), (Metric("Cause"), Metric("Effect")))


def test_relink_keeps_every_edge_and_an_unchanged_edge_is_the_same_object():
    chunks = (Chunk("c", "Salt stiffens the blood vessels."), Chunk("d", "Nothing here."))
    spec = DomainSpec((), (Metric("Intake"), Metric("Pressure"), Metric("StrokeRisk")))
    first = CausalGraph(
        spec,
        VARS,
        (edge(SALT, PRESSURE, "e1"), edge(PRESSURE, STROKE, "e2", evidence=("d",))),
        chunks,
    )
    linked, stats = relink_graph(first)
    assert [e.id for e in linked.edges] == ["e1", "e2"]
    assert linked.edges[0].evidence == ("c",) and linked.edges[1].evidence == ()
    again, _ = relink_graph(linked)
    assert all(a is b for a, b in zip(again.edges, linked.edges, strict=True))
    assert stats.as_dict()["links"] == 1


def test_no_edges_or_no_chunks_link_nothing():
    assert link([], [Chunk("c", "salt")])[0] == ()
    (e,), stats = link([edge(SALT, PRESSURE)], [])
    assert e.evidence == () and stats.edges_without_evidence == 1
