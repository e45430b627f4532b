"""LLM-free causal statement extraction: sentences -> (cause span, cue, effect span) by cue patterns.

Pure functions over text. Every extraction is tied to one sentence that states the causal link
with an explicit cue ("X causes Y", "Y is caused by X", "because of X, Y", ...), so the offline
graph stays a causal graph, never a co-occurrence graph. Spans are then normalised (determiners,
hedges and quantifiers stripped, crude singularisation) and split into a head ("risk",
"blood pressure") and an entity modifier ("lung cancer") by ``parse_span``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import dropwhile, groupby, takewhile

from ..corpus import word_set

# ----------------------------------------------------------------------------- sentences

_SENT_SPLIT_RE = re.compile(
    r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c(\[]?[A-Z0-9])|\n\s*\n"
)
MAX_SENTENCE_CHARS = 600
# A cue at least this strong ("causes", "leads to", "is caused by") states a link outright; weaker
# ones ("affects", "improves") need a second sentence before the offline builder trusts them.
STRONG_CUE = 0.85

# Line structure of Markdown (and of plain text with underlined headings). Chunk texts carry no
# file type, so the structure is read from the lines themselves.
# A line ends at LF, CRLF or a lone CR: a user's own node may keep any of them (hcg's own chunks
# have "\n" only, ``hcg_core.corpus.normalize_newlines``).
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n?|\n|$)")
_ATX_HEADING_RE = re.compile(r" {0,3}#{1,6}(?:[ \t]+|$)")
_ATX_CLOSE_RE = re.compile(r"(?:[ \t]+#+)?[ \t]*$")
# A line of only "=" or only "-" (three or more) under a line of text underlines it as a heading.
_UNDERLINE_RE = re.compile(r" {0,3}(?:={3,}|-{3,})[ \t]*$")
_THEMATIC_BREAK_RE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM_RE = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,9}[.)])[ \t]+(?=\S)")
_BULLET_RE = re.compile(r"[ \t]*[-*+\u2022][ \t]+(?=\S)")
_TABLE_ROW_RE = re.compile(r" {0,3}\|")
_TABLE_RULE_RE = re.compile(r"[ \t|:\-]*-[ \t|:\-]*$")


@dataclass(frozen=True)
class TextUnit:
    """One unit of a text: a sentence, a heading, a list item's sentence or a table row.

    ``start``/``end``: its ``[start, end)`` characters in the text (list markers, heading marks
    and outer table pipes excluded); ``text``: those characters with whitespace runs made one
    space (a table row's cells joined by `` | ``).
    """

    kind: str  # "sentence", "heading", "item" or "row"
    start: int
    end: int
    text: str


def text_units(text: str) -> list[TextUnit]:
    r"""The units of ``text``: sentences of its paragraphs, and each heading, list item and table row.

    Markdown headings (``# Title``, a line underlined with ``===`` or ``---``, which is also how
    plain text marks one) are units of their own, so a heading directly followed by text on the
    next line does not glue onto its first sentence. A list item and a table row are their own
    units too (an item holding several sentences gives one unit per sentence). Inside a paragraph
    a single line break is a wrapped line; sentences end at ., !, ? before a capital or digit.

    >>> [(u.kind, u.text) for u in text_units("## Root cause\nThe cache expired. It failed.")]
    [('heading', 'Root cause'), ('sentence', 'The cache expired.'), ('sentence', 'It failed.')]
    >>> [(u.kind, u.text) for u in text_units("Impact\n======\n- salt raises risk\n| a | b |")]
    [('heading', 'Impact'), ('item', 'salt raises risk'), ('row', 'a | b')]
    """
    if "\n" not in text and "\r" not in text and not _line_marked(text):
        return _sentences(text, 0, len(text), "sentence")
    units: list[TextUnit] = []
    block: list = []  # [start, end, kind] of the paragraph or list item being read
    last_line: tuple[int, int] | None = None  # the block's last line, for an underline

    def flush() -> None:
        if block:
            units.extend(_sentences(text, *block))
            block.clear()

    for m in _LINE_RE.finditer(text):  # the last match is the empty one at the end
        a = m.start()
        line = m.group().rstrip("\r\n")
        e = a + len(line)
        prev, last_line = last_line, None
        if not line.strip():
            flush()
            continue
        if _UNDERLINE_RE.match(line) and prev is not None:
            # The underlined line is a heading; the block's earlier lines stay a paragraph.
            la, le = prev
            if block[0] < la:
                block[1] = la
                flush()
            block.clear()
            units.extend(_unit(text, la, le, "heading"))
            continue
        if _THEMATIC_BREAK_RE.match(line):
            flush()
            continue
        heading = _ATX_HEADING_RE.match(line)
        if heading:
            flush()
            close = _ATX_CLOSE_RE.search(line, heading.end())
            units.extend(_unit(text, a + heading.end(), a + close.start(), "heading"))
            continue
        if _TABLE_ROW_RE.match(line):
            flush()
            if not _TABLE_RULE_RE.match(line):
                units.extend(_row(text, a, e))
            continue
        item = _LIST_ITEM_RE.match(line)
        if item:
            flush()
            block[:] = [a + item.end(), e, "item"]
            continue
        if block:
            block[1] = e  # a wrapped line of the paragraph or item
        else:
            block[:] = [a, e, "sentence"]
        last_line = (a, e)
    flush()
    return units


def _line_marked(line: str) -> bool:
    """Whether a one-line text opens with a heading, bullet or table mark. Not a number ("12. "):
    alone on its line, that more often opens a sentence (a chunk of flowing text) than a list."""
    return bool(_ATX_HEADING_RE.match(line) or _BULLET_RE.match(line) or _TABLE_ROW_RE.match(line))


def _sentences(text: str, start: int, end: int, kind: str) -> list[TextUnit]:
    out, a = [], start
    for m in _SENT_SPLIT_RE.finditer(text, start, end):
        out += _unit(text, a, m.start(), kind)
        a = m.end()
    return out + _unit(text, a, end, kind)


def _row(text: str, start: int, end: int) -> list[TextUnit]:
    """A table row's unit: its cells (outer pipes dropped, ``\\|`` kept) joined by `` | ``."""
    line = text[start:end]
    first = start + line.index("|") + 1
    body = line.rstrip()
    last = start + len(body) - 1 if body.endswith("|") and not body.endswith("\\|") else end
    cells = (" ".join(c.split()) for c in re.split(r"(?<!\\)\|", text[first : max(first, last)]))
    return _unit(text, first, max(first, last), "row", " | ".join(c for c in cells if c))


def _unit(text: str, start: int, end: int, kind: str, joined: str | None = None) -> list[TextUnit]:
    seg = text[start:end]
    start, end = start + len(seg) - len(seg.lstrip()), start + len(seg.rstrip())
    if end <= start:
        return []
    return [TextUnit(kind, start, end, joined or " ".join(text[start:end].split()))]


def split_sentences(text: str) -> list[str]:
    r"""The sentences of ``text`` that can state a causal link: every unit of ``text_units`` but its
    headings (a heading names a topic, it states nothing; its words never enter a mechanism or a
    variable name).

    >>> split_sentences("Smoking causes cancer. It also raises risk!  Next line")
    ['Smoking causes cancer.', 'It also raises risk!', 'Next line']
    >>> split_sentences("## Root cause\nThe cache expired.\n\n- Salt raises risk")
    ['The cache expired.', 'Salt raises risk']
    """
    return [u.text for u in text_units(text) if u.kind != "heading"]


# ----------------------------------------------------------------------------- cue patterns


@dataclass(frozen=True)
class Cue:
    """A causal cue: its regex (matched on a lowercased sentence), direction and strength.

    ``forward``: the text before the cue is the cause ("X causes Y"); otherwise the effect comes
    first ("Y is caused by X"). ``initial``: the cue opens the sentence and a comma separates cause
    from effect ("Because of X, Y").
    """

    name: str
    pattern: str
    forward: bool
    strength: float
    initial: bool = False
    word: bool = True  # the pattern starts and ends at word boundaries (not so for "->")


_AUX = r"(?:(?:is|are|was|were|be|been|being|can be|may be|is often|are often|is usually|are usually|is mainly|are mainly|is mostly|are mostly|is largely|are largely|is partly|are partly|is sometimes|are sometimes|is commonly|are commonly) )"
_ONE_OF = r"(?:a |an |the |one of the )?(?:[a-z\-]+ ){0,2}"  # "is (one of the) main ..."


def _verbs(words: str) -> str:
    """One alternation of each verb's base and third-person forms.

    >>> _verbs("raise diminish multiply")
    '(?:raise|raises|diminish|diminishes|multiply|multiplies)'
    """
    forms = []
    for w in words.split():
        if w.endswith(("s", "sh", "ch", "x")):
            forms += [w, w + "es"]
        elif w.endswith("y") and w[-2] not in "aeiou":
            forms += [w, w[:-1] + "ies"]
        else:
            forms += [w, w + "s"]
    return "(?:" + "|".join(forms) + ")"


# Verbs whose -ed form is also an adjective ("increased risk") are matched only in base and -s
# forms when forward; their passive ("is increased by") is matched separately.
_FORWARD_VERBS: tuple[tuple[str, str, float], ...] = (
    ("risk_factor", rf"(?:is|are|remains?) {_ONE_OF}risk factors? (?:for|of)", 0.85),
    (
        "cause_of",
        rf"(?:is|are|was|were|remains?) {_ONE_OF}(?:causes?|drivers?|triggers?|sources?) of",
        0.9,
    ),
    ("cause", r"caus(?:e|es|ed|ing)", 0.95),
    ("lead_to", r"(?:lead|leads|led|leading|progress|progresses|progressed) to", 0.9),
    ("result_in", r"(?:result|results|resulted|resulting) in", 0.9),
    ("trigger", r"trigger(?:s|ed)?", 0.85),
    ("induce", r"induc(?:e|es)", 0.85),
    ("contribute_to", r"contribut(?:e|es|ed|ing) to", 0.75),
    ("responsible_for", r"(?:is|are|was|were) (?:largely |partly |mainly )?responsible for", 0.8),
    ("predispose", r"predispos(?:e|es|ed)(?: [a-z]+)? to", 0.7),
    ("protect", _verbs("protect guard") + " against", 0.7),
    ("interfere", r"(?:interfere|interferes|interfered) with", 0.65),
    ("increase", _verbs("increase raise elevate boost heighten double triple multiply"), 0.75),
    ("decrease", _verbs("decrease reduce lower diminish lessen"), 0.75),
    ("prevent", r"(?:prevent|prevents|prevented)", 0.8),
    ("inhibit", _verbs("inhibit suppress block impair weaken disrupt hinder"), 0.75),
    ("promote", _verbs("promote stimulate enhance accelerate activate strengthen"), 0.7),
    ("worsen", _verbs("worsen aggravate exacerbate"), 0.75),
    ("improve", _verbs("improve relieve alleviate ease"), 0.65),
    ("damage", _verbs("damage destroy kill shrink slow injure harm"), 0.65),
    ("produce", _verbs("produce generate create"), 0.55),
    ("treat", r"(?:treats|cure|cures|control|controls|manage|manages)", 0.55),
    ("affect", _verbs("affect influence determine drive"), 0.5),
)
# Modals, hedges and "helps"/"is used to" that may sit between a subject and its causal verb.
_PREFIX = (
    r"(?:can|may|might|could|will|would|often|also|usually|commonly|sometimes|frequently|"
    r"generally|typically|directly|eventually|ultimately|further|significantly|greatly|"
    r"helps?(?: to)?|helped|(?:is|are|can be|may be|will be|be) (?:used|given|designed|meant) to|"
    r"used to|works? to|tends? to|seems? to|appears? to|is known to|are known to|is thought to|"
    r"are thought to|is likely to|are likely to)"
)
_BY = r"(?:mainly |mostly |largely |partly |primarily )?by"  # "is caused (mainly) by"
_PASSIVE_VERBS = (
    r"caused|triggered|induced|produced|driven|increased|decreased|reduced|raised|lowered|"
    r"prevented|inhibited|suppressed|blocked|promoted|stimulated|worsened|improved|relieved|"
    r"damaged|destroyed|killed|affected|influenced|determined|treated|controlled"
)

CUES: tuple[Cue, ...] = (
    # Sentence-initial cues first: they claim "due to"/"because" before the mid-sentence forms.
    Cue(
        "initial_because_of",
        r"(?:because of|due to|as a result of|owing to)",
        True,
        0.8,
        initial=True,
    ),
    Cue("initial_because", r"(?:because|since)", True, 0.65, initial=True),
    Cue("caused_by", rf"{_AUX}?(?:{_PASSIVE_VERBS}) {_BY}", False, 0.85),
    Cue(
        "result_from",
        r"(?:result|results|resulted|resulting|stem|stems|arise|arises|arising) from",
        False,
        0.85,
    ),
    Cue(
        "consequence_of",
        rf"(?:is|are|was|were) {_ONE_OF}(?:consequences?|results?|complications?) of",
        False,
        0.8,
    ),
    Cue("arrow", r" (?:->|\u2192|=>) ", True, 0.6, word=False),
    Cue(
        "due_to",
        r"(?:(?:is|are|was|were|may be|can be) )?(?:mainly |mostly |largely |partly |often |usually )?(?:due to|because of|owing to|attributable to)",
        False,
        0.8,
    ),
    Cue("because", r"because", False, 0.7),
    # Forward verbs last: "caused" must not claim the "caused by" of a passive.
    *(Cue(n, rf"(?:{_PREFIX} )*{p}", True, s) for n, p, s in _FORWARD_VERBS),
)


def _cue_re(cue: Cue) -> re.Pattern[str]:
    if cue.initial:
        return re.compile(rf"^{cue.pattern}\b")
    return re.compile(rf"\b{cue.pattern}\b" if cue.word else cue.pattern)


_CUE_RES = tuple((c, _cue_re(c)) for c in CUES)

# ----------------------------------------------------------------------------- spans

MAX_SPAN_WORDS = 6
_NEGATIONS = word_set("""
    not no never cannot can't don't doesn't didn't won't isn't aren't neither nor without
    unlikely
""")
# Words that open a new clause: a span never runs across them.
_CLAUSE_WORDS = word_set("""
    which that what how why who whom whose when whenever while where if unless because since
    although though whereas but so than as such like including especially e.g i.e then therefore
    thus however also is are was were be been has have had do does did can may might could will
    would should must
""")
# Prepositions that start a qualifier of a noun phrase ("smoking in pregnancy", "stroke in older
# adults"): the span ends before them.
_PREPOSITIONS = word_set("""
    by through via in into among during after before within for from with without until at on
    over under across throughout despite per versus vs
""")
_BOUNDARY_WORDS = _CLAUSE_WORDS | _PREPOSITIONS | {"to"}
# Before a cue the clause words bound the subject; trailing modals are stripped first ("X can").
_LEFT_CLAUSE_WORDS = _CLAUSE_WORDS | {"to", "used", "help", "helps", "goal", "aim", "purpose"}
# "a diet high in salt": after these adjectives the preposition's object is the cause.
_CONTENT_ADJECTIVES = word_set("high rich low poor full heavy deficient")
# Leading words dropped from a span: determiners, quantifiers, hedges, intensities of change.
_STRIP_LEADING = word_set("""
    the a an this that these those some many most much more less few several certain such other
    another any all both each every its their his her our your my high higher highest low lower
    lowest increased decreased reduced elevated excessive significant significantly severe
    serious major minor greater smaller large larger small overall possible potential likely
    various different specific particular common rare new further additional main known also
    only even just very often usually sometimes already too not no and or of to persistently
    chronically controlling managing treating same abnormally extremely raised rising lowering
    raising reducing increasing decreasing worsening improving improved untreated uncontrolled
    long-standing longstanding prolonged excess extra poor poorly good better best normal
    regular frequent heavy
""")
_STRIP_TRAILING = word_set("""
    can may might could will would should must is are was were be been being has have had do
    does did also often usually sometimes commonly frequently generally typically directly
    eventually ultimately further significantly greatly which that who and or of to the a an it
    them this all both alone together themselves itself in turn more less there here then too
    again indirectly
""")
_PRONOUNS = word_set("""
    it its this that these those they them he she him her we you i one which what who both
    either each something anything everything someone anyone people person thing things
""")
# A span opening with one of these is a question, an adverbial or a quantity, not a quantity's name.
_REJECT_FIRST = word_set("""
    how what why where when whether once almost nearly everyone everything anyone anything
    someone something you we i he she they it there here yes about around approximately
""")
# Words a cue verb form after which is a noun, not a verb ("the damage", "of damage").
_NOUN_BEFORE = word_set("""
    the a an this these those its their his her our your my no any some much more less of such
    further what whose
""")
# Measures that distribute over a coordination: "the risk of stroke and dementia".
_DISTRIBUTIVE_HEADS = word_set(
    "risk chance likelihood odds incidence rate severity level probability"
)
# Nouns that only point at what follows "of": "levels of cholesterol" is cholesterol.
# Risk-like nouns point at their event too: "the risk of stroke" and "stroke risk" are read as the
# stroke, so "X raises the risk of stroke" links X to Stroke.
_TRANSPARENT_HEADS = word_set("""
    level amount concentration quantity presence use intake consumption exposure type kind form
    risk chance likelihood odds probability incidence development onset occurrence number
""")
# Words ending in -ly that are nouns, not adverbs (a span never ends in an adverb).
_LY_NOUNS = word_set("""
    supply family assembly anomaly monopoly belly jelly ally reply apply fly early daily italy
    july rally bully lily folly holly polly
""")
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9\-']*")
_SPLIT_CLAUSE_RE = re.compile(r"[,;:()\[\]\"\u201c\u201d]|\s-\s|\s\u2013\s|\s\u2014\s")
_LIST_ITEM_MAX_WORDS = 3
_FUNCTION_WORDS = _STRIP_LEADING | _PRONOUNS | _CLAUSE_WORDS | _PREPOSITIONS

# Words ending in -s that are not plurals (generic English; -ss/-us/-is/-os/-as are kept anyway).
_NOT_PLURAL = word_set("""
    diabetes series species news measles mumps herpes rabies scabies rickets shingles feces
    faeces physics genetics economics ethics politics mathematics aids lens gas bias always
    perhaps sometimes whereas thus yes this its his hers ours yours theirs besides towards
    afterwards outskirts congratulations headquarters means
""")
_IRREGULAR_PLURALS = dict(
    pair.split(":")
    for pair in word_set("""
    feet:foot teeth:tooth children:child women:woman men:man mice:mouse geese:goose lice:louse
    people:person data:data criteria:criterion phenomena:phenomenon bacteria:bacterium
    fungi:fungus nuclei:nucleus stimuli:stimulus lives:life knives:knife wives:wife leaves:leaf
    halves:half calves:calf selves:self
""")
)


@lru_cache(maxsize=1 << 16)  # every token of the corpus passes here, most of them many times
def singular(word: str) -> str:
    """English singular for matching keys: suffix rules plus generic non-plural -s words.

    >>> [singular(w) for w in ["cells", "therapies", "glasses", "virus", "diagnosis", "risk",
    ...                        "diabetes", "arthritis", "feet", "stenosis", "mellitus"]]
    ['cell', 'therapy', 'glass', 'virus', 'diagnosis', 'risk', 'diabetes', 'arthritis', 'foot', 'stenosis', 'mellitus']
    """
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word]
    if word in _NOT_PLURAL or len(word) <= 3 or not word.endswith("s"):
        return word
    if len(word) > 4 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "os", "as", "'s")):
        return word
    return word[:-1]


