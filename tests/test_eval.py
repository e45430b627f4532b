"""The evaluation tool: the metric's exact definition, the runner's aggregates, baselines, CLI."""

from __future__ import annotations

import argparse
import hashlib
import json

import pytest

from hcg_core.corpus import chunk_documents, word_spans
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError, InputError
from hcg_core.eval.baselines import (
    bm25_system,
    documents_from_chunks,
    fill_budget,
    vector_system,
    word_windows,
)
from hcg_core.eval.cli import add_eval_arguments, parse_modes, run_eval
from hcg_core.eval.metric import answer_recall, content_words, context_recall, context_words
from hcg_core.eval.runner import (
    ALL_TYPES,
    QAItem,
    evaluate,
    load_questions,
    load_sentences,
    score_question,
)
from hcg_core.types import Chunk, RetrievalResult, RetrievedChunk, SourceDocument

# ------------------------------------------------------------------ metric


def test_content_words_lowercase_drop_stopwords_and_short_tokens_fold_plurals():
    assert content_words("The Tumours of a BCC grow in 2 weeks; x-rays") == [
        "tumour",
        "bcc",
        "grow",
        "week",
        "ray",
    ]
    assert content_words("the of and") == []


def test_content_words_keep_the_stopwords_the_reference_figures_were_taken_with():
    # The measure reads the BM25 tokeniser's stopwords; a change there would move every reported
    # figure, so the list (141 words) is pinned by its hash.
    from hcg_core.retrieval.lexical import STOPWORDS

    listed = " ".join(sorted(STOPWORDS)).encode()
    assert len(STOPWORDS) == 141
    assert hashlib.sha256(listed).hexdigest() == (
        "26f27509fab408732cfff99dae4ac81e94c671188eff451101470c79b8919a95"
    )


def test_answer_recall_counts_distinct_gold_words_at_the_budget():
    answer = "Smoking causes lung cancer"  # gold: smoking, cause, lung, cancer
    ctx = ["lung", "damage", "from", "smoking", "is", "common;", "cancers", "follow"]
    assert answer_recall(ctx, answer, None) == pytest.approx(3 / 4)  # lung, smoking, cancer
    assert answer_recall(ctx, answer, 4) == pytest.approx(2 / 4)  # "lung damage from smoking"
    assert answer_recall(ctx, answer, 0) == 0.0
    assert answer_recall([], "the of", 10) == 1.0  # nothing to miss
    with pytest.raises(ConfigError):
        answer_recall(ctx, answer, -1)


def test_context_words_are_whitespace_words_in_rank_order():
    assert context_words(["a b", "c  d\ne"]) == ["a", "b", "c", "d", "e"]


# ------------------------------------------------------------------ runner

QUESTIONS = [
    QAItem("what causes stroke", "high pressure causes stroke", "Fact", id="q1"),
    QAItem("what follows stroke", "death follows stroke", "Reasoning", id="q2"),
]


def _result(texts, routes):
    return RetrievalResult(
        query="q",
        chunks=tuple(
            RetrievedChunk(Chunk(f"c{i}", t), 1.0, r)
            for i, (t, r) in enumerate(zip(texts, routes, strict=True))
        ),
        served_by="hybrid",
    )


def test_evaluate_aggregates_per_system_and_type_with_route_shares():
    def texts_only(q):
        return ["high pressure causes stroke"] if "causes" in q else ["nothing here"]

    def routed(q):
        # 2 graph words then 3 fallback words; with budget 4 only 2 + 2 words are read.
        return _result(["death follows", "stroke is bad"], ["graph", "fallback"])

    report = evaluate({"plain": texts_only, "hcg": routed}, QUESTIONS, budget=4)
    plain = report.row("plain")
    assert plain.n == 2
    assert plain.recall == pytest.approx((1.0 + 0.0) / 2)
    assert plain.graph_query_share is None and plain.graph_word_share is None
    assert report.row("plain", "Fact").recall == 1.0
    assert report.row("plain", "Reasoning").recall == 0.0
    hcg = report.row("hcg", ALL_TYPES)
    # q1 gold {high, pressure, cause, stroke}: "stroke" within 4 words -> 1/4; q2 gold {death,
    # follow, stroke}: all three within budget -> 1.
    assert hcg.recall == pytest.approx((0.25 + 1.0) / 2)
    assert hcg.context_words == 5
    assert hcg.graph_query_share == 1.0
    assert hcg.graph_word_share == pytest.approx(2 / 4)
    assert hcg.latency_p95_ms >= hcg.latency_p50_ms >= 0
    table = report.format_table()
    assert "recall@4" in table and "[Reasoning]" in table and "hcg" in table
    data = json.loads(report.to_json(per_question=True))
    assert data["budget"] == 4 and len(data["scores"]["hcg"]) == 2


