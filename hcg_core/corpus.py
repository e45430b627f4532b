"""Corpus loading and chunking: files -> Documents -> Chunks with stable content-hash ids.

``load_inputs`` is the only function here that touches disk; ``chunk_documents`` is pure and
deterministic (same documents and settings -> same chunks, ids and order).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from .bounded import loads_json, loads_yaml
from .contract import json_metadata
from .errors import ConfigError, HCGError, InputError
from .graph_dir import is_graph_dir
from .safe_text import has_lone_surrogate
from .types import Chunk, SourceDocument

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES: tuple[str, ...] = (".txt", ".md", ".markdown", ".json", ".jsonl")
# Keys tried, in order, for the text of a JSON object; "context" is GraphRAG-Bench's corpus field.
TEXT_KEYS: tuple[str, ...] = ("text", "content", "context", "page_content", "body")
DEFAULT_MAX_BYTES = 50_000_000
# 200/40 words measured better for BM25-style evidence on a medical textbook than the paper's
# NaiveRAG setting of 1,200/200 (see docs/method.md, "Chunking").
DEFAULT_CHUNK_WORDS = 200
DEFAULT_OVERLAP_WORDS = 40
# A paragraph (or abstract, or section) of up to this many times chunk_words stays one chunk,
# whole: cutting it splits sentences that answer one question together. Measured on every dev set
# (docs/evaluation.md): against 1.5x, gold-context recall +1.1 (HolisQA psychology) and +0.6
# (business); medical, text without paragraph breaks, is windowed either way.
WHOLE_BLOCK_FACTOR = 3
# The character cap of a chunk, unless given, is this many characters for each word of the longest
# chunk allowed (WHOLE_BLOCK_FACTOR x chunk_words, a whole paragraph): English averages about 6
# characters a word with its space, so ordinary prose never meets the cap; a run of CJK text or one
# huge token does.
DEFAULT_CHARS_PER_WORD = 12
# A "word" longer than this (base64, minified code, a run without spaces) is cut into pieces of
# this many characters, each counted as one word.
MAX_TOKEN_CHARS = 100
# Scripts written without spaces: each character is one word, so such text chunks by characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
# A CJK character with the punctuation after it (。, 」) is one unit; any other non-space run is one.
_UNIT_RE = re.compile(rf"[{_CJK}][^\s{_CJK}\w]*|[^\s{_CJK}]+")
# A file that is not UTF-8 is read in these single-byte encodings, in order (``decode_text``):
# Windows-1252 (Windows "ANSI" text), then Latin-1, which decodes any byte.
LEGACY_ENCODINGS = ("cp1252", "latin-1")
# Share of bytes over 0x7F above which a file that is not UTF-8 is refused rather than read in a
# legacy encoding: French or German text has a few percent; Shift-JIS, GBK or Cyrillic most.
MAX_LEGACY_HIGH_SHARE = 0.3
_HIGH_BYTES = bytes(range(0x80, 0x100))
# Share of control characters above which a text is treated as binary junk.
_MAX_CONTROL_SHARE = 0.05
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# Public, like SENTENCE_END_RE, so the hybrid mode's passages cut where chunks would.
WORD_RE = re.compile(r"\S+")
# A blank line (only spaces or tabs between two line breaks): where paragraphs and sections end.
BLANK_LINE_RE = re.compile(r"\n[ \t]*\r?\n")
# A word that ends a sentence: terminal punctuation (Latin or CJK full-width 。！？), optionally
# followed by closing quotes/brackets.
SENTENCE_END_RE = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]\u300d\u300f\uff09]*$")

BadFile = tuple[Path, str]

# A front matter block longer than this is not looked for (it would be a YAML file, not a header):
# the text is kept whole. Jekyll and Hugo headers run to a few hundred characters.
MAX_FRONT_MATTER_CHARS = 64_000
# The block: "---" alone on the first line, YAML, then "---" (or YAML's "...") alone on a line.
_FRONT_MATTER_RE = re.compile(r"---[ \t]*\n(?P<yaml>(?:.*\n)*?)(?:---|\.\.\.)[ \t]*(?:\n|$)")
_LINE_ENDS_RE = re.compile(r"\r\n?")
_ANY_LINE_END_RE = re.compile(r"\r\n?|\n")


# ----------------------------------------------------------------------------- loading


def load_inputs(
    paths: Sequence[str | Path],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    follow_symlinks: bool = False,
) -> tuple[list[SourceDocument], list[BadFile]]:
    """Read corpus files and folders into Documents, listing every file that could not be used.

    What is read:
        - ``.txt``, ``.md``, ``.markdown``: the whole file is one document.
        - ``.json``: a list of strings (one document each), a list of objects, or one object; an
          object's text is its first non-empty field among ``text``, ``content``, ``context``,
          ``page_content``, ``body``; its other scalar fields become document metadata.
        - ``.jsonl``: one JSON string or object (as above) per non-blank line.
        - a folder: every supported file below it, recursively, in sorted path order; hidden
          files and folders (name starting with ``.``) are skipped, other files are listed as bad.
          A symbolic link in a folder that leads outside it is not followed (listed as bad)
          unless ``follow_symlinks``; a link to a folder is never descended without it.

    Text is UTF-8 (a BOM allowed; UTF-16 or UTF-32 with a BOM). A file that is not UTF-8 is read
    as Windows-1252 (else Latin-1), with a warning naming it and the encoding, unless most of its
    bytes are not ASCII (then it is bad: a multi-byte legacy encoding would read as nonsense).

    A file is bad when it is unreadable, empty, binary (NUL bytes or a high share of control
    characters), larger than ``max_bytes``, malformed
    JSON, or not a regular file (a FIFO, socket or device). Bad files are skipped and returned
    with their reason; the good ones load.

    Document ids are the file name (or the path relative to the folder given), with ``#i`` for the
    i-th document of a JSON/JSONL file, so ids do not depend on the working directory.

    Raises:
        InputError: no paths were given, a given path does not exist (a typo must not pass as
            a skipped file), or no good document remains (the message lists why).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise InputError("no input paths given; pass one or more files or folders")
    missing = [str(p) for p in paths if not os.path.lexists(p) or not Path(p).exists()]
    dangling = [p for p in missing if os.path.lexists(p)]  # a link that loops or leads nowhere
    if dangling:
        raise InputError(
            f"{', '.join(dangling)}: a symbolic link that leads nowhere (its target is missing, "
            "or the links loop); point it at a file or folder, or pass the target itself",
            path=dangling[0],
        )
    if missing:
        raise InputError(
            f"no such file or folder: {', '.join(missing)}; check the path",
            path=missing[0],
        )
    docs: list[SourceDocument] = []
    bad: list[BadFile] = []
    for file, doc_id in _expand(paths, bad, follow_symlinks=follow_symlinks):
        try:
            docs.extend(_read_file(file, doc_id, max_bytes=max_bytes, skipped=bad))
        except InputError as exc:
            bad.append((file, str(exc)))
    if not docs:
        reasons = "\n".join(f"  {p}: {r}" for p, r in bad) or "  (no files found)"
        raise InputError(
            "no usable document in the input; every file was rejected:\n"
            + reasons
            + f"\nPass UTF-8 text files ({', '.join(SUPPORTED_SUFFIXES)}) or folders of them.",
            path=bad[0][0] if bad else None,
        )
    return docs, bad