def _join_list(parts: list[str], *, from_left: bool) -> str:
    """The clause next to a cue, re-joining a comma list ("smoking, diabetes and obesity")."""
    if from_left:
        clause = parts[-1]
        # "A, B and C cause": a list; ", and C causes" opens a new clause instead.
        if re.search(r"\b(?:and|or)\b", clause) and clause.split()[:1] not in (["and"], ["or"]):
            for part in reversed(parts[:-1]):
                words = _WORD_RE.findall(part.lower())
                if (
                    not 0 < len(part.split()) <= _LIST_ITEM_MAX_WORDS
                    or set(words) & _BOUNDARY_WORDS
                ):
                    break
                clause = part + " and " + clause
        return clause
    items: list[str] = []
    for part in parts[1:]:
        words = part.split()
        if not 0 < len(words) <= _LIST_ITEM_MAX_WORDS + 1 or set(words) & (
            _BOUNDARY_WORDS - {"and", "or"}
        ):
            break
        items.append(part)
        if words[0] in ("and", "or"):
            return " and ".join([parts[0], *items])
    return parts[0]


def clean_span(text: str, *, from_left: bool) -> list[str]:
    """Words of the clause next to a cue: cut at clause punctuation/boundary words, cap, strip.

    ``from_left``: the span precedes the cue; its subject is the noun phrase that opens the
    last clause before the cue, up to a qualifying preposition.

    >>> clean_span("in many patients, the chronic smoking", from_left=True)
    ['chronic', 'smoking']
    >>> clean_span("high levels of ldl cholesterol in the blood", from_left=True)
    ['levels', 'of', 'ldl', 'cholesterol']
    >>> clean_span("the risk of lung cancer in older adults", from_left=False)
    ['risk', 'of', 'lung', 'cancer']
    >>> clean_span("weight, smoking and diabetes all", from_left=True)
    ['weight', 'and', 'smoking', 'and', 'diabetes']
    """
    clause = _join_list(_SPLIT_CLAUSE_RE.split(text), from_left=from_left)
    words = _WORD_RE.findall(clause.lower())
    if from_left:
        words = _rstrip(words, _STRIP_TRAILING.__contains__)
        words = words[len(_rstrip(words, lambda w: w not in _LEFT_CLAUSE_WORDS)) :]
        # The subject ends at its first qualifying preposition ("smoking in pregnancy").
        j = next((k for k, w in enumerate(words) if w in _PREPOSITIONS), len(words))
        if j == 0:
            words = words[len(_rstrip(words, lambda w: w not in _PREPOSITIONS)) :]
        elif j < len(words) and words[j - 1] in _CONTENT_ADJECTIVES:
            words = list(takewhile(lambda w: w not in _PREPOSITIONS, words[j + 1 :]))
        else:
            words = words[:j]
        words = words[-MAX_SPAN_WORDS:]
    else:
        words = list(takewhile(lambda w: w not in _BOUNDARY_WORDS, words))[:MAX_SPAN_WORDS]
    words = _rstrip(
        list(dropwhile(_STRIP_LEADING.__contains__, words)),
        lambda w: w in _STRIP_TRAILING or (w.endswith("ly") and len(w) > 5 and w not in _LY_NOUNS),
    )
    if not words or words[0] in _REJECT_FIRST or all(w in _PRONOUNS or w.isdigit() for w in words):
        return []
    if len(words) == 1 and len(words[0]) < 3:
        return []
    return words


