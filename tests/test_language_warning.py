"""A build warns when much of the corpus is not English and the embedder matches one language."""

from __future__ import annotations

import logging

from hcg_core.corpus import chunk_documents, count_not_english
from hcg_core.embedders import HashingEmbedder, MultilingualE5Embedder
from hcg_core.graph_build import build_graph, language_warning
from hcg_core.types import SourceDocument

ENGLISH = [
    "Smoking causes lung cancer because tar damages the cells that line the airways of the lungs, "
    "and the damage builds up over many years of exposure to the smoke.",
    "Regular exercise lowers blood pressure, which reduces the risk of stroke; the effect is "
    "larger in older adults and in those who were inactive before.",
]
TURKISH = [
    "Bu araştırmanın amacı, dijital yönetişim uygulamaları ile örgütsel çeviklik arasındaki "
    "ilişkiyi anlamak ve çalışanların iç girişimcilik davranışlarının bu ilişkideki rolünü "
    "değerlendirmektir. Veriler anket yoluyla toplanmış, yapısal eşitlik modeli ile analiz edilmiştir.",
    "Afet eğitimi, insanların afetler hakkındaki bilgi düzeylerini, farkındalıklarını ve "
    "ilgilerini artırmayı hedeflemektedir. Çalışmada öğretmen adaylarının görüşleri nitel "
    "yöntemle incelenmiş, bulgular tema başlıkları altında sunulmuştur ve öneriler geliştirilmiştir.",
    "Spor dünyası, dijitalleşmenin ve ileri teknolojilerin etkisiyle yapısal bir değişimden "
    "geçmektedir. Sahada sergilenen performans artık yalnızca fiziksel yeteneklere bağlı "
    "değildir; veri analitiği, yapay zekâ ve giyilebilir teknolojiler belirleyici hale gelmiştir.",
]


def chunks_of(paragraphs: list[str]):
    doc = SourceDocument("mixed", "\n\n".join(paragraphs))
    return chunk_documents([doc], chunk_words=30, overlap_words=5)  # one paragraph per chunk


def test_not_english_text_is_counted_and_short_text_is_not_judged():
    assert count_not_english(TURKISH + ENGLISH) == 3
    assert count_not_english(["Elde edilen bulgular"]) == 0  # under 20 words: not judged


def test_a_mixed_corpus_warns_before_the_build_and_in_its_report(caplog):
    chunks = chunks_of(ENGLISH + TURKISH)
    assert len(chunks) == 5
    with caplog.at_level(logging.WARNING, logger="hcg_core.graph_build"):
        result = build_graph(chunks, embedder=HashingEmbedder(256))
    (note,) = [w for w in result.report["warnings"] if "do not read as English" in w]
    assert note.startswith("3 of 5 chunks (60%)") and "--embedder multilingual" in note
    assert [r.getMessage() for r in caplog.records] == [note]


def test_english_text_or_a_multilingual_embedder_gives_no_warning():
    assert language_warning(chunks_of(ENGLISH * 3), HashingEmbedder(256)) is None
    # A minority under a twentieth of the chunks is not worth the noise.
    assert language_warning(chunks_of(ENGLISH * 30 + TURKISH[:1] * 3), HashingEmbedder(256)) is None
    # The check reads names only: the multilingual model is not loaded here.
    assert language_warning(chunks_of(TURKISH), MultilingualE5Embedder()) is None


def test_hcg_build_prints_the_warning_once_before_building(tmp_path, capsys):
    from hcg_core.cli import main as hcg_main

    corpus = tmp_path / "mixed.txt"
    corpus.write_text("\n\n".join(ENGLISH + TURKISH), encoding="utf-8")
    args = ["build", str(corpus), "--out", str(tmp_path / "g"), "--embedder", "hashing"]
    assert hcg_main([*args, "--chunk-words", "30", "--chunk-overlap", "5", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("do not read as English") == 1
    assert "warning: 3 of 5 chunks (60%)" in err