def test_judge_seam_is_called_with_the_cut_context():
    seen = []

    def judge(question, answer, contexts):
        seen.append(contexts)
        return 0.5

    report = evaluate({"s": lambda q: ["one two three"]}, QUESTIONS[:1], budget=2, judge=judge)
    assert seen == [["one two"]]
    assert report.row("s").judge == 0.5


def test_evaluate_rejects_empty_inputs_and_str_outputs():
    with pytest.raises(ConfigError):
        evaluate({}, QUESTIONS)
    with pytest.raises(ConfigError):
        evaluate({"s": lambda q: []}, [])
    with pytest.raises(ConfigError):
        evaluate({"s": lambda q: "a string"}, QUESTIONS)


def test_load_questions_reads_optional_fields_and_reports_bad_files(tmp_path):
    p = tmp_path / "qa.json"
    p.write_text(
        json.dumps(
            [
                {"question": "q1?", "answer": "a1", "question_type": "T", "evidence": "e"},
                {"question": "q2?", "answer": "a2", "evidence": ["x", "y"], "id": "z"},
            ]
        )
    )
    items = load_questions(p)
    assert items[0].question_type == "T" and items[0].evidence == ("e",)
    assert items[1].id == "z" and items[1].evidence == ("x", "y")
    assert len(load_questions(p, limit=1)) == 1
    for bad in ("{}", "[]", "[1]", '[{"question": "", "answer": "a"}]', "not json"):
        p.write_text(bad)
        with pytest.raises(InputError):
            load_questions(p)
    with pytest.raises(InputError):
        load_questions(tmp_path / "missing.json")


# ------------------------------------------------------------------ baselines

DOC_TEXTS = [
    "smoking causes lung cancer",
    "radon causes lung cancer too",
    "statins lower cholesterol",
]


def test_word_windows_and_rebuilding_documents_from_chunks():
    assert word_windows("a b c d e", 2, 0) == ["a b", "c d", "e"]
    with pytest.raises(ConfigError):
        word_windows("a", 2, 2)
    chunks = [
        Chunk("x0", "a b c", "d", {"start_word": 0, "end_word": 3}),
        Chunk("x1", "c d e", "d", {"start_word": 2, "end_word": 5}),
        Chunk("y0", "z", "other"),
    ]
    assert documents_from_chunks(chunks) == ["a b c d e", "z"]


def test_rebuilt_documents_count_words_as_the_chunker_does():
    # A 250-character token is three chunker words and CJK text one word a character: counting
    # them with str.split() shifted every later window and repeated words.
    text = "Intro words here. " + "x" * 250 + " then " + "吸烟有害。" * 30 + " tail. " + "w " * 300
    chunks = chunk_documents([SourceDocument("d", text)], chunk_words=20, overlap_words=5)
    assert len(chunks) > 5
    (rebuilt,) = documents_from_chunks(chunks)
    assert rebuilt.split() == [text[a:b] for a, b in word_spans(text)]