def _rstrip(words: list[str], drop: Callable[[str], bool]) -> list[str]:
    """``words`` without the trailing words that ``drop`` holds."""
    n = len(words)
    while n and drop(words[n - 1]):
        n -= 1
    return words[:n]


def split_coordination(words: list[str]) -> list[list[str]]:
    """Split a span at "and"/"or"; a risk-like measure distributes over the conjuncts.

    >>> split_coordination(["smoking", "and", "alcohol", "use"])
    [['smoking'], ['alcohol', 'use']]
    >>> split_coordination(["risk", "of", "stroke", "and", "dementia"])
    [['risk', 'of', 'stroke'], ['risk', 'of', 'dementia']]
    """
    parts = (g for sep, g in groupby(words, lambda w: w in ("and", "or", "and/or")) if not sep)
    stripped = [p for p in (list(dropwhile(_STRIP_LEADING.__contains__, g)) for g in parts) if p]
    if len(stripped) > 1 and "of" in stripped[0][1:] and stripped[0][0] in _DISTRIBUTIVE_HEADS:
        measure = stripped[0][: stripped[0].index("of") + 1]
        stripped = [stripped[0]] + [
            p if "of" in p or len(p) > 3 else measure + p for p in stripped[1:]
        ]
    return stripped


@dataclass(frozen=True)
class Span:
    """A normalised cause or effect phrase split into head (the measure) and modifier (entity).

    ``key`` fields are singularised lowercase words joined by spaces (matching keys); ``text`` is
    the lowercase surface phrase. ``np`` is the singularised noun phrase before "of" (the head is
    its last word, or a compound the corpus uses as a unit, see ``head_of``), ``obj`` the phrase
    after "of".
    """

    text: str
    key: str
    head: str
    modifier: str
    np: tuple[str, ...] = ()
    obj: str = ""


