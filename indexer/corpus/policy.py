"""The corpus policy: `glossator.toml` at the root of a corpus repository (DESIGN §7).

    [vectorize]
    preset = "all"            # "all" (every level) or "economical" (summaries only,
                              # paragraphs left to BM25)
    levels = [0, 1, 2, 3]     # or list the levels yourself (overrides preset)

    [summaries]
    algorithm = "default"     # or "long-context" (level 2 from the chapters' full text)
    prompts_dir = "prompts"   # prompts/<level>.md, prompts/<work>/<level>.md override
    budget_tokens = { 1 = 300, 2 = 500, 3 = 700 }

    [chunking]
    max_tokens = 400          # paragraphs over this split at sentences, then words
    pack_chars = "auto"       # the default: short consecutive paragraphs (dialogue)
                              # packed into one retrieval unit in a work whose paragraphs
                              # are mostly short (indexer.corpus.chunking, auto_pack),
                              # units of 400 to 1,200 characters; [400, 1200] packs every
                              # work so; false or []: one unit per paragraph
                              # (docs/search.md, "Retrieval units")

Every key is checked: an unknown one is an error that names it, because a typo
would otherwise silently leave the default in force.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any, Literal

from indexer.corpus.errors import CorpusError

POLICY_FILE = "glossator.toml"
PRESETS = {"all": (0, 1, 2, 3), "economical": (1, 2, 3)}
ALGORITHMS = ("default", "long-context")
DEFAULT_BUDGETS = {1: 300, 2: 500, 3: 700}

_SCHEMA: dict[str, set[str]] = {
    "vectorize": {"preset", "levels"},
    "summaries": {"algorithm", "prompts_dir", "budget_tokens"},
    "chunking": {"max_tokens", "pack_chars"},
}


@dataclass(frozen=True)
class Policy:
    vectorize_levels: tuple[int, ...] = PRESETS["all"]
    algorithm: str = "default"
    prompts_dir: str = "prompts"
    budget_tokens: dict[int, int] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))
    max_tokens: int = 400
    # [min, max] characters: short consecutive paragraphs packed into one retrieval unit
    # (indexer.corpus.chunking); "auto", the default: so only in a work whose paragraphs
    # are mostly short (chunking.auto_pack; measured on every judged set as the default,
    # bench/RESULTS.md, issue 37 "retrieval"); None: one chunk per paragraph
    pack_chars: tuple[int, int] | Literal["auto"] | None = "auto"

    def vectorize(self, level: int) -> bool:
        return level in self.vectorize_levels


def _check_known_keys(doc: dict[str, Any]) -> None:
    """Refuse a section or key the schema does not know, naming it and the known ones."""
    for section, value in doc.items():
        if section not in _SCHEMA:
            raise CorpusError(
                POLICY_FILE, f"unknown section [{section}]; known: {', '.join(_SCHEMA)}"
            )
        if not isinstance(value, dict):
            raise CorpusError(POLICY_FILE, f"[{section}] must be a table")
        for key in value:
            if key not in _SCHEMA[section]:
                raise CorpusError(
                    POLICY_FILE,
                    f"unknown key {section}.{key}; known: {', '.join(sorted(_SCHEMA[section]))}",
                )


def parse_policy(data: bytes | None) -> Policy:
    """Parse `glossator.toml` (None: defaults). Raises CorpusError naming the bad key."""
    if data is None:
        return Policy()
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise CorpusError(POLICY_FILE, f"not valid TOML: {e}") from None
    _check_known_keys(doc)
    vec: dict[str, Any] = doc.get("vectorize", {})
    summ: dict[str, Any] = doc.get("summaries", {})
    chunk: dict[str, Any] = doc.get("chunking", {})

    preset = vec.get("preset", "all")
    if preset not in PRESETS:
        raise CorpusError(
            POLICY_FILE, f"vectorize.preset = {preset!r}: expected one of {', '.join(PRESETS)}"
        )
    levels = vec.get("levels", PRESETS[preset])
    if not isinstance(levels, list | tuple) or not all(
        isinstance(x, int) and 0 <= x <= 3 for x in levels
    ):
        raise CorpusError(POLICY_FILE, "vectorize.levels must be a list of levels from 0 to 3")
    algorithm = summ.get("algorithm", "default")
    if algorithm not in ALGORITHMS:
        raise CorpusError(
            POLICY_FILE,
            f"summaries.algorithm = {algorithm!r}: expected one of {', '.join(ALGORITHMS)}",
        )
    prompts_dir = summ.get("prompts_dir", "prompts")
    if (
        not isinstance(prompts_dir, str)
        or prompts_dir.startswith("/")
        or ".." in prompts_dir.split("/")
    ):
        raise CorpusError(
            POLICY_FILE, "summaries.prompts_dir must be a folder inside the repository"
        )
    budgets = dict(DEFAULT_BUDGETS)
    for k, v in summ.get("budget_tokens", {}).items():
        if str(k) not in {"1", "2", "3"} or not isinstance(v, int) or v <= 0:
            raise CorpusError(
                POLICY_FILE, "summaries.budget_tokens maps levels 1, 2, 3 to positive token counts"
            )
        budgets[int(k)] = v
    max_tokens = chunk.get("max_tokens", 400)
    if (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 16 <= max_tokens <= 8192
    ):
        raise CorpusError(POLICY_FILE, "chunking.max_tokens must be a whole number from 16 to 8192")
    pack = chunk.get("pack_chars", "auto")
    if pack is False or pack == []:
        pack = None
    if (
        pack is not None
        and pack != "auto"
        and (
            not isinstance(pack, list)
            or len(pack) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in pack)
            or not 1 <= pack[0] <= pack[1] <= 100_000
        )
    ):
        raise CorpusError(
            POLICY_FILE,
            'chunking.pack_chars must be "auto", false, or [min, max]: whole numbers,'
            " 1 <= min <= max <= 100000",
        )
    return Policy(
        tuple(sorted(set(levels))),
        algorithm,
        prompts_dir,
        budgets,
        max_tokens,
        pack if pack is None or pack == "auto" else (pack[0], pack[1]),
    )
