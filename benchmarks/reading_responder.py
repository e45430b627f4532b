"""``ReadingResponder``: a named, deterministic responder that answers every request of the LLM
pipeline from the text the request shows, for measuring the pipeline's calls on any corpus
(``benchmarks/llm_estimate.py``: ``ScriptedLLM(ReadingResponder())``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from hcg_core.testing import LLMRequest


def _camel(words: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.findall(r"[0-9a-z]+", words.lower()))


def _between(text: str, start: str, end: str | None = None) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i) if end else -1
    return text[i + len(start) : j if j >= 0 else len(text)]


class ReadingResponder:
    """A named scripted responder (``NAME``) that answers every request of the LLM pipeline from
    the text the request shows, read with the offline builder's cue patterns
    (``graph_build.extract``): it proposes what the excerpts state with an explicit causal cue,
    causes included, and keeps a link only when a shown sentence states it. It knows no domain,
    so a build under it measures the pipeline's calls (``benchmarks/llm_estimate.py``), not a
    model's judgement.

    - dimensions: one per head word the excerpts qualify ("lung cancer" -> ``cancer_type``:
      lung), with a one-line domain and the most stated effects as outcomes when asked;
    - metrics: one per head word (``Cancer``), an ``outcome`` when the batch only ever states it
      as an effect, else ``intermediate``; variables and relations as the sentences bind them;
    - Tier 1: a target is causal when a shown sentence states source -> target;
    - Tier 2: a candidate is kept when a shown sentence states it (that sentence is the quote),
      and the sentences no candidate covers become new edges.
    """

    NAME = "reading-v1"

    def __call__(self, req: LLMRequest) -> dict[str, Any]:
        handler = getattr(self, f"_{req.schema_name}", None)
        if handler is None:
            raise ValueError(f"{self.NAME} has no reply for schema {req.schema_name!r}")
        return handler(req)

    # reading
    @staticmethod
    def statements(text: str) -> list[tuple[Any, str]]:
        """(statement, its sentence) for every cue-backed statement in ``text``."""
        from hcg_core.graph_build.extract import extract_statements, split_sentences

        return [(st, s) for s in split_sentences(text) for st in extract_statements(s)]

    @staticmethod
    def metric(span: Any) -> str:
        return _camel(span.head)

    @staticmethod
    def _excerpts(req: LLMRequest) -> str:
        i = req.prompt.find("\n[1] ")
        return req.prompt[i:] if i >= 0 else ""

    # Stage 1
    def _DimensionsReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802 - schema name
        found = self.statements(self._excerpts(req))
        entities: dict[str, list[str]] = {}
        effects: Counter[str] = Counter()
        heads: Counter[str] = Counter()
        for st, _ in found:
            effects[st.effect.head] += 1
            for span in (st.cause, st.effect):
                heads[span.head] += 1
                if span.modifier and "," not in span.modifier and len(span.modifier.split()) <= 4:
                    entities.setdefault(span.head, [])
                    if span.modifier not in entities[span.head]:
                        entities[span.head].append(span.modifier)
        props = req.schema.get("properties", {})
        cap = int(props.get("dimensions", {}).get("maxItems", 6))
        ranked = sorted(entities, key=lambda h: (-len(entities[h]), h))[:cap]
        out: dict[str, Any] = {
            "dimensions": [
                {
                    "name": f"{h}_type",
                    "description": f"which {h} a measurement is about",
                    "entities": entities[h],
                }
                for h in ranked
            ]
        }
        if "domain" in props:
            top = [h for h, _ in heads.most_common(3)]
            out["domain"] = f"texts about {', '.join(top)}" if top else ""
        if "outcomes" in props:
            out["outcomes"] = [h for h, _ in effects.most_common(3)]
        return out

    def _MetricsReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        allowed = set(req.enum("metrics", "signature"))
        found = self.statements(self._excerpts(req))
        causes = {st.cause.head for st, _ in found}
        qualified = {sp.head for st, _ in found for sp in (st.cause, st.effect) if sp.modifier}
        metrics: dict[str, dict[str, Any]] = {}
        for st, sentence in found:
            for span in (st.cause, st.effect):
                name = self.metric(span)
                if not name or name in metrics:
                    continue
                dim = f"{span.head}_type"
                metrics[name] = {
                    "name": name,
                    "signature": [dim] if dim in allowed and span.head in qualified else [],
                    "description": f"How much {span.head} there is. As the text says: {sentence}",
                    "category": "stated",
                    "role": "intermediate" if span.head in causes else "outcome",
                }
        cap = int(req.schema.get("properties", {}).get("metrics", {}).get("maxItems", 40))
        return {"metrics": list(metrics.values())[:cap]}

    def _signatures(self, req: LLMRequest) -> dict[str, bool]:
        # "- Name(sig, ...)" lines: whether each listed metric has a signature.
        return {
            m.group(1): bool(m.group(2).strip())
            for m in re.finditer(r"^- (\w+)\(([^)]*)\)$", req.prompt, re.M)
        }

    def _VariablesReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        metrics = set(req.enum("variables", "metric"))
        slots = req.slots("variables", "entities")
        known = {e for ents in slots.values() for e in ents if e}
        signed = self._signatures(req)
        out: dict[str, dict[str, Any]] = {}
        for st, sentence in self.statements(self._excerpts(req)):
            for span in (st.cause, st.effect):
                name = self.metric(span)
                if name not in metrics:
                    continue
                ents = [span.modifier] if signed.get(name) else []
                if signed.get(name) and span.modifier not in known:
                    continue
                key = f"{name}({', '.join(ents)})"
                filled = _fill_slots(slots, ents)
                out.setdefault(key, {"metric": name, "entities": filled, "description": sentence})
        cap = int(req.schema.get("properties", {}).get("variables", {}).get("maxItems", 60))
        return {"variables": list(out.values())[:cap]}

    def _RelationsReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        listed = set(req.enum("relations", "source"))
        out = []
        for st, sentence in self.statements(self._excerpts(req)):
            pair = [self._variable(sp, listed) for sp in (st.cause, st.effect)]
            if pair[0] and pair[1] and pair[0] != pair[1]:
                out.append({"source": pair[0], "target": pair[1], "mechanism": sentence})
        cap = int(req.schema.get("properties", {}).get("relations", {}).get("maxItems", 30))
        return {"relations": out[:cap]}

    def _ReviewDimensionsReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        # It merges nothing (no domain knowledge); the domain line is the first sample's.
        lines = re.findall(
            r"^- (.+)$", _between(req.prompt, "one per sample:", "Dimensions:"), re.M
        )
        return {"domain": lines[0] if lines else "", "same_dimensions": [], "same_entities": []}

    def _ReviewMetricsReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        return {"same_quantity": [], "causes": []}

    def _CheckMetricsReply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        return {"same_quantity": []}

    def _variable(self, span: Any, listed: set[str]) -> str | None:
        name = self.metric(span)
        for candidate in (f"{name}({span.modifier})", name):
            if candidate in listed:
                return candidate
        return None

    # Stage 2
    def _Tier1Reply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        source = req.enum("source")[0]
        targets = req.enum("causal", "target")
        said: dict[str, str] = {}
        for st, sentence in self.statements(_between(req.prompt, "Evidence from the corpus:")):
            if self.metric(st.cause) == source:
                said.setdefault(self.metric(st.effect), sentence)
        causal = [t for t in targets if t in said]
        return {
            "source": source,
            "causal": [{"target": t, "rationale": f"The evidence says: {said[t]}"} for t in causal],
            "not_causal": [t for t in targets if t not in said],
        }

    def _Tier2Reply(self, req: LLMRequest) -> dict[str, Any]:  # noqa: N802
        pairs = re.findall(r"^\d+\. (.+?) -> (.+)$", req.prompt, re.M)
        templates = set(re.findall(r"^T\d+\. (\S+) -> (\S+)$", req.prompt, re.M))
        slots = req.slots("new_edges", "source", "entities")
        found = self.statements(_between(req.prompt, "Evidence from the corpus:", "\nCandidate"))
        stated = {}
        for st, sentence in found:
            for s_ent in {st.cause.modifier, ""}:
                for t_ent in {st.effect.modifier, ""}:
                    key = (self.metric(st.cause), s_ent, self.metric(st.effect), t_ent)
                    stated.setdefault(key, (st, sentence))
        kept, rejected, covered = [], [], set()
        for n, (s, t) in enumerate(pairs, start=1):
            (sm, se), (tm, te) = _split_variable(s), _split_variable(t)
            hit = stated.get((sm, se, tm, te))
            if hit is None:
                rejected.append(n)
                continue
            st, sentence = hit
            covered.add((sm, tm))
            kept.append(
                {
                    "candidate": n,
                    "effect": "decreases" if st.cue in _DECREASING_CUES else "increases",
                    "mechanism": sentence,
                    "confidence": round(st.strength, 2),
                    "evidence": sentence,
                }
            )
        new_edges = []
        for st, sentence in found:
            sm, tm = self.metric(st.cause), self.metric(st.effect)
            if (sm, tm) not in templates or (sm, tm) in covered or len(new_edges) >= 8:
                continue
            covered.add((sm, tm))
            new_edges.append(
                {
                    "source": _reading_endpoint(sm, st.cause.modifier, slots),
                    "target": _reading_endpoint(tm, st.effect.modifier, slots),
                    "effect": "decreases" if st.cue in _DECREASING_CUES else "increases",
                    "mechanism": sentence,
                    "confidence": round(st.strength, 2),
                    "evidence": sentence,
                }
            )
        out: dict[str, Any] = {"new_edges": new_edges}
        if pairs:
            out |= {"kept": kept, "rejected": rejected}
        return out


# The cue names (graph_build.extract) whose effect lowers the target.
_DECREASING_CUES = frozenset(
    {"decrease", "prevent", "inhibit", "protect", "damage", "treat", "interfere"}
)


def _split_variable(name: str) -> tuple[str, str]:
    metric, _, rest = name.partition("(")
    return metric, rest.rstrip(")").split(",")[0].strip()


def _fill_slots(slots: dict[str, list[str]], entities: Sequence[str]) -> dict[str, str]:
    """Per-dimension fields: each entity in the first dimension whose list holds it."""
    out = {d: "" for d in slots}
    for e in entities:
        for d, ents in slots.items():
            if e in ents and not out[d]:
                out[d] = e
                break
    return out


def _reading_endpoint(metric: str, entity: str, slots: dict[str, list[str]]) -> dict[str, Any]:
    known = {e for ents in slots.values() for e in ents if e}
    if entity and entity not in known:
        return {"metric": metric, "entities": _fill_slots(slots, []), "new_entities": [entity]}
    return {
        "metric": metric,
        "entities": _fill_slots(slots, [entity] if entity else []),
        "new_entities": [],
    }