def head_of(span: Span, compounds: frozenset[str] | set[str] = frozenset()) -> tuple[str, str]:
    """(head, entity) of a span: the compound head when the corpus uses it as a unit.

    "risk of lung cancer" -> ("risk", "lung cancer"); "chronic kidney disease" -> ("kidney
    disease", "chronic") when "kidney disease" is a compound, else ("disease", "chronic kidney").

    >>> head_of(parse_span(["blood", "pressure"]), {"blood pressure"})
    ('blood pressure', '')
    >>> head_of(parse_span(["inflammation", "of", "the", "arterial", "wall"]))
    ('inflammation', 'arterial wall')
    """
    np_ = span.np or tuple(span.head.split())
    n = 1
    if len(np_) >= 2 and " ".join(np_[-2:]) in compounds:
        n = 2
        if len(np_) >= 3 and " ".join(np_[-3:]) in compounds:
            n = 3
    head = " ".join(np_[-n:])
    entity = span.obj or " ".join(np_[:-n])
    return head, entity


def parse_span(words: list[str]) -> Span | None:
    """Split a span into head and modifier: the head noun phrase is the part before "of".

    "risk of lung cancer" -> head "risk", modifier "lung cancer"; "lung cancer" -> head "cancer",
    modifier "lung" (English noun compounds are head-final). Compound heads ("blood pressure")
    are chosen later (``head_of``) from corpus statistics.

    >>> parse_span(["spread", "of", "lung", "cancers"]).modifier
    'lung cancer'
    >>> parse_span(["risk", "of", "stroke"]).key, parse_span(["stroke", "risk"]).key
    ('stroke', 'stroke')
    >>> s = parse_span(["chronic", "inflammation"]); (s.head, s.modifier, s.np)
    ('inflammation', 'chronic', ('chronic', 'inflammation'))
    """
    words = [w for w in (x.strip("-'") for x in words) if w]
    if not words:
        return None
    keys = [singular(w) for w in words]
    if "of" in keys[1:]:
        i = keys.index("of")
        np_keys, rest = keys[:i], [k for k in keys[i + 1 :] if k not in _STRIP_LEADING]
    else:
        np_keys, rest = keys, []
    np_keys = [k for k in np_keys if k != "of"]
    if len(np_keys) >= 2 and np_keys[-1] in _TRANSPARENT_HEADS and not rest:
        np_keys, words = np_keys[:-1], words[:-1]  # "stroke risk" -> stroke
    if len(np_keys) == 1 and np_keys[0] in _TRANSPARENT_HEADS and rest:
        # "levels of LDL cholesterol" names LDL cholesterol itself.
        np_keys, rest = rest, []
        words = list(dropwhile(_STRIP_LEADING.__contains__, words[words.index("of") + 1 :]))
    if not np_keys:
        return None
    head = np_keys[-1]
    modifier = " ".join([*np_keys[:-1], *rest])
    return Span(
        text=" ".join(words),
        key=" ".join(singular(w) for w in words),
        head=head,
        modifier=modifier,
        np=tuple(np_keys),
        obj=" ".join(rest),
    )


