"""LLM-free causal statement extraction: sentences -> (cause span, cue, effect span) by cue patterns.

Pure functions over text. Every extraction is tied to one sentence that states the causal link
with an explicit cue ("X causes Y", "Y is caused by X", "because of X, Y", ...), so the offline
graph stays a causal graph, never a co-occurrence graph. Spans are then normalised (determiners,
hedges and quantifiers stripped, crude singularisation) and split into a head ("risk",
"blood pressure") and an entity modifier ("lung cancer") by ``parse_span``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# ----------------------------------------------------------------------------- sentences

_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c(\[]?[A-Z0-9])|\n\s*\n")
MAX_SENTENCE_CHARS = 600


def split_sentences(text: str) -> list[str]:
    """Split text at sentence ends (., !, ? before a capital or digit) and blank lines.

    >>> split_sentences("Smoking causes cancer. It also raises risk!  Next line")
    ['Smoking causes cancer.', 'It also raises risk!', 'Next line']
    """
    out = []
    for part in _SENT_SPLIT_RE.split(text):
        part = " ".join(part.split())
        if part:
            out.append(part)
    return out


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


_AUX = r"(?:(?:is|are|was|were|be|been|being|can be|may be|is often|are often|is usually|are usually|is mainly|are mainly|is mostly|are mostly|is largely|are largely|is partly|are partly|is sometimes|are sometimes|is commonly|are commonly) )"
# Verbs whose -ed form is also an adjective ("increased risk") are matched only in base and -s
# forms when forward; their passive ("is increased by") is matched separately.
_FORWARD_VERBS: tuple[tuple[str, str, float], ...] = (
    ("cause", r"caus(?:e|es|ed|ing)", 0.95),
    ("lead_to", r"(?:lead|leads|led|leading) to", 0.9),
    ("result_in", r"(?:result|results|resulted|resulting) in", 0.9),
    ("trigger", r"trigger(?:s|ed)?", 0.85),
    ("induce", r"induc(?:e|es)", 0.85),
    ("contribute_to", r"contribut(?:e|es|ed|ing) to", 0.75),
    ("responsible_for", r"(?:is|are|was|were) (?:largely |partly |mainly )?responsible for", 0.8),
    ("risk_factor", r"(?:is|are) (?:a |an )?(?:major |main |known |important |strong )?risk factors? (?:for|of)", 0.85),
    ("cause_of", r"(?:is|are|was|were) (?:a |an |the |one of the )?(?:main |major |leading |common |most common |primary |usual )?causes? of", 0.9),
    ("increase", r"(?:increase|increases|raise|raises|elevate|elevates|boost|boosts|heighten|heightens)", 0.75),
    ("decrease", r"(?:decrease|decreases|reduce|reduces|lower|lowers|diminish|diminishes|lessen|lessens)", 0.75),
    ("prevent", r"(?:prevent|prevents|prevented)", 0.8),
    ("inhibit", r"(?:inhibit|inhibits|suppress|suppresses|block|blocks)", 0.75),
    ("promote", r"(?:promote|promotes|stimulate|stimulates|enhance|enhances|accelerate|accelerates)", 0.7),
    ("worsen", r"(?:worsen|worsens|aggravate|aggravates|exacerbate|exacerbates)", 0.75),
    ("improve", r"(?:improve|improves|relieve|relieves|alleviate|alleviates|ease|eases)", 0.65),
    ("damage", r"(?:damage|damages|destroy|destroys|kill|kills|shrink|shrinks|slow|slows|stop|stops)", 0.65),
    ("produce", r"(?:produce|produces|generate|generates|create|creates)", 0.55),
    ("treat", r"(?:treats|cure|cures|control|controls|manage|manages)", 0.55),
    ("affect", r"(?:affect|affects|influence|influences|determine|determines|drive|drives)", 0.5),
)
# Modals, hedges and "helps"/"is used to" that may sit between a subject and its causal verb.
_PREFIX = (
    r"(?:can|may|might|could|will|would|often|also|usually|commonly|sometimes|frequently|"
    r"generally|typically|directly|eventually|ultimately|further|significantly|greatly|"
    r"helps?(?: to)?|helped|(?:is|are|can be|may be|will be|be) (?:used|given|designed|meant) to|"
    r"used to|works? to|tends? to|seems? to|appears? to|is known to|are known to|is thought to|"
    r"are thought to|is likely to|are likely to)"
)
_PASSIVE_VERBS = (
    r"caused|triggered|induced|produced|driven|increased|decreased|reduced|raised|lowered|"
    r"prevented|inhibited|suppressed|blocked|promoted|stimulated|worsened|improved|relieved|"
    r"damaged|destroyed|killed|affected|influenced|determined|treated|controlled"
)

CUES: tuple[Cue, ...] = (
    # Sentence-initial cues first: they claim "due to"/"because" before the mid-sentence forms.
    Cue("initial_because_of", r"(?:because of|due to|as a result of|owing to)", True, 0.8, initial=True),
    Cue("initial_because", r"(?:because|since)", True, 0.65, initial=True),
    Cue("caused_by", rf"{_AUX}?(?:{_PASSIVE_VERBS}) (?:mainly |mostly |largely |partly |primarily )?by", False, 0.85),
    Cue("result_from", r"(?:result|results|resulted|resulting|stem|stems|arise|arises|arising) from", False, 0.85),
    Cue("due_to", r"(?:(?:is|are|was|were|may be|can be) )?(?:mainly |mostly |largely |partly |often |usually )?(?:due to|because of|owing to|attributable to)", False, 0.8),
    Cue("because", r"because", False, 0.7),
    # Forward verbs last: "caused" must not claim the "caused by" of a passive.
    *(Cue(n, rf"(?:{_PREFIX} )*{p}", True, s)
      for n, p, s in _FORWARD_VERBS),
)
_CUE_RES = tuple(
    (c, re.compile(r"^" + c.pattern + r"\b" if c.initial else r"\b" + c.pattern + r"\b"))
    for c in CUES
)

# ----------------------------------------------------------------------------- spans

MAX_SPAN_WORDS = 6
_NEGATIONS = frozenset({"not", "no", "never", "cannot", "can't", "don't", "doesn't", "didn't",
                        "won't", "isn't", "aren't", "neither", "nor", "without", "unlikely"})
# Words that end a span: clause openers and prepositions that start a qualifier ("in older adults").
_BOUNDARY_WORDS = frozenset(
    ["which", "that", "what", "how", "why", "who", "whom", "whose", "when", "whenever", "while", "where", "if", "unless", "because", "since", "although", "though", "whereas", "but", "so", "than", "as", "by", "through", "via", "in", "into", "among", "during", "after", "before", "within", "for", "from", "with", "without", "until", "like", "such", "including", "especially", "e.g", "i.e", "than", "then", "therefore", "thus", "however", "also", "is", "are", "was", "were", "be", "been", "has", "have", "had", "do", "does", "did", "can", "may", "might", "could", "will", "would", "should", "must"]
)
# Before a cue the same words bound the subject; trailing modals are stripped first ("X can").
_LEFT_BOUNDARY_WORDS = _BOUNDARY_WORDS | {"to", "used", "help", "helps", "goal", "aim", "purpose"}
# Leading words dropped from a span: determiners, quantifiers, hedges, intensities of change.
_STRIP_LEADING = frozenset(
    ["the", "a", "an", "this", "that", "these", "those", "some", "many", "most", "much", "more", "less", "few", "several", "certain", "such", "other", "another", "any", "all", "both", "each", "every", "its", "their", "his", "her", "our", "your", "my", "high", "higher", "highest", "low", "lower", "lowest", "increased", "decreased", "reduced", "elevated", "excessive", "significant", "significantly", "severe", "serious", "major", "minor", "greater", "smaller", "large", "larger", "small", "overall", "possible", "potential", "likely", "various", "different", "specific", "particular", "common", "rare", "new", "further", "additional", "main", "known", "also", "only", "even", "just", "very", "often", "usually", "sometimes", "already", "too", "not", "no", "and", "or", "of", "to"]
)
_STRIP_TRAILING = frozenset(
    ["can", "may", "might", "could", "will", "would", "should", "must", "is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "do", "does", "did", "also", "often", "usually", "sometimes", "commonly", "frequently", "generally", "typically", "directly", "eventually", "ultimately", "further", "significantly", "greatly", "which", "that", "who", "and", "or", "of", "to", "the", "a", "an", "it", "them", "this"]
)
_PRONOUNS = frozenset(
    ["it", "its", "this", "that", "these", "those", "they", "them", "he", "she", "him", "her", "we", "you", "i", "one", "which", "what", "who", "both", "either", "each", "something", "anything", "everything", "someone", "anyone", "people", "person", "thing", "things"]
)
# A span opening with one of these is a question, an adverbial or a quantity, not a quantity's name.
_REJECT_FIRST = frozenset(
    ["how", "what", "why", "where", "when", "whether", "once", "almost", "nearly", "everyone", "everything", "anyone", "anything", "someone", "something", "you", "we", "i", "he", "she", "they", "it", "there", "here", "yes", "about", "around", "approximately"]
)
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9\-']*")
_SPLIT_CLAUSE_RE = re.compile(r"[,;:()\[\]\"\u201c\u201d]|\s-\s|\s\u2013\s|\s\u2014\s")


def singular(word: str) -> str:
    """Crude English singular used only for matching keys (never shown to users).

    >>> [singular(w) for w in ["cells", "therapies", "glasses", "virus", "diagnosis", "risk"]]
    ['cell', 'therapy', 'glass', 'virus', 'diagnosis', 'risk']
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "os", "as")):
        return word[:-1]
    return word


