"""What each summary is made from, and whether it is due.

Inputs by algorithm (`[summaries] algorithm` in glossator.toml, DESIGN §4):

    level                 default                              long-context
    1 chapter or piece    the paragraphs of its source.md      (same)
    2 part                its chapters' level-1 summaries      the full text of its chapters
    3 work                its parts' level-2 summaries and     every level-1 summary of the work
                          its liminary pieces' level-1 ones

A summary is due when it is missing, or when the sha256 of its inputs, its
prompt, its provider/model or the algorithm differs from what its `generator`
frontmatter records. `generated: false` marks a summary written by hand: never
due, still an input to its parent. Nothing here calls a model or writes a file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from indexer.corpus.errors import Problem
from indexer.corpus.layout import Corpus, Node
from indexer.providers.summarizers.base import SummaryInput


@dataclass(frozen=True)
class PlanItem:
    path: str
    level: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def summary_nodes(corpus: Corpus) -> list[Node]:
    """Every summary node, bottom-up (level 1, 2, 3), each level in reading order."""
    ordered = [n for n in corpus.in_reading_order() if n.level > 0]
    return sorted(ordered, key=lambda n: n.level)  # stable: reading order within a level


def input_nodes(corpus: Corpus, node: Node, algorithm: str) -> list[Node]:
    """The nodes whose text `node` is summarised from, in reading order."""
    if node.level == 1:
        return [c for c in corpus.children(node.path) if c.level == 0]
    if node.level == 2:
        chapters = [c for c in corpus.children(node.path) if c.level == 1]
        if algorithm == "long-context":
            return [s for c in chapters for s in corpus.children(c.path) if s.level == 0]
        return chapters
    if algorithm == "long-context":
        return [n for n in corpus.in_reading_order() if n.level == 1 and n.work == node.work]
    return [c for c in corpus.children(node.path) if c.level in (1, 2)]


def inputs_of(nodes: list[Node], texts: Mapping[str, str]) -> tuple[SummaryInput, ...]:
    """Inputs from nodes; a summary's text is taken from `texts` (fresh) or its body."""
    return tuple(SummaryInput(n.heading, texts.get(n.path, n.body).strip(), n.path) for n in nodes)


def inputs_sha256(node: Node, inputs: tuple[SummaryInput, ...], budget_tokens: int) -> str:
    """Fingerprint of everything but the prompt and model that shapes the summary."""
    payload = {
        "title": node.heading_path,
        "lang": node.lang,
        "budget_tokens": budget_tokens,
        "inputs": [[i.label, i.text] for i in inputs],
    }
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def generator_record(
    *,
    provider: str,
    model: str,
    algorithm: str,
    prompt_sha256: str | None,
    inputs_sha256: str,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cost_usd: float | None = 0.0,
) -> dict[str, Any]:
    """The `generator` frontmatter mapping, keys in a fixed order."""
    return {
        "provider": provider,
        "model": model,
        "algorithm": algorithm,
        "prompt_sha256": prompt_sha256,
        "inputs_sha256": inputs_sha256,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": None if cost_usd is None else round(cost_usd, 6),
    }


def due_reason(node: Node, wanted: dict[str, Any]) -> str | None:
    """Why `node` must be (re)generated to match `wanted` (a generator record), or None."""
    if not node.exists:
        return "missing"
    if not node.generated:
        return None
    old = node.meta.get("generator")
    if not isinstance(old, dict) or not old:
        return "no generator record"
    if (old.get("provider"), old.get("model")) != (wanted["provider"], wanted["model"]):
        return (
            f"provider changed ({old.get('provider')}:{old.get('model')} → "
            f"{wanted['provider']}:{wanted['model']})"
        )
    if old.get("algorithm") != wanted["algorithm"]:
        return f"algorithm changed ({old.get('algorithm')} → {wanted['algorithm']})"
    if old.get("prompt_sha256") != wanted["prompt_sha256"]:
        return "prompt changed"
    if old.get("inputs_sha256") != wanted["inputs_sha256"]:
        return "inputs changed"
    if not node.body.strip():
        return "empty summary"
    if old.get("fallback") and old.get("fallback_retry"):
        return "a fallback written while the summarizer failed"
    return None


def blocked_by_problems(corpus: Corpus) -> dict[str, str]:
    """Part and work summaries that must not be regenerated: part of their input is unreadable.

    A chapter with a malformed file, an empty source or a misplaced folder is left
    out of the corpus; summarising its part without it would publish a summary of
    a book that is not the one in the repository.
    """
    errors = [p for p in corpus.problems if p.severity == "error"]
    out: dict[str, str] = {}
    for node in corpus.nodes.values():
        if node.level < 2:
            continue
        for p in errors:
            if p.path != node.path and (p.path + "/").startswith(node.folder + "/"):
                out[node.path] = f"{p.path} has an error ({p.message})"
                break
    return out


def blocked_problem(node: Node, why: str) -> Problem:
    kept = "the previous summary is kept" if node.exists else "no summary is written"
    return Problem(node.path, f"not regenerated: {why}; {kept} until that is fixed", "warning")
