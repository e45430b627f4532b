"""Character n-gram evidence for units in another language: the index and the ranker's use of it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hcg_core.config import HybridConfig
from hcg_core.corpus import reads_not_english
from hcg_core.errors import ConfigError
from hcg_core.retrieval.grams import GramIndex
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.types import Chunk

ENGLISH = [
    "The transformation of remote work changed how teams plan their week in offices.",
    "Employee wellbeing programmes reduce burnout when managers take part in them.",
    "Supply chains in retail need resilience: planners revise forecasts every month.",
    "Customer loyalty grows when companies answer complaints quickly and fairly.",
    "Interest rates shape how small firms finance new machines and hire staff.",
    "Leadership style predicts how engaged employees feel during organizational change.",
]
# Abstracts in Spanish, Turkish and Indonesian on other topics, and one (the last) on the
# question's topic that shares no whole word with it, only pieces ("dijital", "organizasyonel").
FOREIGN = [
    "El presente estudio analiza los hábitos de lectura de estudiantes universitarios durante "
    "los exámenes finales y su relación con el sueño, el estrés académico y el rendimiento.",
    "Bu araştırmanın amacı, ergenlerde sosyal medya bağımlılığı ile uyku kalitesi arasındaki "
    "ilişkiyi incelemektir. Veriler lise öğrencilerinden anket yoluyla toplanmış ve "
    "istatistiksel yöntemlerle analiz edilmiştir.",
    "Este trabajo describe los cambios del clima en zonas rurales del norte del país y sus "
    "efectos sobre cosechas, ganado, agua potable y migración de familias campesinas.",
    "Penelitian ini bertujuan untuk mengetahui hubungan antara pola makan remaja dengan prestasi "
    "belajar siswa sekolah menengah pertama di kota Bandung selama tahun ajaran baru.",
    "Çalışmada yaşlı bireylerde yalnızlık duygusu, aile desteği ve yaşam doyumu arasındaki "
    "ilişkiler huzurevinde yaşayan katılımcılarla yüz yüze görüşmeler yapılarak incelenmiştir.",
    "Los autores comparan dos métodos de enseñanza de matemáticas en escuelas primarias públicas "
    "y encuentran diferencias pequeñas entre grupos después de seis meses de clases.",
    "Hasil penelitian menunjukkan bahwa harga pangan yang naik setiap bulan membuat rumah tangga "
    "miskin di desa mengurangi belanja kesehatan dan pendidikan anak mereka.",
    "Bu makalede Osmanlı dönemine ait şiirlerde doğa imgeleri ele alınmış, şairlerin mevsimleri "
    "ve bahçeleri nasıl betimlediği örneklerle ortaya konulmuş, dönemin dili de tartışılmıştır.",
    "La investigación evalúa el consumo de agua en hogares urbanos durante el verano y propone "
    "tarifas escalonadas para reducir el desperdicio sin afectar familias vulnerables.",
    "Studi ini membahas peran koperasi nelayan dalam menjaga harga ikan tetap stabil dan "
    "memperkuat pendapatan keluarga pesisir di pulau kecil bagian timur.",
    "Araştırmada futbol antrenörlerinin oyuncularla iletişim biçimleri, takım uyumu ve maç "
    "sonuçları arasındaki bağlantı gözlem ve görüşme teknikleriyle iki sezon boyunca "
    "değerlendirilmiştir.",
    "Bulgular, dijital dönüşümün işletmelerde organizasyonel esnekliği ve dayanıklılığı "
    "güçlendirdiğini göstermektedir. Dijital teknolojiler ve stratejik yönetim, organizasyonel "
    "çevikliği destekler ve işletmelerin krizlere hızlı uyum sağlamasına yardım eder.",
]
# Forty more short Indonesian abstracts, each sharing a piece or two with the question ("informasi",
# "strategi"): a real corpus has hundreds of foreign units that match a question faintly, and the
# evidence counts against them.
_WORDS = [
    "desa",
    "kota",
    "sekolah",
    "pasar",
    "rumah",
    "sungai",
    "hutan",
    "petani",
    "nelayan",
    "guru",
    "siswa",
    "harga",
    "beras",
    "ikan",
]
FOREIGN += [
    f"Penelitian nomor {i} membahas informasi dan strategi {_WORDS[i % 14]} di wilayah "
    f"{_WORDS[(i * 3) % 14]} dengan metode survei kepada {_WORDS[(i * 5) % 14]} setempat selama "
    f"dua tahun, lalu membandingkan hasilnya dengan data {_WORDS[(i * 7) % 14]} tahun lalu."
    for i in range(40)
]
TARGET = f"c{len(ENGLISH) + len(FOREIGN) - 41}"
QUESTION = "How does digital transformation strengthen organizational resilience and agility?"


def chunks(texts):
    return [Chunk(id=f"c{i}", text=t, doc_id=f"d{i}") for i, t in enumerate(texts)]


def test_fixture_texts_read_as_their_language():
    assert [reads_not_english(t) for t in FOREIGN] == [True] * len(FOREIGN)
    assert not any(reads_not_english(t) for t in ENGLISH)


def test_grown_index_scores_like_one_built_at_once_and_old_snapshots_stay():
    texts = ENGLISH + FOREIGN
    foreign = [reads_not_english(t) for t in texts]
    whole = GramIndex.build(texts, foreign)
    first = GramIndex.build(texts[:5], foreign[:5])
    before = first.scores(QUESTION)
    grown = first.extended(texts[5:], foreign[5:])
    for (r1, c1), (r2, c2) in [(whole.scores(QUESTION), grown.scores(QUESTION))]:
        assert r1.tolist() == r2.tolist() == [i for i, f in enumerate(foreign) if f]
        np.testing.assert_allclose(c1, c2, rtol=1e-6)
    # The first snapshot did not see the added rows or counts.
    after = first.scores(QUESTION)
    assert after[0].tolist() == before[0].tolist() == []
    assert int(np.argmax(whole.scores(QUESTION)[1])) == len(FOREIGN) - 41


def test_an_english_question_reaches_the_abstract_in_another_language():
    on = HybridRanker(chunks(ENGLISH + FOREIGN), None)
    off = HybridRanker(chunks(ENGLISH + FOREIGN), None, HybridConfig(gap_char_grams=False))
    target = TARGET
    result = on.rank(QUESTION, None, k=3).chunks
    got_on = [c.chunk.id for c in result]
    # The English matches keep a score when the foreign unit ranks first: a score says how well
    # the query matched at best, and the foreign unit's own BM25 share is 0.
    scores = [c.score for c in result]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    lifted = next(c for c in result if c.chunk.id == target)
    assert 0 < lifted.details["grams"] <= 1
    assert lifted.provenance("hybrid")["hcg_score_grams"] == lifted.details["grams"]
    assert all("grams" not in c.details for c in result if c.chunk.id != target)
    got_off = [c.chunk.id for c in off.rank(QUESTION, None, k=3).chunks]
    assert target in got_on
    assert target not in got_off


def test_nothing_is_built_for_text_all_in_english_or_when_switched_off():
    assert HybridRanker(chunks(ENGLISH), None).grams is None
    mixed = chunks(ENGLISH + FOREIGN)
    assert HybridRanker(mixed, None).grams is not None
    assert HybridRanker(mixed, None, HybridConfig(gap_char_grams=False)).grams is None
    assert HybridRanker(mixed, None, HybridConfig(fill_language_gap=False)).grams is None


def test_edited_rankers_rank_like_fresh_ones():
    all_chunks = chunks(ENGLISH + FOREIGN)
    fresh = HybridRanker(all_chunks, None)
    # The first foreign unit arrives with the insert: the index is built then, over every unit.
    grown = HybridRanker(all_chunks[:4], None).extended(all_chunks[4:], None)
    keep = np.ones(len(all_chunks), dtype=bool)
    keep[[1, len(ENGLISH)]] = False
    shrunk = fresh.subset(keep, None)
    kept = HybridRanker([c for c, k in zip(all_chunks, keep, strict=True) if k], None)

    def ranked(r):
        return [(c.chunk.id, round(c.score, 6)) for c in r.rank(QUESTION, None, k=5).chunks]

    assert ranked(grown) == ranked(fresh)
    assert ranked(shrunk) == ranked(kept)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_gap_switches_must_be_bools(value):
    with pytest.raises(ConfigError, match="must be True or False"):
        replace(HybridConfig(), gap_char_grams=value)
    with pytest.raises(ConfigError, match="must be True or False"):
        replace(HybridConfig(), fill_language_gap=value)


def test_scores_are_the_ltc_cosine_computed_directly():
    from collections import Counter

    from hcg_core.retrieval.grams import char_grams

    texts = ENGLISH + FOREIGN
    foreign = [reads_not_english(t) for t in texts]
    rows, cos = GramIndex.build(texts, foreign).scores(QUESTION)
    grams = [Counter(char_grams(t)) for t in texts]
    df = Counter(g for c in grams for g in c)
    idf = {g: np.log(len(texts) / n) for g, n in df.items()}

    def vector(counts):
        v = {g: (1 + np.log(n)) * idf[g] for g, n in counts.items() if g in idf}
        norm = np.sqrt(sum(x * x for x in v.values()))
        return {g: x / norm for g, x in v.items()}

    q = vector(Counter(char_grams(QUESTION)))
    expected = [sum(w * q.get(g, 0.0) for g, w in vector(grams[r]).items()) for r in rows.tolist()]
    np.testing.assert_allclose(cos, expected, rtol=1e-4, atol=1e-6)


def test_a_clone_over_the_same_units_takes_the_index_over():
    mixed = chunks(ENGLISH + FOREIGN)
    first = HybridRanker(mixed, None)
    other = HybridConfig(diversity=0.7)
    clone = HybridRanker(mixed, None, other, bm25=first.bm25, grams=first.grams)
    fresh = HybridRanker(mixed, None, other)
    assert clone.grams is first.grams

    def ranked(r):
        return [(c.chunk.id, round(c.score, 6)) for c in r.rank(QUESTION, None, k=5).chunks]

    assert ranked(clone) == ranked(fresh)
    with pytest.raises(ConfigError, match="n-gram index has"):
        HybridRanker(mixed[:-1], None, grams=first.grams)