def clean_span(text: str, *, from_left: bool) -> list[str]:
    """Words of the clause next to a cue: cut at clause punctuation/boundary words, cap, strip.

    ``from_left``: the span precedes the cue, so it is read backwards from the cue.

    >>> clean_span("in many patients, the chronic smoking", from_left=True)
    ['chronic', 'smoking']
    >>> clean_span("the risk of lung cancer in older adults", from_left=False)
    ['risk', 'of', 'lung', 'cancer']
    """
    parts = _SPLIT_CLAUSE_RE.split(text)
    clause = parts[-1] if from_left else parts[0]
    words = _WORD_RE.findall(clause.lower())
    boundary = _LEFT_BOUNDARY_WORDS if from_left else _BOUNDARY_WORDS
    if from_left:
        cut = len(words)
        while cut > 0 and words[cut - 1] in _STRIP_TRAILING:
            cut -= 1
        words = words[:cut]
        i = len(words)
        while i > 0 and words[i - 1] not in boundary:
            i -= 1
        words = words[i:][-MAX_SPAN_WORDS:]
    else:
        i = 0
        while i < len(words) and words[i] not in boundary:
            i += 1
        words = words[:i][:MAX_SPAN_WORDS]
    while words and words[0] in _STRIP_LEADING:
        words = words[1:]
    while words and words[-1] in _STRIP_TRAILING:
        words = words[:-1]
    if not words or words[0] in _REJECT_FIRST or all(w in _PRONOUNS or w.isdigit() for w in words):
        return []
    if len(words) == 1 and len(words[0]) < 3:
        return []
    return words


