"""Corpus loading (every bad-input case, JSON shapes) and chunking (ids, overlap, boundaries)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hcg_core.corpus import (
    DEFAULT_CHARS_PER_WORD,
    WHOLE_BLOCK_FACTOR,
    chunk_documents,
    chunk_id,
    load_inputs,
)
from hcg_core.errors import ConfigError, InputError
from hcg_core.types import SourceDocument


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- loading


def test_txt_and_md_are_one_document_each(tmp_path):
    a = write(tmp_path / "a.txt", "Smoking causes cancer.")
    b = write(tmp_path / "b.md", "# Title\nInflammation raises risk.")
    docs, bad = load_inputs([a, b])
    assert bad == []
    assert [d.id for d in docs] == ["a.txt", "b.md"]
    assert docs[1].text.startswith("# Title")
    assert docs[0].metadata["source"].endswith("a.txt")


def test_utf8_bom_is_accepted(tmp_path):
    f = write(tmp_path / "bom.txt", b"\xef\xbb\xbfHello world")
    docs, _ = load_inputs([f])
    assert docs[0].text == "Hello world"


def test_json_list_of_strings(tmp_path):
    f = write(tmp_path / "c.json", json.dumps(["first text", "second text"]))
    docs, bad = load_inputs([f])
    assert [d.id for d in docs] == ["c.json#0", "c.json#1"]
    assert [d.text for d in docs] == ["first text", "second text"]
    assert bad == []


@pytest.mark.parametrize("key", ["text", "content", "context"])
def test_json_list_of_objects_reads_text_field_and_metadata(tmp_path, key):
    f = write(tmp_path / "c.json", json.dumps([{"title": "T", key: "body here"}]))
    docs, _ = load_inputs([f])
    assert docs[0].text == "body here"
    assert docs[0].metadata["title"] == "T"


def test_json_single_object(tmp_path):
    f = write(tmp_path / "one.json", json.dumps({"corpus_name": "X", "context": "the text"}))
    docs, _ = load_inputs([f])
    assert len(docs) == 1 and docs[0].id == "one.json" and docs[0].text == "the text"
    assert docs[0].metadata["corpus_name"] == "X"


def test_json_object_without_text_field_is_bad(tmp_path):
    bad_json = write(tmp_path / "x.json", json.dumps([{"title": "no text"}]))
    good = write(tmp_path / "g.txt", "fine")
    docs, bad = load_inputs([bad_json, good])
    assert [d.id for d in docs] == ["g.txt"]
    assert bad[0][0] == bad_json and "no non-empty text field" in bad[0][1]


def test_jsonl_lines_and_bad_line(tmp_path):
    f = write(tmp_path / "d.jsonl", '{"text": "one"}\n\n"two"\n')
    docs, _ = load_inputs([f])
    assert [d.text for d in docs] == ["one", "two"]
    broken = write(tmp_path / "e.jsonl", '{"text": "one"}\n{oops\n')
    with pytest.raises(InputError, match="line 2"):
        load_inputs([broken])


def test_invalid_json_reports_position(tmp_path):
    f = write(tmp_path / "bad.json", "[1, 2")
    with pytest.raises(InputError, match="invalid JSON"):
        load_inputs([f])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"   \n\t ", "empty"),
        (b"abc\x00def", "binary"),
        (bytes(range(1, 9)) * 20 + b"text", "binary"),
        # Mostly non-ASCII bytes (Shift-JIS): no single-byte reading is tried.
        ("日本語のテキスト".encode("shift_jis"), "not UTF-8 text .*re-save it as UTF-8"),
    ],
)
def test_bad_single_file_raises_with_reason(tmp_path, data, reason):
    f = write(tmp_path / "bad.txt", data)
    with pytest.raises(InputError, match=reason) as info:
        load_inputs([f])
    assert "bad.txt" in str(info.value)


def test_huge_file_is_rejected(tmp_path):
    f = write(tmp_path / "big.txt", "word " * 100)
    with pytest.raises(InputError, match="over the 50-byte limit"):
        load_inputs([f], max_bytes=50)


def test_missing_path_and_no_paths(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_inputs([tmp_path / "nope.txt"])
    with pytest.raises(InputError, match="no input paths"):
        load_inputs([])


def test_folder_builds_good_files_and_lists_bad_ones(tmp_path):
    root = tmp_path / "corpus"
    write(root / "b" / "two.txt", "second")
    write(root / "a.md", "first")
    write(root / "empty.txt", "")
    write(root / "latin1.txt", b"\xff\xfe bad")
    write(root / "image.png", b"\x89PNG")
    write(root / ".hidden" / "x.txt", "skipped")
    docs, bad = load_inputs([root])
    assert [d.id for d in docs] == ["a.md", "b/two.txt"]  # sorted, relative, deterministic
    reasons = {p.name: r for p, r in bad}
    assert set(reasons) == {"empty.txt", "latin1.txt", "image.png"}
    assert "empty" in reasons["empty.txt"]
    assert "not UTF-8" in reasons["latin1.txt"]
    assert "unsupported file type" in reasons["image.png"]


def test_folder_with_only_bad_files_lists_every_reason(tmp_path):
    write(tmp_path / "e.txt", "")
    write(tmp_path / "n.txt", b"\x00\x00")
    with pytest.raises(InputError) as info:
        load_inputs([tmp_path])
    msg = str(info.value)
    assert "e.txt" in msg and "n.txt" in msg and "empty" in msg and "binary" in msg


# ----------------------------------------------------------------------------- chunking


def words(n: int, sentence_every: int = 0) -> str:
    out = []
    for i in range(n):
        w = f"w{i}"
        if sentence_every and (i + 1) % sentence_every == 0:
            w += "."
        out.append(w)
    return " ".join(out)


def test_windows_overlap_by_the_requested_words():
    doc = SourceDocument("d", words(100))
    chunks = chunk_documents([doc], chunk_words=30, overlap_words=10)
    starts = [c.metadata["start_word"] for c in chunks]
    ends = [c.metadata["end_word"] for c in chunks]
    assert starts == [0, 20, 40, 60, 80]
    assert all(e - s == 30 for s, e in zip(starts[:-1], ends[:-1], strict=True))
    assert ends[-1] == 100
    # The overlap is real text: the last 10 words of one chunk open the next.
    assert chunks[0].text.split()[-10:] == chunks[1].text.split()[:10]


def test_windows_prefer_a_near_sentence_end():
    doc = SourceDocument("d", words(100, sentence_every=27))  # sentence ends after w26, w53, w80
    chunks = chunk_documents([doc], chunk_words=30, overlap_words=5)
    assert chunks[0].text.endswith("w26.")
    assert chunks[0].metadata["end_word"] == 27
    assert chunks[1].metadata["start_word"] == 22


def test_chunk_ids_are_stable_and_content_addressed():
    docs = [SourceDocument("a", words(50)), SourceDocument("b", words(50))]
    first = chunk_documents(docs, chunk_words=20, overlap_words=5)
    second = chunk_documents(docs, chunk_words=20, overlap_words=5)
    assert [c.id for c in first] == [c.id for c in second]
    assert len({c.id for c in first}) == len(first)  # same text in two docs -> different ids
    c = first[0]
    assert c.id == chunk_id("a", 0, c.text) and c.id.startswith("c_") and len(c.id) == 14
    assert c.doc_id == "a" and c.metadata["index"] == 0


def test_short_document_is_one_chunk_and_metadata_is_carried():
    doc = SourceDocument("d", "Just   a few\nwords.", metadata={"source": "x.txt"})
    (c,) = chunk_documents([doc])
    assert c.text == "Just   a few\nwords."
    assert c.metadata["source"] == "x.txt" and c.metadata["end_word"] == 4


def test_a_paragraph_of_up_to_three_chunks_stays_whole():
    # An abstract of 550 words is one unit at the default 200 words; a 650-word one is windowed.
    abstract, longer = words(550, sentence_every=25), words(650, sentence_every=25)
    (whole,) = chunk_documents([SourceDocument("d", f"{words(30)}\n\n{abstract}")])[1:]
    assert whole.text == abstract
    cut = chunk_documents([SourceDocument("d", longer)])
    assert (
        len(cut) > 1 and max(c.metadata["end_word"] - c.metadata["start_word"] for c in cut) <= 200
    )
    # whole_words sets the limit; the default is WHOLE_BLOCK_FACTOR x chunk_words.
    assert len(chunk_documents([SourceDocument("d", abstract)], whole_words=300)) > 1
    assert len(chunk_documents([SourceDocument("d", longer)], whole_words=700)) == 1


@pytest.mark.parametrize("whole", [0, -5, 2.5, True])
def test_bad_whole_words(whole):
    with pytest.raises(ConfigError, match="whole_words"):
        chunk_documents([SourceDocument("d", "x")], whole_words=whole)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_bad_chunk_settings(size, overlap):
    with pytest.raises(ConfigError):
        chunk_documents([SourceDocument("d", "x")], chunk_words=size, overlap_words=overlap)


# ----------------------------------------------------------------------------- issue 12


def test_a_missing_path_next_to_a_good_one_is_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("Smoking causes cancer.")
    with pytest.raises(InputError, match="no such file or folder: .*typo"):
        load_inputs([tmp_path / "a.txt", tmp_path / "typo"])


def test_a_fifo_is_named_not_missing(tmp_path):
    (tmp_path / "a.txt").write_text("Smoking causes cancer.")
    os.mkfifo(tmp_path / "pipe.txt")
    docs, bad = load_inputs([tmp_path])  # must not block reading the FIFO
    assert [d.id for d in docs] == ["a.txt"]
    assert bad == [(tmp_path / "pipe.txt", bad[0][1])] and "not a regular file" in bad[0][1]


def test_links_out_of_an_input_folder_are_named_and_not_followed(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    docs.mkdir()
    outside.mkdir()
    (docs / "a.txt").write_text("Smoking causes cancer.")
    (outside / "secret.txt").write_text("secret text")
    (docs / "inside.txt").symlink_to(docs / "a.txt")  # a link within the folder is read
    (docs / "pw.txt").symlink_to(outside / "secret.txt")
    (docs / "more").symlink_to(outside)
    (docs / "loop").symlink_to(docs)
    (docs / "broken.txt").symlink_to(tmp_path / "nothing")
    got, bad = load_inputs([docs])
    assert [d.id for d in got] == ["a.txt", "inside.txt"]
    reasons = {p.name: r for p, r in bad}
    assert (
        "outside the input folder" in reasons["pw.txt"] and "--follow-symlinks" in reasons["pw.txt"]
    )
    assert "outside the input folder" in reasons["more"]
    assert "folder" in reasons["loop"] and "broken" in reasons["broken.txt"]
    followed, _ = load_inputs([docs], follow_symlinks=True)
    ids = [d.id for d in followed]
    assert "pw.txt" in ids and "more/secret.txt" in ids
    assert len(ids) == len(set(ids))  # the loop back to docs/ is not read twice


def test_cjk_text_is_chunked_by_characters_at_sentence_marks():
    text = "吸烟会损害血管。" * 100 + "高血压导致中风！"
    chunks = chunk_documents([SourceDocument("zh", text)], chunk_words=50, overlap_words=10)
    assert len(chunks) > 10
    # 50 words: 50 characters, each with the punctuation after it (管。 is one word).
    assert all(c.metadata["end_word"] - c.metadata["start_word"] <= 50 for c in chunks)
    assert all(len(c.text) <= 60 for c in chunks) and chunks[0].text.startswith("吸烟会")
    assert all(c.text.endswith(("。", "！")) for c in chunks)  # windows end at sentence marks
    # Consecutive windows overlap: each starts before the previous one ends.
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.metadata["start_word"] < a.metadata["end_word"]


def test_a_huge_token_is_cut_and_every_chunk_is_capped():
    text = "Smoking causes cancer. " + "x" * 50_000 + " Diet matters."
    chunks = chunk_documents([SourceDocument("d", text)], chunk_words=200, overlap_words=40)
    assert max(len(c.text) for c in chunks) <= WHOLE_BLOCK_FACTOR * 200 * DEFAULT_CHARS_PER_WORD
    covered = "".join(c.text for c in chunks)
    assert covered.count("x") >= 50_000 and chunks[-1].text.endswith("Diet matters.")
    # Overlap shrinks with the window, so the copy stays near the 20% of word windows.
    assert sum(len(c.text) for c in chunks) < 1.3 * len(text)
    capped = chunk_documents([SourceDocument("d", text)], max_chars=500)
    assert max(len(c.text) for c in capped) <= 500
    with pytest.raises(ConfigError, match="max_chars"):
        chunk_documents([SourceDocument("d", text)], max_chars=0)


def test_the_cap_leaves_english_windows_unchanged():
    words = " ".join(f"word{i % 50}." if i % 17 == 16 else f"word{i % 50}" for i in range(2000))
    capped = chunk_documents([SourceDocument("d", words)])
    uncapped = chunk_documents([SourceDocument("d", words)], max_chars=10**9)
    assert [c.id for c in capped] == [c.id for c in uncapped]


@pytest.mark.parametrize("kind", ["loop", "broken"])
def test_a_given_link_that_leads_nowhere_is_named_as_a_link(tmp_path, kind):
    """It was reported as "no such file or folder", though ``ls`` shows it."""
    link = tmp_path / "a.md"
    if kind == "loop":
        (tmp_path / "b.md").symlink_to(link)
        link.symlink_to(tmp_path / "b.md")
    else:
        link.symlink_to(tmp_path / "gone.md")
    with pytest.raises(InputError, match="symbolic link that leads nowhere") as caught:
        load_inputs([link])
    assert caught.value.path == link


def test_legacy_encoded_text_is_read_with_a_warning(tmp_path, caplog):
    """A Windows-1252 / Latin-1 file (not UTF-8) is read, not skipped, and the warning names
    the file and the encoding used; the accented letters survive."""
    root = tmp_path / "corpus"
    write(
        root / "cp1252.txt",
        "Caf\u00e9 cr\u00e8me \u2013 \u201cna\u00efve\u201d smoking causes stroke.".encode(
            "cp1252"
        ),
    )
    write(root / "latin1.md", "Stra\u00dfe \u00fcber M\u00fcnchen.\x81".encode("latin-1"))
    write(root / "utf8.txt", "Caf\u00e9 in UTF-8.")
    with caplog.at_level("WARNING", logger="hcg_core.corpus"):
        docs, bad = load_inputs([root])
    assert bad == []
    text = {d.id: d.text for d in docs}
    assert (
        text["cp1252.txt"]
        == "Caf\u00e9 cr\u00e8me \u2013 \u201cna\u00efve\u201d smoking causes stroke."
    )
    # 0x81 is undefined in Windows-1252: Latin-1 reads it.
    assert text["latin1.md"] == "Stra\u00dfe \u00fcber M\u00fcnchen.\x81"
    warned = [r.getMessage() for r in caplog.records]
    assert any("cp1252.txt" in m and "read as cp1252" in m for m in warned), warned
    assert any("latin1.md" in m and "read as latin-1" in m for m in warned), warned
    assert not any("utf8.txt" in m for m in warned)


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",  # NUL bytes
        bytes(range(1, 32)) * 4 + b"\xe9 text",  # control characters, not UTF-8
        bytes(range(0x80, 0x100)) * 3 + b"abc",  # mostly high bytes, no NUL
    ],
)
def test_binary_that_is_not_utf8_is_still_skipped(tmp_path, data):
    root = tmp_path / "corpus"
    write(root / "good.txt", "fine text")
    write(root / "blob.txt", data)
    docs, bad = load_inputs([root])
    assert [d.id for d in docs] == ["good.txt"]
    assert [(p.name, ("binary" in r or "not UTF-8" in r)) for p, r in bad] == [("blob.txt", True)]