def bm25s_system(texts: list[str], k: int):
    """BM25 via the bm25s package (lucene, English stopwords): the external reference the
    library's own BM25 is checked against (here, not in the library: only this test uses it)."""
    try:
        import bm25s
    except ImportError:
        raise ConfigError("the bm25s baseline needs bm25s: pip install 'hcg-rag[test]'") from None
    texts = list(texts)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    kk = min(k, len(texts))

    def run(question: str) -> list[str]:
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:  # a query of stopwords only: bm25s cannot score it
            return []
        docs, scores = retriever.retrieve(tokens, k=kk, show_progress=False)
        return [texts[int(i)] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return run


def test_bm25_baselines_agree_on_the_obvious_best_chunk():
    ours = bm25_system(DOC_TEXTS, 2)("cholesterol statins")
    ref = bm25s_system(DOC_TEXTS, 2)("cholesterol statins")
    assert ours[0] == ref[0] == DOC_TEXTS[2]
    assert bm25s_system(DOC_TEXTS, 2)("the of") == []  # stopwords only


def test_vector_baseline_and_fill_budget():
    run = vector_system(DOC_TEXTS, HashingEmbedder(dim=256), 3)
    assert run("statins cholesterol")[0] == DOC_TEXTS[2]
    filled = fill_budget(lambda q: DOC_TEXTS, budget=5)("q")
    assert filled == DOC_TEXTS[:2]  # 4 words, then 5 more crosses the budget: kept whole, stop


# ------------------------------------------------------------------ CLI


def test_parse_modes():
    assert parse_modes("hybrid, paper") == ["hybrid", "paper"]
    with pytest.raises(ConfigError):
        parse_modes("hybrid,bogus")


def test_run_eval_end_to_end_on_a_small_graph(tmp_path, capsys):
    from conftest import make_graph

    from hcg_core.store import save_graph

    graph = make_graph()
    emb = HashingEmbedder(dim=256)
    save_graph(
        graph,
        tmp_path / "g",
        embedder_name=emb.name,
        variable_embeddings=emb.embed_documents([v.name for v in graph.variables]),
        chunk_embeddings=emb.embed_documents([c.text for c in graph.chunks]),
    )
    qa = tmp_path / "qa.json"
    qa.write_text(
        json.dumps(
            [
                {
                    "question": "does smoking cause stroke",
                    "answer": "pressure",
                    "question_type": "A",
                },
                {"question": "what does diet change", "answer": "pressure", "question_type": "B"},
            ]
        )
    )
    parser = add_eval_arguments(argparse.ArgumentParser())
    out = tmp_path / "report.json"
    args = parser.parse_args(
        [
            str(tmp_path / "g"),
            "--questions",
            str(qa),
            "--budget",
            "30",
            "--json",
            "--baseline-chunk-words",
            "6",
            "--baseline-chunk-overlap",
            "2",
            "--out",
            str(out),
        ]
    )
    assert run_eval(args) == 0
    printed = json.loads(capsys.readouterr().out)
    systems = {r["system"] for r in printed["rows"]}
    assert {
        "hcg hybrid",
        "hcg paper",
        "hcg hybrid-nograph",
        "vector top-k (same chunks)",
        "bm25 (same chunks)",
        "bm25 200/40",
    } <= systems
    assert any(s.startswith("bm25 6/2") for s in systems)
    assert any(s.startswith("vector 6/2") for s in systems)
    assert "scores" in json.loads(out.read_text())
    bad = parser.parse_args([str(tmp_path / "nope"), "--questions", str(qa)])
    assert run_eval(bad) == 2


def test_ablations_add_naive_rag_in_context_and_nodes_only(tmp_path, capsys):
    from conftest import make_graph

    from hcg_core.store import save_graph

    graph = make_graph()
    save_graph(graph, tmp_path / "g", embedder_name=HashingEmbedder(dim=256).name)
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([{"question": "smoking and stroke", "answer": "vessel rupture"}]))
    parser = add_eval_arguments(argparse.ArgumentParser())
    args = parser.parse_args(
        [
            str(tmp_path / "g"),
            "--questions",
            str(qa),
            "--json",
            "--modes",
            "paper",
            "--no-baselines",
            "--ablations",
            "--out",
            str(tmp_path / "r.json"),
        ]
    )
    assert run_eval(args) == 0
    rows = {
        r["system"]: r
        for r in json.loads(capsys.readouterr().out)["rows"]
        if r.get("group", "all") == "all"
    }
    assert {
        "naive-rag vector 1200/200 top 5",
        "in-context (whole corpus)",
        "hcg nodes-only",
    } <= set(rows)
    # "rupture" is only in an edge's mechanism, never in the corpus text: the whole corpus finds
    # half the answer, the nodes-only triples (which carry mechanisms) all of it.
    assert rows["in-context (whole corpus)"]["recall_unbounded"] == 0.5
    assert rows["hcg nodes-only"]["recall_unbounded"] == 1.0