def split_coordination(words: list[str]) -> list[list[str]]:
    """Split a span at "and"/"or": "smoking and obesity" -> [smoking], [obesity].

    >>> split_coordination(["smoking", "and", "heavy", "drinking"])
    [['smoking'], ['heavy', 'drinking']]
    """
    out: list[list[str]] = []
    cur: list[str] = []
    for w in words:
        if w in ("and", "or", "and/or"):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(w)
    if cur:
        out.append(cur)
    stripped = []
    for p in out:
        while p and p[0] in _STRIP_LEADING:
            p = p[1:]
        if p:
            stripped.append(p)
    return stripped


@dataclass(frozen=True)
class Span:
    """A normalised cause or effect phrase split into head (the measure) and modifier (entity).

    ``key`` fields are singularised lowercase words joined by spaces (matching keys); ``text`` is
    the lowercase surface phrase.
    """

    text: str
    key: str
    head: str
    modifier: str


def parse_span(words: list[str]) -> Span | None:
    """Split a span into head and modifier: the head noun phrase is the part before "of".

    "risk of lung cancer" -> head "risk", modifier "lung cancer"; "lung cancer" -> head "cancer",
    modifier "lung" (English noun compounds are head-final). Two-word heads are chosen later
    (``offline``) from corpus statistics.

    >>> parse_span(["risk", "of", "lung", "cancers"])
    Span(text='risk of lung cancers', key='risk of lung cancer', head='risk', modifier='lung cancer')
    >>> parse_span(["chronic", "inflammation"])
    Span(text='chronic inflammation', key='chronic inflammation', head='inflammation', modifier='chronic')
    """
    words = [w.strip("-'") for w in words]
    words = [w for w in words if w]
    if not words:
        return None
    keys = [singular(w) for w in words]
    if "of" in keys[1:]:
        i = keys.index("of")
        np_keys, rest = keys[:i], [k for k in keys[i + 1:] if k not in _STRIP_LEADING]
    else:
        np_keys, rest = keys, []
    np_keys = [k for k in np_keys if k != "of"]
    if not np_keys:
        return None
    head = np_keys[-1]
    modifier = " ".join([*np_keys[:-1], *rest])
    return Span(text=" ".join(words), key=" ".join(keys),
                head=head, modifier=modifier)


