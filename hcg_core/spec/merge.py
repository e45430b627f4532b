"""Stage 1's merge by meaning: one metric per quantity, one dimension per axis, one entity per thing.

Every batch of Stage 1 proposes its own vocabulary, so the union holds near-duplicates that no
prompt can prevent (``CureProbability`` / ``CureLikelihood``, ``body_site`` / ``anatomic_site``,
``bone`` / ``bones``). This module decides, as pure functions, which proposals are one:

- **Metrics** measure the same quantity of the same thing when their names, as words (singular,
  measurement synonyms such as probability / likelihood / chance read as one word), say the same
  with at most extra qualifiers on the same head (``CancerRisk`` / ``CancerDevelopmentRisk``), or
  when one's definition (its description's first sentence) names the other's quantity
  (``TreatmentToxicity``: "the severity of harmful side effects of cancer treatment"), and their
  definitions agree (embedding cosine >= ``DEFINITION_AGREEMENT``). Two names that put different
  qualifiers on one head are two kinds of it and stay apart (``ClinicalStage`` /
  ``PathologicStage``), and so do different quantities of one thing (``CancerRisk``, a person's
  probability, / ``CancerIncidence``, a population's rate).
- **Dimensions** are one axis when their names say the same (``treatment`` / ``treatment_type``)
  or their entities overlap (half the smaller list).
- **Entities** are one thing when they are the same words up to case, plural, hyphens and a
  trailing abbreviation (``red blood cells (RBCs)``), or when a batch's text names one as the other
  (``basal cell carcinoma (BCC)``, ``X, also called Y``). An entity whose words are a qualifier
  plus another entity (``metastatic breast cancer``, ``B-ALL``) names a stage or subtype of it and
  is linked to that parent, not kept as an unrelated thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..graph_build.evidence import is_acronym
from ..graph_build.extract import singular

# Cosine (MiniLM) of two definitions for two related names to be one metric. On the recorded
# Stage 1 lists of the medical corpus (benchmarks/llm_merge.py), 0.6 also merged BloodCellCounts
# into RedBloodCellCount (0.62); every merge at 0.65 and above names one quantity.
DEFINITION_AGREEMENT = 0.65
# Share of the smaller entity list two dimensions must share to be one axis. Each batch lists the
# entities its own excerpts name, so two lists of one axis overlap only partly: on the recorded
# medical Stage 1 replies body_site / anatomic_site share 15 of 31 (0.48), body_site / organ 7 of
# 12; lists of different axes at most 0.30 (cell_type / blood_cell_type).
DIMENSION_ENTITY_OVERLAP = 0.4
MIN_SHARED_ENTITIES = 2
# Words that measure the same thing in other words; each group reads as its first word. Generic
# measurement vocabulary, not a domain's: a risk is a probability, an incidence is a rate.
QUANTITY_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("probability", "likelihood", "chance", "odds", "risk"),
    ("rate", "incidence", "frequency"),
    ("severity", "burden", "extent", "degree", "intensity"),
    ("level", "amount", "concentration", "quantity"),
    ("count", "number"),
    ("effectiveness", "efficacy"),
    ("use", "usage", "uptake", "utilization", "utilisation"),
    ("damage", "injury", "harm"),
)
_SYNONYM = {w: group[0] for group in QUANTITY_SYNONYMS for w in group}
_IMPLICIT = frozenset({"level", "severity"})  # groups a name may end with or leave out
# A last word that names the act of examining, not what is examined: "CT" and "CT scan", "genetic
# test" and "genetic testing" are one entity of their dimension.
GENERIC_TAILS = frozenset(
    {"test", "tests", "testing", "scan", "scans", "scanning", "exam", "exams"}
)
# Words that name an axis without saying which: ``treatment_type`` is the treatment axis.
AXIS_FILLERS = frozenset({"type", "kind", "category", "class", "group"})
_STOP_WORDS = (
    "a an the of in on at to for by with from and or as is are be that which who whom whose its "
    "it this these those such e g i ie eg how what when whether"
)
_STOP = frozenset(_STOP_WORDS.split())
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_WORD = re.compile(r"[a-z0-9]+")
# A sentence end, not the dot of "e.g." or "i.e." before a capital ("(e.g. Mohs surgery)").
_SENTENCE = re.compile(r"(?<=[.!?;])(?<!\be\.g\.)(?<!\bi\.e\.)\s+(?=[A-Z(\"'])")
_MEASURES = re.compile(r"^(?:the |a |an )?([a-z]+) of ([^,;.()]+)", re.I)
_NEGATING = frozenset({"non", "not", "no", "without", "anti"})
_ABBREVIATION = re.compile(r"^(?P<long>.+?)\s*\((?P<short>[A-Za-z][A-Za-z0-9-]{1,11})\)$")


def _word(w: str) -> str:
    w = singular(w.lower())
    return _SYNONYM.get(w, w)


def name_words(name: str) -> tuple[str, ...]:
    """A metric or dimension name as normalised words: lower case, singular, synonyms as one.

    >>> name_words("CureLikelihood"), name_words("TreatmentSideEffects"), name_words("body_site")
    (('cure', 'probability'), ('treatment', 'side', 'effect'), ('body', 'site'))
    """
    return tuple(_word(w) for w in _CAMEL.findall(name.replace("_", " ")) if w)


def definition(description: str) -> str:
    """The description's first sentence: what the metric is (the rest says what drives it).

    >>> definition("Chance of cure (e.g. at stage 1). Driven by stage.")
    'Chance of cure (e.g. at stage 1).'
    >>> definition("Whether a treatment (e.g. Mohs surgery) is given. Driven by stage.")
    'Whether a treatment (e.g. Mohs surgery) is given.'
    """
    return _SENTENCE.split((description or "").strip(), maxsplit=1)[0]


def text_words(text: str) -> frozenset[str]:
    """Content words of a text, normalised like names.

    >>> sorted(text_words("The risks of bones"))
    ['bone', 'probability']
    """
    return frozenset(_word(w) for w in _WORD.findall(text.lower()) if w not in _STOP)


def measured_thing(definition_text: str) -> frozenset[str]:
    """What a definition of the form "[the] <severity | level word> of <thing>" measures: the
    thing itself (its words up to the first comma); empty when the definition does not open that
    way, or opens with another quantity ("the chance of ...").

    >>> sorted(measured_thing("The severity of harmful side effects of treatment, mostly nausea."))
    ['effect', 'harmful', 'side', 'treatment']
    >>> measured_thing("Rate at which a cancer occurs.")
    frozenset()
    """
    m = _MEASURES.match(definition_text.strip())
    if not m or _word(m.group(1)) not in _IMPLICIT:
        return frozenset()  # "the chance of side effects" is another quantity than side effects
    return text_words(m.group(2))


def related_names(a: Sequence[str], b: Sequence[str], a_measures: frozenset[str]) -> bool:
    """Whether metric names ``a`` and ``b`` (``name_words``) may be one quantity, from the names
    and ``a``'s definition words alone; the definitions must still agree.

    Same words; or one head with the other's qualifiers plus more (a more specific name for the
    same quantity); or ``a``'s definition says it measures ``b`` ("the severity of the side
    effects of treatment", ``measured_thing``; ``b`` of two words at least). Never two names that
    put different qualifiers on one head.

    >>> related_names(name_words("CancerRisk"), name_words("CancerDevelopmentRisk"), frozenset())
    True
    >>> related_names(name_words("ClinicalStage"), name_words("PathologicStage"), frozenset())
    False
    >>> related_names(name_words("CancerRisk"), name_words("CancerIncidence"), frozenset())
    False
    """
    a, b = _core(a), _core(b)
    if not a or not b or two_kinds(a, b):
        return False
    if set(a) == set(b) or a[-1] == b[-1]:
        return True
    return len(set(b)) >= 2 and set(b) <= a_measures


def two_kinds(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two names put different qualifiers on one head: two kinds of one quantity
    (clinical / pathologic stage), never merged.

    >>> two_kinds(name_words("ClinicalStage"), name_words("PathologicStage"))
    True
    >>> two_kinds(name_words("CancerRisk"), name_words("CancerDevelopmentRisk"))
    False
    """
    a, b = _core(a), _core(b)
    return bool(a and b and a[-1] == b[-1] and set(a) - set(b) and set(b) - set(a))