# ----------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Statement:
    """One causal statement: a cause span and an effect span linked by a cue in one sentence."""

    sentence: int
    cause: Span
    effect: Span
    cue: str
    strength: float
    # The cause is written as its removal ("controlling blood pressure prevents ..."): the cue's
    # sign is the removal's, the cause's own is the opposite (``sentence_effect``).
    cause_removed: bool = False


# Verbs that, opening a cause phrase, make it the removal of what follows: "controlling blood
# pressure prevents heart attacks" says that blood pressure raises them (a cause whose removal
# lowers the effect raises it); "quitting smoking lowers the risk" that smoking raises it.
# ("Increasing X" and "raising X" say X's own sign: they are not here.)
REMOVING_GERUNDS = word_set("""
    avoiding blocking controlling curbing cutting decreasing eliminating inhibiting lessening
    limiting lowering managing minimising minimizing preventing quitting reducing removing
    stopping suppressing treating
""")


def _written_as_removal(text: str, words: list[str], *, from_left: bool) -> bool:
    """Whether the cause phrase ``words`` (``clean_span`` of ``text``) opens with a removing verb,
    kept ("quitting smoking") or among the words ``clean_span`` stripped before it ("controlling
    high blood pressure" gives ``["blood", "pressure"]``).

    >>> _written_as_removal("controlling high blood pressure ", ["blood", "pressure"], from_left=True)
    True
    >>> _written_as_removal("increasing blood pressure ", ["blood", "pressure"], from_left=True)
    False
    """
    if not words:
        return False
    if words[0] in REMOVING_GERUNDS:
        return True
    tokens = _WORD_RE.findall(text.lower())
    n = len(words)
    starts = [i for i in range(len(tokens) - n + 1) if tokens[i : i + n] == words]
    if not starts:
        return False
    i = starts[-1] if from_left else starts[0]  # the phrase next to the cue
    stripped = tokens[len(_rstrip(tokens[:i], _STRIP_LEADING.__contains__)) : i]
    return any(t in REMOVING_GERUNDS for t in stripped)