# ----------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Statement:
    """One causal statement: a cause span and an effect span linked by a cue in one sentence."""

    sentence: int
    cause: Span
    effect: Span
    cue: str
    strength: float


def _negated(before: str) -> bool:
    tail = before.lower().split()[-3:]
    return any(w in _NEGATIONS or w.endswith("n't") for w in tail)


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
    hits: list[tuple[int, int, Cue]] = []
    taken = [False] * (len(low) + 1)
    for cue, rx in _CUE_RES:
        for m in rx.finditer(low):
            if any(taken[m.start():m.end()]):
                continue
            hits.append((m.start(), m.end(), cue))
            for k in range(m.start(), m.end()):
                taken[k] = True
    hits.sort(key=lambda h: h[0])
    # A verb form directly before another cue is a noun heading the subject ("kidney damage is
    # caused by", "damage leads to"): drop it so the real cue keeps its subject.
    hits = [h for n, h in enumerate(hits)
            if not (h[2].forward and not h[2].initial and n + 1 < len(hits)
                    and not set(low[h[1]:hits[n + 1][0]].split()) - _STRIP_TRAILING)]
    out: list[Statement] = []
    last_effects: list[Span] = []
    last_causes: list[Span] = []
    for n, (start, end, cue) in enumerate(hits):
        # Spans may not run across the neighbouring cue.
        left_limit = hits[n - 1][1] if n > 0 else 0
        right_limit = hits[n + 1][0] if n + 1 < len(hits) else len(low)
        before, after = low[left_limit:start], low[end:right_limit]
        if _negated(low[max(0, start - 30):start] + " " + low[start:end]):
            continue
        if cue.forward and not cue.initial and before.rstrip().endswith(" to"):
            continue  # a purpose clause ("the goal is to treat X") has no stated cause
        if cue.initial:
            if "," not in after:
                continue
            cause_txt, effect_txt = after.split(",", 1)
            cause_words = clean_span(cause_txt, from_left=False)
            effect_words = clean_span(effect_txt, from_left=False)
        else:
            left = clean_span(before, from_left=True)
            right = clean_span(after, from_left=False)
            cause_words, effect_words = (left, right) if cue.forward else (right, left)
        causes = [p for w in split_coordination(cause_words) if (p := parse_span(w))]
        effects = [p for w in split_coordination(effect_words) if (p := parse_span(w))]
        stripped = before.strip().split()
        if cue.forward and not cue.initial and stripped and stripped[-1] in ("and", "or") \
                and n > 0:
            # A coordinated verb ("statins reduce X and lower Y") shares the previous subject.
            causes = last_causes
        elif not causes and cue.forward and not cue.initial and stripped and (
                stripped[-1] in ("which", "this", "that", "it")):
            causes = last_effects
        last_causes = causes
        for c in causes:
            for e in effects:
                if c.key != e.key:
                    out.append(Statement(index, c, e, cue.name, cue.strength))
        if effects:
            last_effects = effects
    return out


def extract_all(sentences: Iterable[str]) -> list[Statement]:
    """``extract_statements`` over many sentences, indexed by position."""
    out: list[Statement] = []
    for i, s in enumerate(sentences):
        out.extend(extract_statements(s, i))
    return out