def _core(words: Sequence[str]) -> tuple[str, ...]:
    # A trailing "level" or "extent" (amount, severity, burden...) says nothing the rest does not:
    # LDLCholesterol is LDLCholesterolLevel, CancerSpread is CancerSpreadExtent.
    words = tuple(words)
    return words[:-1] if len(words) > 1 and words[-1] in _IMPLICIT else words


def unit_rows(m: np.ndarray) -> np.ndarray:
    """The rows of ``m`` scaled to unit length (a zero row stays zero)."""
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class MetricDraft:
    """A proposed metric as the merge sees it: its name and its description."""

    name: str
    description: str = ""


def metric_groups(
    drafts: Sequence[MetricDraft],
    embed: Callable[[list[str]], np.ndarray],
    votes: Mapping[str, int],
    *,
    agreement: float = DEFINITION_AGREEMENT,
) -> dict[str, str]:
    """name -> the canonical name of its group (the most-voted member; ties: first proposed).

    Candidate pairs come from ``related_names`` (either direction); a pair joins when its
    definitions agree (cosine of ``embed``'s unit vectors >= ``agreement``), strongest first, and
    never when the join would put two names that ``related_names`` keeps apart in one group.
    """
    names = [d.name for d in drafts]
    if len(names) < 2:
        return {n: n for n in names}
    words = [name_words(n) for n in names]
    defs = [definition(d.description) or " ".join(w) for d, w in zip(drafts, words, strict=True)]
    measures = [measured_thing(t) for t in defs]
    vectors = unit_rows(np.asarray(embed(defs), dtype=np.float32))
    sims = vectors @ vectors.T
    pairs = []
    apart: set[tuple[int, int]] = set()
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            wi, wj = words[i], words[j]
            if two_kinds(wi, wj):
                apart.add((i, j))
            elif sims[i, j] >= agreement and (
                related_names(wi, wj, measures[i]) or related_names(wj, wi, measures[j])
            ):
                pairs.append((-float(sims[i, j]), i, j))
    groups = _joined(len(names), [(i, j) for _, i, j in sorted(pairs)], apart)
    return _named_by_votes(names, groups, votes)