def _negated(before: str) -> bool:
    tail = before.lower().split()[-3:]
    return any(w in _NEGATIONS or w.endswith("n't") for w in tail)


def _cue_hits(low: str) -> list[tuple[int, int, Cue]]:
    """The cues of a lowercased sentence, in order: ``(start, end, cue)``, the first pattern
    (``CUES`` order) to claim a character keeps it, and verb forms read as nouns dropped."""
    hits: list[tuple[int, int, Cue]] = []
    taken = [False] * (len(low) + 1)
    for cue, rx in _CUE_RES:
        for m in rx.finditer(low):
            if not any(taken[m.start() : m.end()]):
                hits.append((m.start(), m.end(), cue))
                taken[m.start() : m.end()] = [True] * (m.end() - m.start())
    hits.sort(key=lambda h: h[0])
    # A verb form directly before another cue is a noun heading the subject ("kidney damage is
    # caused by", "damage leads to"), and so is one after a determiner ("the damage to the
    # kidneys"): drop it so the real cue keeps its subject.
    return [
        (a, b, cue)
        for n, (a, b, cue) in enumerate(hits)
        if not (
            cue.forward
            and not cue.initial
            and n + 1 < len(hits)
            and not set(low[b : hits[n + 1][0]].split()) - _STRIP_TRAILING
        )
        and not (cue.forward and cue.word and set(low[:a].split()[-1:]) & _NOUN_BEFORE)
    ]