def test_load_questions_rejects_bad_evidence_and_limit(tmp_path):
    from hcg_core.errors import InputError

    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([{"question": "q", "answer": "a", "evidence": 5}]))
    with pytest.raises(InputError, match="evidence"):
        load_questions(qa)
    qa.write_text(json.dumps([{"question": "q", "answer": "a"}] * 3))
    with pytest.raises(InputError, match="limit"):
        load_questions(qa, limit=0)
    assert len(load_questions(qa, limit=2)) == 2


def test_eval_out_unwritable_is_a_clear_error(tmp_path, capsys):
    from conftest import make_graph

    from hcg_core.store import save_graph

    save_graph(make_graph(), tmp_path / "g", embedder_name=HashingEmbedder(dim=256).name)
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([{"question": "smoking", "answer": "pressure"}]))
    parser = add_eval_arguments(argparse.ArgumentParser())
    args = parser.parse_args(
        [
            str(tmp_path / "g"),
            "--questions",
            str(qa),
            "--no-baselines",
            "--out",
            str(tmp_path / "missing" / "dir" / "r.json"),
        ]
    )
    (tmp_path / "missing").write_text("a file, so no folder can be made under it")
    assert run_eval(args) == 2
    assert "cannot write --out" in capsys.readouterr().err


# ------------------------------------------------------------------ gold-context recall


def test_context_recall_counts_whole_gold_passages_inside_the_budget():
    words = context_words(
        ["Smoking damages vessels.  Damaged vessels\nrupture.", "Then a stroke follows."]
    )
    gold = ["Damaged vessels rupture.", "Then a stroke follows."]
    assert context_recall(words, gold, None) == 1.0  # whitespace differences do not matter
    assert context_recall(words, gold, 6) == 0.5  # the second sentence is cut by the budget
    assert context_recall(words, ["vessels rupture. Then a stroke"], 3) == 0.0
    assert context_recall(words, [], 5) == 1.0  # nothing to miss
    with pytest.raises(ConfigError):
        context_recall(words, gold, -1)


def test_questions_with_gold_sentence_ids_and_jsonl(tmp_path):
    sentences = tmp_path / "sentences.jsonl"
    sentences.write_text(
        json.dumps({"sentence_id": "S1", "text": "Smoking  damages vessels."})
        + "\n\n"
        + json.dumps({"sentence_id": "S2", "text": "A stroke follows."})
        + "\n"
    )
    qa = tmp_path / "qa.jsonl"
    rows = [
        {
            "qa_id": "Q1",
            "category": "psy",
            "question": "q",
            "answer": "a",
            "context_sentence_ids": ["S1", "S2"],
        },
        {"question": "q2", "answer": "a2", "context": "A stroke follows."},
    ]
    qa.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    items = load_questions(qa, sentences=load_sentences(sentences))
    assert items[0].id == "Q1" and items[0].question_type == "psy"
    with pytest.warns(UserWarning, match="--sentences"):
        assert load_questions(qa)[0].context == ()  # ids without the file: said, not silent
    assert items[0].context == ("Smoking  damages vessels.", "A stroke follows.")
    assert items[1].context == ("A stroke follows.",)
    score = score_question(
        items[0], ["Smoking damages vessels. Then nothing."], budget=50, latency_ms=1.0
    )
    assert score.context_recall == 0.5
    report = evaluate({"s": lambda q: ["Smoking damages vessels. A stroke follows."]}, items)
    assert report.row("s").context_recall == 1.0
    assert "context@2000" in report.format_table()
    # An id missing from the sentences file is named, not skipped.
    qa.write_text(json.dumps({"question": "q", "answer": "a", "context_sentence_ids": ["S9"]}))
    with pytest.raises(InputError, match="S9"):
        load_questions(qa, sentences=load_sentences(sentences))
    sentences.write_text('{"sentence_id": 3}\n')
    with pytest.raises(InputError, match="sentence_id"):
        load_sentences(sentences)
    qa.write_text('{"question": "q", "answer": "a"}\nnot json\n')
    with pytest.raises(InputError, match="line 2"):
        load_questions(qa)