def _joined(
    n: int, pairs: Iterable[tuple[int, int]], apart: Container[tuple[int, int]] = ()
) -> list[set[int]]:
    """The groups of ``range(n)`` that joining ``pairs`` in order makes; a pair is skipped when
    its join would put two members of a pair in ``apart`` (``(i, j)``, ``i < j``) in one group."""
    members: dict[int, set[int]] = {i: {i} for i in range(n)}
    group = list(range(n))
    for i, j in pairs:
        gi, gj = group[i], group[j]
        if gi == gj:
            continue
        if any((min(x, y), max(x, y)) in apart for x in members[gi] for y in members[gj]):
            continue
        members[gi] |= members.pop(gj)
        for k in members[gi]:
            group[k] = gi
    return list(members.values())


def _named_by_votes(
    names: Sequence[str], groups: Iterable[Iterable[int]], votes: Mapping[str, int]
) -> dict[str, str]:
    """name -> the name of its group's most-voted member (ties: the first given)."""
    out: dict[str, str] = {}
    for ids in groups:
        ids = list(ids)
        best = min(ids, key=lambda k: (-votes.get(names[k], 0), k))
        for k in ids:
            out[names[k]] = names[best]
    return out


# -- dimensions -----------------------------------------------------------------------------------


def axis_words(name: str) -> frozenset[str]:
    """A dimension name's words without the fillers that do not say which axis.

    >>> sorted(axis_words("treatment_type")), sorted(axis_words("risk_group"))
    (['treatment'], ['risk'])
    """
    plain = frozenset(singular(w.lower()) for w in _CAMEL.findall(name.replace("_", " ")))
    return (plain - AXIS_FILLERS) or plain


def dimension_groups(
    entities: Mapping[str, Sequence[str]], votes: Mapping[str, int]
) -> dict[str, str]:
    """dimension -> the canonical dimension of its axis (most voted; ties: first given).

    Two dimensions are one axis when their names say the same (``axis_words``) or they share
    ``MIN_SHARED_ENTITIES`` entities that are at least ``DIMENSION_ENTITY_OVERLAP`` of the smaller
    list (entities compared by ``entity_key``); joined transitively.

    >>> dimension_groups({"body_site": ["lung", "bone", "liver"], "organ": ["lungs", "bones"],
    ...                   "treatment": ["surgery"], "treatment_type": ["chemotherapy"]}, {})
    {'body_site': 'body_site', 'organ': 'body_site', 'treatment': 'treatment', 'treatment_type': 'treatment'}
    """
    names = list(entities)
    keys = [{entity_key(e) for e in entities[n]} for n in names]
    pairs = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            shared = len(keys[i] & keys[j])
            small = min(len(keys[i]), len(keys[j])) or 1
            same_axis = axis_words(names[i]) == axis_words(names[j])
            overlap = shared >= MIN_SHARED_ENTITIES and shared / small >= DIMENSION_ENTITY_OVERLAP
            if same_axis or overlap:
                pairs.append((i, j))
    # Groups by their first member, each in name order (as the names were given).
    groups = sorted(sorted(g) for g in _joined(len(names), pairs))
    return _named_by_votes(names, groups, votes)


# -- entities -------------------------------------------------------------------------------------