def extract_statements(sentence: str, index: int = 0) -> list[Statement]:
    """Every cue-backed (cause, effect) pair of one sentence; empty when it states none.

    Coordinated spans multiply ("smoking and obesity raise blood pressure" gives two pairs). A
    pronoun cause ("which leads to ...") is resolved to the previous effect in the same sentence.
    Negated cues ("does not cause") are skipped.

    >>> [(s.cause.text, s.cue, s.effect.text) for s in extract_statements(
    ...     "Smoking and obesity can increase blood pressure, which leads to stroke.")]
    [('smoking', 'increase', 'blood pressure'), ('obesity', 'increase', 'blood pressure'), ('blood pressure', 'lead_to', 'stroke')]
    """
    if len(sentence) > MAX_SENTENCE_CHARS:
        return []
    low = sentence.lower().replace("\u2019", "'").replace("'s ", " ")
    hits = _cue_hits(low)
    out: list[Statement] = []
    last_effects: list[Span] = []
    last_causes: list[Span] = []
    last_removed = False
    for n, (start, end, cue) in enumerate(hits):
        # Spans may not run across the neighbouring cue.
        left_limit = hits[n - 1][1] if n > 0 else 0
        right_limit = hits[n + 1][0] if n + 1 < len(hits) else len(low)
        before, after = low[left_limit:start], low[end:right_limit]
        if right_limit < len(low):
            # ", and X causes ...": X is the next cue's subject, not part of this effect.
            after = re.sub(r",\s*(?:and|or|while|but)\b.*$", "", after)
        if _negated(low[max(0, start - 30) : start] + " " + low[start:end]):
            continue
        if cue.forward and not cue.initial and before.rstrip().endswith(" to"):
            continue  # a purpose clause ("the goal is to treat X") has no stated cause
        if cue.initial:
            if "," not in after:
                continue
            (cause_txt, effect_txt), cause_left, effect_left = after.split(",", 1), False, False
        else:
            cause_txt, effect_txt = (before, after) if cue.forward else (after, before)
            cause_left, effect_left = cue.forward, not cue.forward
        cause_words = clean_span(cause_txt, from_left=cause_left)
        effect_words = clean_span(effect_txt, from_left=effect_left)
        causes = [p for w in split_coordination(cause_words) if (p := parse_span(w))]
        effects = [p for w in split_coordination(effect_words) if (p := parse_span(w))]
        # Every cause of "controlling X and Y ..." is written as its removal.
        removed = _written_as_removal(cause_txt, cause_words, from_left=cause_left)
        last_word = before.split()[-1:]
        mid = cue.forward and not cue.initial  # a verb between its subject and its object
        if mid and last_word in (["and"], ["or"]) and n > 0:
            # A coordinated verb ("statins reduce X and lower Y") shares the previous subject.
            causes, removed = last_causes, last_removed
        elif mid and not causes and last_word in (["which"], ["this"], ["that"]):
            causes, removed = last_effects, False  # "X raises Y, which leads to Z": the event Y
        elif mid and not causes and last_word in (["it"], ["they"]):
            causes, removed = last_causes, last_removed  # "X causes Y, and it reduces Z": X
        last_causes, last_removed = causes, removed
        for c in causes:
            for e in effects:
                if c.key != e.key:
                    out.append(Statement(index, c, e, cue.name, cue.strength, removed))
        if effects:
            last_effects = effects
    return out


