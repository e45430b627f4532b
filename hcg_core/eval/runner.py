"""Run retrieval systems over a QA file and report lexical answer recall, size, latency and routes.

A *system* is any callable ``question -> texts`` (a list of chunk texts, best first) or
``question -> RetrievalResult`` (then the graph route's share is reported too). Nothing here knows
about a particular corpus; the questions file is a JSON list (or JSON Lines) of ``{question, answer,
question_type?, evidence?, context? | context_sentence_ids?}``; gold context turns on context recall.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError
from ..types import RetrievalResult
from .metric import DEFAULT_BUDGET, answer_recall, context_recall

SystemOutput = Sequence[str] | RetrievalResult
System = Callable[[str], SystemOutput]
Judge = Callable[[str, str, Sequence[str]], float]
"""The seam for an LLM judge: ``(question, gold answer, context texts) -> score in [0, 1]``.
Left open: no judge ships with the library, and ``evaluate`` runs without one."""

ALL_TYPES = "all"


@dataclass(frozen=True)
class QAItem:
    """One evaluation question with its gold answer (and gold context passages, when known)."""

    question: str
    answer: str
    question_type: str = ""
    evidence: tuple[str, ...] = ()
    id: str = ""
    context: tuple[str, ...] = ()


def load_sentences(path: str | Path) -> dict[str, str]:
    """Read a sentences file (JSON Lines of ``{sentence_id, text}``, HolisQA's layout) as id -> text.

    Raises:
        InputError: the file is missing or unreadable, or a line is not such an object.
    """
    p = Path(path)
    out: dict[str, str] = {}
    for i, obj in enumerate(_read_records(p, what="sentences file")):
        record = obj if isinstance(obj, dict) else {}
        sid, text = record.get("sentence_id"), record.get("text")
        if not isinstance(sid, str) or not isinstance(text, str):
            raise InputError(
                f"{p}: record {i} needs a string 'sentence_id' and a string 'text'", path=p
            )
        out[sid] = text
    return out


def _read_records(p: Path, *, what: str) -> list[Any]:
    """A JSON list, or JSON Lines (one value per non-blank line), as a list of values."""
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: {what} not found", path=p) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read the {what}: {exc}", path=p) from exc
    from ..bounded import loads_json

    try:
        data = loads_json(text, path=p, error=InputError)
    except InputError as exc:
        if "invalid JSON" not in str(exc):  # past a bound: too deep, a huge integer, a repeated key
            raise InputError(f"{p}: {exc}", path=p) from None
        data = []  # not one JSON value: JSON Lines
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data.append(loads_json(line, path=p, line=n, error=InputError))
            except InputError as exc:
                raise InputError(
                    f"{p}: {exc}; expected a JSON list or JSON Lines", path=p
                ) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InputError(f"{p}: expected a JSON list of objects or JSON Lines", path=p)
    return data


def _gold_context(
    obj: dict[str, Any], sentences: Mapping[str, str] | None, p: Path, i: int
) -> tuple[str, ...]:
    """An item's gold context: ``context`` text(s), or ``context_sentence_ids`` looked up."""
    ids = obj.get("context_sentence_ids")
    if ids is not None and sentences is not None:
        if not isinstance(ids, list) or not all(isinstance(s, str) for s in ids):
            raise InputError(f"{p}: item {i}: 'context_sentence_ids' must be a list of ids", path=p)
        missing = [s for s in ids if s not in sentences]
        if missing:
            raise InputError(
                f"{p}: item {i}: sentence id(s) {missing[:3]} not in the sentences file", path=p
            )
        return tuple(sentences[s] for s in ids)
    ctx = obj.get("context")
    if ctx is None or ctx == []:
        return ()
    if isinstance(ctx, str):
        return (ctx,)
    if isinstance(ctx, list) and all(isinstance(c, str) for c in ctx):
        return tuple(ctx)
    raise InputError(f"{p}: item {i}: 'context' must be a string or a list of strings", path=p)


def _item_keys(obj: dict[str, Any]) -> str:
    """An item's keys and the type of each value, for an error message (at most 8).

    >>> _item_keys({"questions": [], "answer": None})
    "'questions' (list), 'answer' (NoneType)"
    >>> _item_keys({})
    'no keys'
    """
    shown = [f"{k!r} ({type(v).__name__})" for k, v in list(obj.items())[:8]]
    more = f" and {len(obj) - 8} more" if len(obj) > 8 else ""
    return ", ".join(shown) + more if shown else "no keys"


def load_questions(
    path: str | Path,
    *,
    limit: int | None = None,
    sentences: Mapping[str, str] | None = None,
) -> list[QAItem]:
    """Read a QA file: a JSON list (or JSON Lines) of objects with ``question`` and ``answer``.

    Optional fields: ``question_type`` (groups the report; ``category`` is read too), ``evidence``
    (a string or list of strings, kept for judges), ``id`` (or ``qa_id``), and gold context for
    context recall: ``context`` (a string or a list of strings), or ``context_sentence_ids`` looked
    up in ``sentences`` (see ``load_sentences``).

    Raises:
        InputError: the file is missing, not JSON, not a list, or an item lacks a field.
    """
    p = Path(path)
    if limit is not None and limit < 1:
        raise InputError(f"limit must be at least 1, got {limit}")
    data = _read_records(p, what="questions file")
    items: list[QAItem] = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise InputError(f"{p}: item {i} is {type(obj).__name__}, not an object", path=p)
        q, a = obj.get("question"), obj.get("answer")
        if not isinstance(q, str) or not q.strip() or not isinstance(a, str):
            # Name what the item holds: a file wrapping its list ({"questions": [...]}) or
            # spelling a key otherwise ("query", "Question") is seen at once.
            raise InputError(
                f"{p}: item {i} needs a non-empty string 'question' and a string 'answer'; "
                f"it has {_item_keys(obj)}",
                path=p,
            )
        ev = obj.get("evidence") or []
        if not isinstance(ev, (str, list)):
            raise InputError(f"{p}: item {i}: 'evidence' must be a string or a list", path=p)
        evidence = (ev,) if isinstance(ev, str) else tuple(str(e) for e in ev)
        items.append(
            QAItem(
                question=q,
                answer=a,
                question_type=str(obj.get("question_type") or obj.get("category") or ""),
                evidence=evidence,
                id=str(obj.get("id") or obj.get("qa_id") or i),
                context=_gold_context(obj, sentences, p, i),
            )
        )
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise InputError(f"{p}: the questions file is empty", path=p)
    if sentences is None and any(
        isinstance(o, dict) and o.get("context_sentence_ids") and not o.get("context") for o in data
    ):
        # Not an error (answer recall still works), but the user most likely wanted both.
        warnings.warn(
            f"{p}: the questions carry context_sentence_ids but no sentences file was given "
            "(hcg eval --sentences FILE): gold-context recall is not measured",
            stacklevel=2,
        )
    return items


@dataclass(frozen=True)
class QuestionScore:
    """One system's outcome on one question."""

    id: str
    question_type: str
    recall: float
    recall_unbounded: float
    context_words: int
    latency_ms: float
    graph_served: bool
    graph_words: int
    budget_words: int
    context_recall: float | None = None
    judge: float | None = None


@dataclass(frozen=True)
class Row:
    """Aggregates of one system over one group of questions."""

    system: str
    group: str
    n: int
    recall: float
    recall_unbounded: float
    context_words: float
    latency_p50_ms: float
    latency_p95_ms: float
    graph_query_share: float | None
    graph_word_share: float | None
    context_recall: float | None = None
    judge: float | None = None


@dataclass
class EvalReport:
    """Per system and per question type: the table rows and every per-question score."""

    budget: int
    rows: list[Row]
    scores: dict[str, list[QuestionScore]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def row(self, system: str, group: str = ALL_TYPES) -> Row:
        for r in self.rows:
            if r.system == system and r.group == group:
                return r
        raise KeyError((system, group))

    def to_dict(self, *, per_question: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "budget": self.budget,
            "meta": self.meta,
            "rows": [asdict(r) for r in self.rows],
        }
        if per_question:
            out["scores"] = {s: [asdict(q) for q in qs] for s, qs in self.scores.items()}
        return out

    def to_json(self, *, per_question: bool = False) -> str:
        return json.dumps(self.to_dict(per_question=per_question), indent=2)

    def format_table(self) -> str:
        """A plain-text table: one block per question type, one line per system."""
        ctx = any(r.context_recall is not None for r in self.rows)
        head = (
            f"{'system':<34}{'n':>5}"
            + (f"{'context@' + str(self.budget):>14}" if ctx else "")
            + f"{'recall@' + str(self.budget):>13}{'unbounded':>11}"
            f"{'words':>8}{'p50 ms':>9}{'p95 ms':>9}{'graph q':>9}{'graph w':>9}"
        )
        lines: list[str] = []
        for group in dict.fromkeys(r.group for r in self.rows):
            lines += [f"[{group}]", head]
            for r in (r for r in self.rows if r.group == group):
                cr = f"{_or_dash(r.context_recall, '.3f'):>14}" if ctx else ""
                gq, gw = _or_dash(r.graph_query_share, ".2f"), _or_dash(r.graph_word_share, ".2f")
                lines.append(
                    f"{r.system:<34}{r.n:>5}{cr}{r.recall:>13.3f}{r.recall_unbounded:>11.3f}"
                    f"{r.context_words:>8.0f}{r.latency_p50_ms:>9.1f}{r.latency_p95_ms:>9.1f}"
                    f"{gq:>9}{gw:>9}"
                )
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"


def _or_dash(value: float | None, spec: str) -> str:
    """A table cell: ``value`` formatted, or "-" when there is none."""
    return "-" if value is None else format(value, spec)


def _texts_and_routes(output: SystemOutput) -> tuple[list[str], list[bool] | None]:
    if isinstance(output, RetrievalResult):
        return [c.chunk.text for c in output.chunks], [c.route == "graph" for c in output.chunks]
    if isinstance(output, str):
        raise ConfigError("a system must return a list of texts or a RetrievalResult, not a str")
    return [str(t) for t in output], None


def score_question(
    item: QAItem, output: SystemOutput, *, budget: int, latency_ms: float
) -> QuestionScore:
    """Score one system output: recall at the budget and unbounded, size, and route shares."""
    texts, routes = _texts_and_routes(output)
    words: list[str] = []
    graph_words = 0
    graph_served = False
    for i, t in enumerate(texts):
        w = t.split()
        if routes is not None and routes[i]:
            # Only the words the measure reads count toward the graph's share.
            graph_words += max(0, min(len(w), budget - len(words)))
            graph_served = graph_served or len(words) < budget
        words.extend(w)
    return QuestionScore(
        id=item.id,
        question_type=item.question_type,
        recall=answer_recall(words, item.answer, budget),
        recall_unbounded=answer_recall(words, item.answer, None),
        context_words=len(words),
        latency_ms=latency_ms,
        graph_served=graph_served,
        graph_words=graph_words,
        budget_words=min(len(words), budget),
        context_recall=context_recall(words, item.context, budget) if item.context else None,
    )


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _aggregate(system: str, group: str, scores: list[QuestionScore], routed: bool) -> Row:
    lat = np.asarray([s.latency_ms for s in scores])
    read = sum(s.budget_words for s in scores)
    return Row(
        system=system,
        group=group,
        n=len(scores),
        recall=float(np.mean([s.recall for s in scores])),
        recall_unbounded=float(np.mean([s.recall_unbounded for s in scores])),
        context_words=float(np.mean([s.context_words for s in scores])),
        latency_p50_ms=float(np.percentile(lat, 50)),
        latency_p95_ms=float(np.percentile(lat, 95)),
        graph_query_share=_mean([s.graph_served for s in scores]) if routed else None,
        graph_word_share=(sum(s.graph_words for s in scores) / read if read else 0.0)
        if routed
        else None,
        context_recall=_mean([s.context_recall for s in scores if s.context_recall is not None]),
        judge=_mean([s.judge for s in scores if s.judge is not None]),
    )


def evaluate(
    systems: Mapping[str, System],
    questions: Iterable[QAItem],
    budget: int = DEFAULT_BUDGET,
    *,
    judge: Judge | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> EvalReport:
    """Run every system on every question and aggregate, overall and per question type.

    Latency is wall time of the system call (in ms). ``judge``, when given, is called with the
    budget-cut context and its mean is reported as ``judge``; no judge is used by default.
    """
    if budget < 1:
        raise ConfigError(f"budget must be at least 1 word, got {budget}")
    qs = list(questions)
    if not qs:
        raise ConfigError("no questions to evaluate")
    if not systems:
        raise ConfigError("no systems to evaluate")
    rows: list[Row] = []
    all_scores: dict[str, list[QuestionScore]] = {}
    groups = sorted({q.question_type for q in qs if q.question_type})
    for name, system in systems.items():
        scores: list[QuestionScore] = []
        routed = False
        for i, item in enumerate(qs):
            t0 = time.perf_counter()
            output = system(item.question)
            ms = (time.perf_counter() - t0) * 1000.0
            routed = routed or isinstance(output, RetrievalResult)
            s = score_question(item, output, budget=budget, latency_ms=ms)
            if judge is not None:
                texts, _ = _texts_and_routes(output)
                cut = " ".join(" ".join(texts).split()[:budget])
                s = replace(s, judge=float(judge(item.question, item.answer, [cut])))
            scores.append(s)
            if progress is not None:
                progress(name, i + 1, len(qs))
        all_scores[name] = scores
        rows.append(_aggregate(name, ALL_TYPES, scores, routed))
        for g in groups:
            rows.append(_aggregate(name, g, [s for s in scores if s.question_type == g], routed))
    return EvalReport(budget=budget, rows=rows, scores=all_scores, meta={"questions": len(qs)})