def split_abbreviation(entity: str) -> tuple[str, str | None]:
    """``"red blood cells (RBCs)"`` -> ``("red blood cells", "RBCs")``; else (entity, None).

    >>> split_abbreviation("platelets (PLTs)"), split_abbreviation("bone marrow")
    (('platelets', 'PLTs'), ('bone marrow', None))
    """
    m = _ABBREVIATION.match(entity.strip())
    if not m:
        return entity.strip(), None
    return m.group("long").strip(), m.group("short")


def entity_key(entity: str) -> str:
    """The form two spellings of one entity share: no trailing abbreviation, case folded (except
    an acronym's), hyphens as spaces, each word singular.

    >>> entity_key("Bones"), entity_key("white blood cells (WBCs)"), entity_key("B-cell ALL")
    ('bone', 'white blood cell', 'b cell ALL')
    """
    long, _ = split_abbreviation(entity)
    words = re.split(r"[\s\-]+", long.strip())
    return " ".join(w if is_acronym(w) else singular(w.lower()) for w in words if w)


def spelling_key(entity: str) -> str:
    """``entity_key`` without a last word that names the act of examining (``GENERIC_TAILS``):
    one entity of a dimension, however a sample wrote it.

    >>> spelling_key("CT scan"), spelling_key("genetic testing"), spelling_key("imaging test")
    ('CT', 'genetic', 'imaging')
    """
    words = entity_key(entity).split()
    if len(words) > 1 and words[-1].lower() in GENERIC_TAILS:
        words = words[:-1]  # "CT scan" is the CT, "genetic testing" the genetic test
    return " ".join(words)


_ALIAS_PATTERNS = (
    # "basal cell carcinoma (BCC)": an abbreviation in brackets after its long form
    re.compile(r"([A-Za-z][A-Za-z0-9 \-]{2,80}?)\s*\(([A-Z][A-Za-z0-9\-]{1,11})\)"),
    # "X, also known as Y" / "X (also called Y)"
    re.compile(
        r"([A-Za-z][A-Za-z0-9 \-]{2,60}?),?\s*\(?also (?:called|known as|named)\s+"
        r"([A-Za-z][A-Za-z0-9 \-]{1,60})"
    ),
)


def text_aliases(text: str, entities: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of the given entities that ``text`` names as one (long form, other name).

    A pattern's long side may hold extra words before the entity ("is called basal cell
    carcinoma (BCC)"), so an entity counts when the captured text ends with it.

    >>> text_aliases("Skin cancer, also known as basal cell carcinoma (BCC), is common.",
    ...              ["BCC", "basal cell carcinoma", "skin cancer"])
    [('basal cell carcinoma', 'BCC'), ('skin cancer', 'basal cell carcinoma')]
    """
    by_key = {entity_key(e): e for e in entities}
    out: list[tuple[str, str]] = []
    for pattern in _ALIAS_PATTERNS:
        for m in pattern.finditer(text):
            words, other = m.group(1).split(), m.group(2).split()
            # The longest suffix of the left side, the longest prefix of the right one.
            left = _first_entity((words[k:] for k in range(len(words))), by_key)
            right = _first_entity((other[:k] for k in range(len(other), 0, -1)), by_key)
            if left and right and left != right and (left, right) not in out:
                out.append((left, right))
    return out


def _first_entity(candidates: Iterable[list[str]], by_key: Mapping[str, str]) -> str | None:
    """The entity the first of the candidate word lists names (by ``entity_key``), if any."""
    for words in candidates:
        hit = by_key.get(entity_key(" ".join(words)))
        if hit:
            return hit
    return None


def entity_parents(entities: Sequence[str]) -> dict[str, str]:
    """child -> parent for entities that are a qualifier plus another entity's words (the
    longest such parent): a stage or subtype named after what it is a stage or subtype of.

    >>> entity_parents(["breast cancer", "metastatic breast cancer", "ALL", "B-ALL", "RCC",
    ...                 "non-clear cell RCC", "liver"])
    {'metastatic breast cancer': 'breast cancer', 'B-ALL': 'ALL', 'non-clear cell RCC': 'RCC'}
    """
    keys = {entity_key(e): e for e in entities}
    out: dict[str, str] = {}
    for e in entities:
        words = entity_key(e).split()
        for k in range(1, len(words)):
            if words[k - 1] in _NEGATING:
                continue  # "non-clear cell RCC" is no kind of clear cell RCC (it is of RCC)
            parent = keys.get(" ".join(words[k:]))
            if parent is not None and parent != e:
                out[e] = parent
                break
    return out