# The sign a cue gives its effect: "increases" (more of the cause, more of the effect: "causes",
# "raises", "leads to", "is due to"), "decreases" ("reduces", "prevents", "protects against",
# "treats"), or none where the verb does not say ("affects", "improves": improving a symptom
# lowers it, improving a skill raises it).
# Every other cue but "caused_by" (``statement_effect``) increases.
_DECREASING_CUES = word_set("protect interfere decrease prevent inhibit damage treat")
_UNSIGNED_CUES = word_set("improve affect")
# "is caused by" holds passive verbs of both signs; the verb before "by" says which.
_PASSIVE_DECREASE_RE = re.compile(
    r"\b(?:decreased|reduced|lowered|prevented|inhibited|suppressed|blocked|damaged|destroyed|"
    rf"killed|treated|controlled|relieved) {_BY}\b"
)
_PASSIVE_UNSIGNED_RE = re.compile(rf"\b(?:affected|influenced|determined|improved) {_BY}\b")


_OPPOSITE = {"increases": "decreases", "decreases": "increases", "": ""}


def statement_effect(st: Statement, low: str) -> str:
    """The sign of one statement of the lowercased sentence ``low``: its cue's, turned over when
    its cause is written as its removal (``Statement.cause_removed``)."""
    if st.cue == "caused_by":
        unsigned, decreasing = _PASSIVE_UNSIGNED_RE.search(low), _PASSIVE_DECREASE_RE.search(low)
    else:
        unsigned, decreasing = st.cue in _UNSIGNED_CUES, st.cue in _DECREASING_CUES
    sign = "" if unsigned else "decreases" if decreasing else "increases"
    return _OPPOSITE[sign] if st.cause_removed else sign


def sentence_effect(sentence: str) -> str:
    """The sign the causal statements of ``sentence`` give: "increases", "decreases" or "".

    An edge's sign is its mechanism sentence's: "" when the sentence's statements disagree or a
    cue has no sign. A cause written as its removal ("controlling X", "quitting X",
    ``REMOVING_GERUNDS``) turns the cue's sign over: controlling X prevents Y says X raises Y.

    >>> sentence_effect("Smoking causes atherosclerosis.")
    'increases'
    >>> sentence_effect("Statins lower LDL cholesterol."), sentence_effect("Pain is relieved by rest.")
    ('decreases', 'decreases')
    >>> sentence_effect("Stress affects sleep."), sentence_effect("No cue here.")
    ('', '')
    >>> sentence_effect("Controlling blood pressure and cholesterol prevents heart attacks.")
    'increases'
    """
    low = sentence.lower()
    signs = {statement_effect(st, low) for st in extract_statements(sentence)}
    return signs.pop() if len(signs) == 1 else ""


# Share of a head word's corpus occurrences that a compound needs to be a unit ("blood pressure").
COMPOUND_SHARE = 0.5
COMPOUND_MIN_COUNT = 2


def compound_heads(
    sentences: Iterable[str],
    statements: Iterable[Statement],
    *,
    share: float = COMPOUND_SHARE,
    min_count: int = COMPOUND_MIN_COUNT,
) -> frozenset[str]:
    """Two-word noun phrases the corpus uses as one unit: "blood pressure", "heart failure".

    A span's final word pair "A B" is a unit when it occurs at least ``min_count`` times in the
    sentences and makes up at least ``share`` of all occurrences of B (so "lung cancer" stays
    Cancer(lung) in a corpus about many cancers, while "blood pressure" is its own measure).

    >>> sents = ["High blood pressure is common.", "Blood pressure rises.", "Blood pressure falls.",
    ...          "Lung cancer spreads.", "Skin cancer spreads.", "Cancer kills."]
    >>> sts = extract_statements("Smoking raises blood pressure and causes lung cancer.")
    >>> sorted(compound_heads(sents, sts, min_count=1))
    ['blood pressure']
    """
    ends = (sp.np[-2:] for st in statements for sp in (st.cause, st.effect) if len(sp.np) >= 2)
    cands = {(a, b) for a, b in ends if a.isalpha() and len(a) >= 3 and a not in _FUNCTION_WORDS}
    if not cands:
        return frozenset()
    firsts = {a for a, _ in cands}
    seconds = {b for _, b in cands}
    uni: Counter = Counter()
    bi: Counter = Counter()
    for s in sentences:
        prev = ""
        for w in _WORD_RE.findall(s.lower()):
            k = singular(w)
            if k in seconds:
                uni[k] += 1
                if prev in firsts:
                    bi[(prev, k)] += 1
            prev = k
    return frozenset(
        f"{a} {b}" for a, b in cands if bi[(a, b)] >= min_count and bi[(a, b)] >= share * uni[b]
    )