def _unsupported(f: Path) -> str:
    return f"unsupported file type {f.suffix or '(none)'!r}; use one of {', '.join(SUPPORTED_SUFFIXES)}"


_NOT_REGULAR = "not a regular file (a FIFO, socket or device); pass text files"


def _walk(root: Path, bad: list[BadFile], follow_symlinks: bool) -> list[Path]:
    """Every non-hidden file below ``root``; links leading outside it are named in ``bad``."""
    root_real = root.resolve()
    seen = {root_real}
    files: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            bad.append((folder, f"cannot list folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            p = Path(entry.path)
            if entry.is_symlink():
                try:
                    target = p.resolve(strict=True)
                except (OSError, RuntimeError):
                    bad.append((p, "broken symbolic link"))
                    continue
                if not follow_symlinks and not target.is_relative_to(root_real):
                    bad.append(
                        (
                            p,
                            f"symbolic link to {target}, outside the input folder; not followed "
                            "(pass --follow-symlinks to read it)",
                        )
                    )
                    continue
                if target.is_dir() and not follow_symlinks:
                    bad.append((p, "symbolic link to a folder; not followed (--follow-symlinks)"))
                    continue
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError as exc:
                bad.append((p, f"cannot read: {exc.strerror or exc}"))
                continue
            if is_dir and is_graph_dir(p):
                bad.append((p, _GRAPH_DIR))
            elif is_dir:
                real = p.resolve()
                if real not in seen:  # a followed link may loop back
                    seen.add(real)
                    stack.append(p)
            elif is_file:
                files.append(p)
            else:
                bad.append((p, _NOT_REGULAR))
    return sorted(files)


def _expand(
    paths: Iterable[str | Path], bad: list[BadFile], *, follow_symlinks: bool = False
) -> list[tuple[Path, str]]:
    """Turn the given paths into (file, document id) pairs, recording unusable ones.

    A document id is the file name (or its path relative to the folder given). Where two files
    would share one (``a/x.md`` and ``b/x.md``), each gets its path as given instead, so ids stay
    unique while a file with a unique name keeps the id it always had. A file named twice is read
    once. A folder that is an hcg graph directory is not corpus (its ``chunks.jsonl`` would be
    read back as text): it is skipped and listed, as is a path inside one.
    """
    found: list[tuple[Path, str]] = []  # (file, short id)
    for raw in paths:  # each exists (``load_inputs`` checked)
        p = Path(raw)
        if p.is_dir() and is_graph_dir(p):
            bad.append((p, _GRAPH_DIR))
            continue
        holder = next((d for d in p.resolve().parents if is_graph_dir(d)), None)
        if holder is not None:  # its chunks.jsonl (or reply cache) named directly
            bad.append((p, f"lies inside the hcg graph directory {holder}: {_GRAPH_FILES}"))
            continue
        if p.is_dir():
            files = [(f, f.relative_to(p).as_posix()) for f in _walk(p, bad, follow_symlinks)]
        elif p.is_file():
            files = [(p, p.name)]
        else:
            bad.append((p, _NOT_REGULAR))
            continue
        for f, short in files:
            if f.suffix.lower() in SUPPORTED_SUFFIXES:
                found.append((f, short))
            else:
                bad.append((f, _unsupported(f)))
    kept: list[tuple[Path, str, str]] = []  # (file, short id, id from the path as given)
    seen: set[Path] = set()
    for f, short in found:
        real = Path(os.path.abspath(f))  # not resolved: a link inside a folder is its own file
        if has_lone_surrogate(f.as_posix()):
            bad.append((f, _BAD_NAME))
        elif real not in seen:
            seen.add(real)
            kept.append((f, short, f.as_posix()))
    shared = {k for k, n in Counter(short for _, short, _ in kept).items() if n > 1}
    return [(f, full if short in shared else short) for f, short, full in kept]


_GRAPH_FILES = (
    "a graph's own files are not corpus (its chunks.jsonl would be added again as new text); "
    "skipped. Pass the documents it was built from"
)
_GRAPH_DIR = (
    "an hcg graph directory, not corpus (its chunks.jsonl would be read back as text); "
    "skipped. Pass the documents it was built from"
)
_BAD_NAME = "file name is not valid UTF-8 (the id would not be text); skipped. Rename the file"


def display_path(path: str | os.PathLike) -> str:
    """A path as printable text: bytes the file system could not decode shown as ``\\xff``.

    >>> display_path(os.fsdecode(b"caf\\xff.md"))
    'caf\\\\xff.md'
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _read_file(
    path: Path, doc_id: str, *, max_bytes: int, skipped: list[BadFile]
) -> list[SourceDocument]:
    """The documents of one file; items of a JSON file that are left out go to ``skipped``."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(
                f"file is {size:,} bytes, over the {max_bytes:,}-byte limit; split it into "
                "smaller files or raise max_bytes",
                path=path,
            )
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    text = decode_text(data, path=path)
    suffix = path.suffix.lower()
    source = {"source": path.as_posix()}
    # Python's JSON reader accepts NaN and Infinity, which are not JSON: kept as text ("NaN",
    # ``parse_constant=str``), so the chunks.jsonl written from them stays strict JSON.
    if suffix == ".json":
        obj = loads_json(text, path=path, error=InputError, parse_constant=str)
        single = not isinstance(obj, list)
        items = [obj] if single else obj
    elif suffix == ".jsonl":
        # Lines end at "\n" only: str.splitlines would also cut at U+2028, U+2029 and U+0085,
        # which JSON allows raw inside a string.
        single = False
        items = [
            loads_json(line, path=path, line=n, error=InputError, parse_constant=str)
            for n, line in enumerate(text.split("\n"), start=1)
            if line.strip()
        ]
    else:
        body, front = prepare_text(text, who=path.as_posix())
        if not body.strip():
            raise InputError("file holds only YAML front matter, no text", path=path)
        return [SourceDocument(id=doc_id, text=body, metadata={**front, **source})]
    return _json_documents(items, doc_id, source, path, max_bytes, single=single, skipped=skipped)


def _json_documents(
    items: list[Any],
    doc_id: str,
    source: dict,
    path: Path,
    max_bytes: int,
    *,
    single: bool,
    skipped: list[BadFile],
) -> list[SourceDocument]:
    docs: list[SourceDocument] = []
    problems: list[str] = []
    for i, item in enumerate(items):
        meta = dict(source)
        if isinstance(item, str):
            text = item
        elif isinstance(item, dict):
            text = next(
                (item[k] for k in TEXT_KEYS if isinstance(item.get(k), str) and item[k].strip()),
                None,
            )
            if text is None:
                problems.append(
                    f"item {i} has no non-empty text field (looked for {', '.join(TEXT_KEYS)})"
                )
                continue
            meta.update(
                {
                    k: v
                    for k, v in item.items()
                    if k not in TEXT_KEYS and isinstance(v, (str, int, float, bool))
                }
            )
        else:
            problems.append(f"item {i} is a {type(item).__name__}, expected a string or an object")
            continue
        if not text.strip():
            problems.append(f"item {i} is empty")
            continue
        if has_lone_surrogate(text) or any(has_lone_surrogate(str(v)) for v in meta.values()):
            problems.append(
                f"item {i} holds a lone surrogate (a \\ud800-\\udfff escape), which is not "
                "Unicode text"
            )
            continue
        if len(text.encode("utf-8")) > max_bytes:
            problems.append(f"item {i} is over the {max_bytes:,}-byte limit")
            continue
        docs.append(
            SourceDocument(id=doc_id if single else f"{doc_id}#{i}", text=text, metadata=meta)
        )
    if not docs:
        why = "; ".join(problems[:5]) if problems else "it holds no items"
        raise InputError(f"no usable document in JSON: {why}", path=path)
    if problems:  # the file is used; its bad items are named, not lost
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        skipped.append((path, f"{len(problems)} item(s) skipped: {'; '.join(problems[:5])}{more}"))
    return docs


def decode_text(data: bytes, *, path: Path | str | None = None) -> str:
    """Decode file bytes as UTF-8 (a BOM is allowed; UTF-16 and UTF-32 with their BOM too),
    else as Windows-1252 or Latin-1 with a warning (``_legacy_text``), rejecting empty and
    binary input (a NUL byte, or a high share of control characters).

    >>> decode_text(b"\\xef\\xbb\\xbfhello"), decode_text("hé".encode("utf-16"))
    ('hello', 'hé')
    """
    if not data.strip():
        raise InputError("file is empty", path=path)
    for bom, codec in _BOMS:
        # A BOM says how the text is encoded, NUL bytes then being expected. Without a NUL after
        # it, "\xff\xfe" is more likely the start of a Latin-1 file than UTF-16 (whose spaces
        # and line breaks hold NUL bytes): that goes on to the UTF-8 check and its message.
        if data.startswith(bom) and b"\x00" in data[len(bom) :]:
            try:
                text = data[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"file starts with a {codec.upper()} byte-order mark but is not {codec} "
                    f"text (invalid data at byte offset {exc.start + len(bom)}); re-save it as "
                    "UTF-8",
                    path=path,
                ) from None
            return _checked_text(text, path)
    if b"\x00" in data:
        offset = data.index(b"\x00")
        raise InputError(
            f"file looks binary (NUL byte at byte offset {offset}); pass a text file", path=path
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        text = _legacy_text(data, exc.start, path)
    return _checked_text(text, path)


def _legacy_text(data: bytes, offset: int, path: Path | str | None) -> str:
    """Bytes that are not UTF-8 (invalid at ``offset``) read as a single-byte legacy encoding,
    with a warning naming the file and the encoding; refused when most bytes are not ASCII.

    Windows-1252 first (what Windows editors save as "ANSI" text; its printable characters
    include all of Latin-1's), then Latin-1 for the five bytes Windows-1252 leaves undefined.
    Western European text has a few accented letters among ASCII ones; a file mostly of bytes
    over 0x7F is a multi-byte legacy encoding (Shift-JIS, GBK) or another alphabet (Cyrillic,
    Greek), which either decoding would turn into nonsense: that is refused.
    """
    high = len(data) - len(data.translate(None, _HIGH_BYTES))  # counted in C: files run to 50 MB
    where = f"invalid byte 0x{data[offset]:02x} at byte offset {offset}"
    if high > MAX_LEGACY_HIGH_SHARE * len(data):
        raise InputError(
            f"file is not UTF-8 text ({where}), and {high} of its {len(data)} bytes are not "
            "ASCII, too many for Western European (Windows-1252) text; re-save it as UTF-8",
            path=path,
        )
    for codec in LEGACY_ENCODINGS:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        who = display_path(path) if path is not None else "text"
        logger.warning("%s: not UTF-8 (%s); read as %s", who, where, codec)
        return text
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


# Byte-order marks of the encodings read besides UTF-8 (UTF-32 first: its LE mark starts with
# UTF-16's). Editors on Windows save "Unicode" text as UTF-16 with a BOM.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def _checked_text(text: str, path: Path | str | None) -> str:
    """``text``, refused when empty, binary-looking, or holding a lone surrogate."""
    if not text.strip():
        raise InputError("file is empty (only whitespace)", path=path)
    if has_lone_surrogate(text):  # UTF-16 can hold an unpaired surrogate; UTF-8 cannot
        raise InputError("file holds a lone surrogate, which is not Unicode text", path=path)
    controls = len(_CONTROL_RE.findall(text))
    if controls > _MAX_CONTROL_SHARE * len(text):
        raise InputError(
            f"file looks binary ({controls} control characters in {len(text)}); pass a text file",
            path=path,
        )
    return text


# ----------------------------------------------------------------------------- text files


def normalize_newlines(text: str) -> str:
    r"""``text`` with every line end (CRLF, or a lone CR as old Mac files have) made ``"\n"``.

    Chunking cuts at blank lines and the offline builder reads headings and list items line by
    line, both on ``"\n"``: a CR-only file read as it is would be one line (issue 43, S4).

    >>> normalize_newlines("# A\r\rB\r\nC")
    '# A\n\nB\nC'
    """
    return _LINE_ENDS_RE.sub("\n", text) if "\r" in text else text


def split_front_matter(text: str, *, who: str = "text") -> tuple[str, dict[str, Any], int]:
    r"""``(body, metadata, offset)``: a YAML front matter block at the start of ``text`` taken off.

    The block is ``---`` alone on the first line, YAML, and ``---`` (or ``...``) alone on a later
    line, read with the project's bounded safe YAML loader. It counts only when it reads as a
    mapping (or is empty): anything else (a Markdown rule over a paragraph, a block over
    ``MAX_FRONT_MATTER_CHARS``) leaves the text whole, and YAML that does not parse is kept as text
    with a warning naming ``who``. Values are stored as :func:`hcg_core.contract.json_metadata`
    keeps them (dates as ISO text). ``offset`` is where the body starts in ``text``. Line ends must
    already be ``"\n"`` (:func:`normalize_newlines`).

    >>> split_front_matter("---\ntitle: Outage\ndate: 2024-05-01\n---\nThe cache expired.")
    ('The cache expired.', {'title': 'Outage', 'date': '2024-05-01'}, 39)
    >>> split_front_matter("---\nJust a rule.\n---\nText.")[1:]
    ({}, 0)
    """
    if not text.startswith("---"):
        return text, {}, 0
    m = _FRONT_MATTER_RE.match(text, 0, min(len(text), MAX_FRONT_MATTER_CHARS))
    if m is None:
        return text, {}, 0
    try:
        data = loads_yaml(m.group("yaml"), path=who, error=InputError)
    except (HCGError, yaml.YAMLError) as exc:  # the reader's own errors too (a control character)
        logger.warning("%s: front matter is not valid YAML, read as text: %s", who, exc)
        return text, {}, 0
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return text, {}, 0
    metadata = json_metadata(
        {str(k): v for k, v in data.items() if v is not None}, who=f"{who} front matter"
    )
    return text[m.end() :], metadata, m.end()


def prepare_text(text: str, *, who: str = "text") -> tuple[str, dict[str, Any]]:
    r"""A text file's text as hcg chunks it: line ends made ``"\n"``, then its front matter taken
    off as metadata (``split_front_matter``). What ``load_inputs`` does to ``.txt`` and ``.md``
    files and both adapters' ``from_documents`` to the documents they chunk.

    >>> prepare_text("---\r\ntitle: Outage\r\n---\r\n# Impact\r\rThe cache expired.")
    ('# Impact\n\nThe cache expired.', {'title': 'Outage'})
    """
    body, metadata, _ = split_front_matter(normalize_newlines(text), who=who)
    return body, metadata


def leading_front_matter(text: str, *, who: str = "text") -> int:
    r"""Where a unit's own text starts after a YAML front matter block (0: it has none).

    For a user's own units (nodes given ``chunk=False`` or split by the user's transformations),
    which come back as given: the block is left out of what is ranked, not cut from the unit.
    Found as ``split_front_matter`` finds it after ``normalize_newlines``; the offset is in
    ``text`` as given (CRLF counted as two characters). A unit that is only front matter keeps it:
    there is nothing else to rank.

    >>> leading_front_matter("---\r\ntitle: Outage\r\n---\r\nThe cache expired.")
    25
    """
    normal = normalize_newlines(text)
    body, _, end = split_front_matter(normal, who=who)
    if not end or not body.strip():
        return 0
    if normal is text:  # no CR in it: the offsets agree
        return end
    # The body follows a line end (it is not empty): the offset is just past the same line end
    # counted in ``text``.
    breaks = normal.count("\n", 0, end)
    last = next(itertools.islice(_ANY_LINE_END_RE.finditer(text), breaks - 1, None))
    return last.end()


# ----------------------------------------------------------------------------- chunking


def chunk_id(doc_id: str, start_word: int, text: str) -> str:
    """Stable chunk id: ``c_`` + 12 hex digits of blake2b over the doc id, offset and text.

    >>> cid = chunk_id("a.txt", 0, "Smoking causes cancer.")
    >>> cid.startswith("c_"), len(cid)
    (True, 14)
    """
    h = hashlib.blake2b(f"{doc_id}\x00{start_word}\x00{text}".encode(), digest_size=6)
    return "c_" + h.hexdigest()


def word_spans(text: str, *, max_token_chars: int = MAX_TOKEN_CHARS) -> list[tuple[int, int]]:
    """The (start, end) character spans of the words chunking counts.

    A word is a run of non-space characters, except that each CJK character (with the punctuation
    after it) is a word of its own and a run longer than ``max_token_chars`` is cut into pieces.

    >>> word_spans("Smoking kills. 吸烟有害。")
    [(0, 7), (8, 14), (15, 16), (16, 17), (17, 18), (18, 20)]
    """
    spans: list[tuple[int, int]] = []
    for m in _UNIT_RE.finditer(text):
        a, b = m.span()
        while b - a > max_token_chars:
            spans.append((a, a + max_token_chars))
            a += max_token_chars
        spans.append((a, b))
    return spans


def chunk_documents(
    docs: Sequence[SourceDocument],
    *,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = DEFAULT_OVERLAP_WORDS,
    max_chars: int | None = None,
    whole_words: int | None = None,
) -> list[Chunk]:
    r"""Split documents into chunks that follow their paragraphs, windowing only long ones.

    A document is first cut into blocks at blank lines (paragraphs, abstracts, sections).
    Consecutive blocks are grouped while the group holds at most ``chunk_words`` words, so a
    heading stays with the text under it and a chunk never ends inside a short paragraph. A group
    of at most ``whole_words`` words (default ``WHOLE_BLOCK_FACTOR`` (3) x ``chunk_words``) is one
    chunk, whole. A longer block (or a document with no blank lines at all) is cut into windows of
    ``chunk_words`` words that end early at the last sentence end within their final quarter (never
    shorter than 3/4 of ``chunk_words``); the next window starts ``overlap_words`` words before the
    previous one's end.

    Why: a unit that is one paragraph or one abstract holds a passage's sentences together, where
    fixed windows cut them (docs/evaluation.md measures both). Text without blank lines is
    chunked exactly as plain windows.

    Bounded: words are those of ``word_spans``, so text without spaces (CJK) counts each
    character as a word and ends sentences at 。！？, and a token over ``MAX_TOKEN_CHARS``
    characters is cut. No chunk is longer than ``max_chars`` characters (default
    ``whole_words * DEFAULT_CHARS_PER_WORD``, 7,200 at 200 words): a group over it is windowed,
    and a window that would pass it ends early, its overlap shrinking in proportion.

    The chunk text is the original text (whitespace inside kept). Metadata: ``doc_id``, ``index``
    (chunk number in its document), ``start_word``, ``end_word`` (exclusive, word offsets in the
    document), plus the document's own metadata.

    >>> [c.metadata["start_word"] for c in chunk_documents(
    ...     [SourceDocument("d", " ".join(["w"] * 10))], chunk_words=4, overlap_words=1, whole_words=6)]
    [0, 3, 6]
    >>> [c.text for c in chunk_documents(
    ...     [SourceDocument("d", "# Title\n\nOne two three.\n\nFour five six seven.")], chunk_words=5, overlap_words=1)]
    ['# Title\n\nOne two three.', 'Four five six seven.']
    >>> max(len(c.text) for c in chunk_documents([SourceDocument("d", "x" * 10_000)], max_chars=500))
    500
    """
    if chunk_words < 1:
        raise ConfigError(f"chunk_words must be at least 1, got {chunk_words}")
    if not 0 <= overlap_words < chunk_words:
        raise ConfigError(
            f"overlap_words must be in [0, chunk_words={chunk_words}), got {overlap_words}"
        )
    whole_limit = WHOLE_BLOCK_FACTOR * chunk_words if whole_words is None else whole_words
    if isinstance(whole_limit, bool) or not isinstance(whole_limit, int) or whole_limit < 1:
        raise ConfigError(f"whole_words must be a positive int, got {whole_words!r}")
    if max_chars is None:
        max_chars = whole_limit * DEFAULT_CHARS_PER_WORD
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ConfigError(f"max_chars must be a positive int, got {max_chars!r}")
    chunks: list[Chunk] = []
    for doc in docs:
        if has_lone_surrogate(doc.text):
            raise InputError(
                f"document {doc.id!r} holds a lone surrogate (U+D800-U+DFFF), which is not "
                "Unicode text and cannot be stored; replace it (e.g. text.encode('utf-8', "
                "'replace').decode())"
            )
        spans = word_spans(doc.text, max_token_chars=min(MAX_TOKEN_CHARS, max_chars))
        windows: list[tuple[int, int]] = []
        for first, last in _block_groups(doc.text, spans, chunk_words):
            chars = spans[last - 1][1] - spans[first][0]
            if last - first <= whole_limit and chars <= max_chars:
                windows.append((first, last))
            else:
                windows.extend(
                    _windows(doc.text, spans, first, last, chunk_words, overlap_words, max_chars)
                )
        for index, (start, end) in enumerate(windows):
            text = doc.text[spans[start][0] : spans[end - 1][1]]
            meta = dict(doc.metadata)
            meta.update(doc_id=doc.id, index=index, start_word=start, end_word=end)
            chunks.append(
                Chunk(id=chunk_id(doc.id, start, text), text=text, doc_id=doc.id, metadata=meta)
            )
    return chunks


def recorded_chunking(report: Any) -> dict[str, int]:
    """The chunking a build recorded in its report (``input``), for edits to cut text alike.

    Only the usable values: ``chunk_words``, ``whole_words`` and ``chunk_chars`` positive ints,
    ``chunk_overlap`` an int >= 0. A hand-edited or odd-typed report (a string, a float, an
    object) is ignored key by key, so an edit falls back to the defaults instead of failing.

    >>> recorded_chunking({"input": {"chunk_words": 120, "chunk_overlap": "x", "chunk_chars": 0}})
    {'chunk_words': 120}
    """
    given = report.get("input") if isinstance(report, dict) else None
    if not isinstance(given, dict):
        return {}
    out = {}
    for key, least in (
        ("chunk_words", 1),
        ("chunk_overlap", 0),
        ("whole_words", 1),
        ("chunk_chars", 1),
    ):
        value = given.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= least:
            out[key] = value
    return out


def _block_groups(
    text: str, spans: Sequence[tuple[int, int]], chunk_words: int
) -> list[tuple[int, int]]:
    r"""Word ranges ``[first, last)`` of consecutive blank-line blocks, grouped up to ``chunk_words``.

    >>> t = "a b\n\nc\n\nd e f g"
    >>> _block_groups(t, [m.span() for m in WORD_RE.finditer(t)], 3)
    [(0, 3), (3, 7)]
    """
    # Word offsets where a new block starts: the first word after each blank line.
    starts = [0]
    w = 0
    for m in BLANK_LINE_RE.finditer(text):
        while w < len(spans) and spans[w][0] < m.end():
            w += 1
        if starts[-1] < w < len(spans):
            starts.append(w)
    bounds = [*starts, len(spans)] if spans else [0]
    groups: list[tuple[int, int]] = []
    first = 0
    for a, b in itertools.pairwise(bounds):
        if b - first > chunk_words and a > first:
            groups.append((first, a))
            first = a
    if len(spans) > first:
        groups.append((first, len(spans)))
    return groups


def _windows(
    text: str,
    spans: Sequence[tuple[int, int]],
    first: int,
    last: int,
    chunk_words: int,
    overlap_words: int,
    max_chars: int,
) -> list[tuple[int, int]]:
    """Overlapping word windows over ``[first, last)``, each ending at a sentence end when near.

    A window holds ``chunk_words`` words, fewer when they would pass ``max_chars`` characters;
    such a shorter window overlaps the next in proportion.
    """
    ends = [b for _, b in spans]
    out: list[tuple[int, int]] = []
    start = first
    while start < last:
        fit = bisect.bisect_right(ends, spans[start][0] + max_chars, lo=start, hi=last) - start
        size = max(1, min(chunk_words, fit))
        end = min(start + size, last)
        if end < last:
            # Prefer ending at a sentence boundary in the window's last quarter.
            for j in range(end, max(start + size - size // 4, start + 1) - 1, -1):
                if SENTENCE_END_RE.search(text[spans[j - 1][0] : spans[j - 1][1]]):
                    end = j
                    break
        out.append((start, end))
        if end >= last:
            break
        overlap = overlap_words if size == chunk_words else overlap_words * size // chunk_words
        start = max(end - overlap, start + 1)
    return out


# Frequent English function words: about a quarter of the words of English prose and next to none
# of a Turkish, Spanish or German text's, so their share tells English text from the rest without
# a language model. Under NOT_ENGLISH_SHARE a text of at least MIN_WORDS_TO_JUDGE words counts as
# not English (measured on paper abstracts: English ones near 0.25, Turkish and Spanish 0.00-0.02).
def word_set(block: str) -> frozenset[str]:
    """The words of a whitespace-separated block: how the library writes its word lists (one word
    a line would make a list of a hundred words a hundred lines).

    >>> sorted(word_set("  of the\tand of "))
    ['and', 'of', 'the']
    """
    return frozenset(block.split())


# The most frequent function words, then question words, so that a short English question reads as
# English too.
_ENGLISH_FUNCTION_WORDS = word_set("""
    the of and to in is that for with are was as on by be this from which were an or has have
    what how does why who when where
""")
_LETTER_WORD_RE = re.compile(r"[^\W\d_]+")
NOT_ENGLISH_SHARE = 0.05
MIN_WORDS_TO_JUDGE = 20


def english_word_counts(text: str) -> tuple[int, int]:
    """(frequent English function words, all words) of a text."""
    words = _LETTER_WORD_RE.findall(text.lower())
    return sum(w in _ENGLISH_FUNCTION_WORDS for w in words), len(words)


def english_share(text: str) -> float:
    """Share of a text's words that are frequent English function words.

    >>> english_share("The cat sat on the mat"), english_share("Elde edilen bulgular")
    (0.5, 0.0)
    """
    hits, n = english_word_counts(text)
    return hits / n if n else 0.0


def reads_not_english(text: str) -> bool:
    """Whether a text of at least ``MIN_WORDS_TO_JUDGE`` words reads as not English.

    >>> reads_not_english("Bu araştırmanın amacı " * 7), reads_not_english("Elde edilen bulgular")
    (True, False)
    """
    hits, n = english_word_counts(text)
    return n >= MIN_WORDS_TO_JUDGE and hits < NOT_ENGLISH_SHARE * n


def count_not_english(texts: Iterable[str]) -> int:
    """How many of ``texts`` read as not English (``reads_not_english``)."""
    return sum(map(reads_not_english, texts))