def test_no_gold_context_leaves_context_recall_out():
    report = evaluate({"s": lambda q: ["x"]}, QUESTIONS)
    assert report.row("s").context_recall is None
    assert "context@" not in report.format_table()


def test_run_eval_says_sentence_ids_without_sentences_as_its_own_warning(tmp_path, capsys):
    """The loader's warning reaches the user as `hcg eval: warning: ...` on stderr and in the
    JSON report's meta, not as a Python UserWarning naming a source line (or not at all)."""
    from conftest import make_graph

    from hcg_core.store import save_graph

    save_graph(make_graph(), tmp_path / "g", embedder_name=HashingEmbedder(dim=256).name)
    qa = tmp_path / "qa.json"
    qa.write_text(
        json.dumps([{"question": "smoking", "answer": "pressure", "context_sentence_ids": ["S1"]}])
    )
    parser = add_eval_arguments(argparse.ArgumentParser())
    args = parser.parse_args(
        [str(tmp_path / "g"), "--questions", str(qa), "--no-baselines", "--json"]
    )
    assert run_eval(args) == 0
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if "--sentences" in line]
    assert len(said) == 1 and said[0].startswith("hcg eval: warning: ")
    meta = json.loads(captured.out)["meta"]
    assert any("--sentences" in w for w in meta["warnings"])


def test_docs_name_every_key_of_the_json_report():
    """docs/evaluation.md says what each `hcg eval --json` / `--out` key is: a field added to
    a row or a per-question score without a word there fails here."""
    from dataclasses import fields
    from pathlib import Path

    from hcg_core.eval.runner import QuestionScore, Row

    doc = (Path(__file__).resolve().parents[1] / "docs" / "evaluation.md").read_text("utf-8")
    section = doc.split("## Reading the table", 1)[1].split("\n## ", 1)[0]
    for cls in (Row, QuestionScore):
        missing = [f.name for f in fields(cls) if f"`{f.name}`" not in section]
        assert missing == [], f"{cls.__name__} keys not in docs/evaluation.md: {missing}"
    for key in ("budget", "meta", "rows", "scores", "warnings", "corpus_words"):
        assert f"`{key}`" in section


def test_run_eval_does_not_time_what_a_system_loads_on_first_use(tmp_path, capsys, monkeypatch):
    """A system slow on its first call only (a model session loading) is warmed up untimed, so
    its p95 is its real query time, not the load (300 ms here, against 0 after)."""
    import time

    from conftest import make_graph

    import hcg_core.eval.cli as eval_cli
    from hcg_core.store import save_graph

    save_graph(make_graph(), tmp_path / "g", embedder_name=HashingEmbedder(dim=256).name)
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([{"question": "smoking", "answer": "pressure"}] * 2))
    real = eval_cli.hcg_systems

    def slow_first(*a, **kw):
        loaded = []

        def wrap(system):
            def call(question):
                if not loaded:
                    time.sleep(0.3)
                    loaded.append(True)
                return system(question)

            return call

        return {name: wrap(s) for name, s in real(*a, **kw).items()}

    monkeypatch.setattr(eval_cli, "hcg_systems", slow_first)
    parser = add_eval_arguments(argparse.ArgumentParser())
    args = parser.parse_args(
        [str(tmp_path / "g"), "--questions", str(qa), "--no-baselines", "--json"]
    )
    assert run_eval(args) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(r["latency_p95_ms"] < 150 for r in rows)


def test_a_question_item_without_question_or_answer_names_what_it_has(tmp_path):
    """A file wrapping its list ({"questions": [...]}) or naming a key otherwise is told what
    the item holds, not only what it lacks."""
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps({"questions": [{"question": "q", "answer": "a"}]}))
    with pytest.raises(InputError, match=r"item 0 needs .* it has 'questions' \(list\)"):
        load_questions(qa)
    qa.write_text(json.dumps([{"query": "q", "answer": 3}]))
    with pytest.raises(InputError, match=r"it has 'query' \(str\), 'answer' \(int\)"):
        load_questions(qa)
