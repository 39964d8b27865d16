"""The JSONL sidecar format (DESIGN §5): `X.md.jsonl` beside every `X.md`.

    {"type":"manifest","source_file":…,"source_file_hash":"sha256:…","parent_source_file":…,
     "heading_path":…,"level":0,"node_type":"source","embedding_model":…,"dimension":384,
     "chunk_count":3, <extra keys>}
    {"chunk_index":0,"content_token_count":182,"text":"…","embedding":[…], <extra keys>}

The seed's keys come first, in this order, then extra keys in a fixed order.
A file that is not vectorized has no `embedding_model`, `dimension` or
`embedding`. Serialisation is deterministic (same input, same bytes), so an
unchanged file never churns in git.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from indexer.corpus.errors import CorpusError

MANIFEST_KEYS = (
    "type",
    "source_file",
    "source_file_hash",
    "parent_source_file",
    "heading_path",
    "level",
    "node_type",
    "embedding_model",
    "dimension",
    "chunk_count",
)
# extra manifest keys, written after the seed's in this order when present
MANIFEST_EXTRA = (
    "work",
    "lang",
    "title",
    "tokenizer",
    "max_tokens",
    "pack_chars",  # only when the policy packs paragraphs (indexer.corpus.chunking)
    "embedding_recipe",
    "embedding_engine",  # what computed the vectors; not part of what makes a sidecar current
)

VECTOR_DECIMALS = (
    6  # float32 carries ~7 significant digits; 6 decimals keeps files small and stable
)


def file_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Chunk:
    chunk_index: int
    content_token_count: int
    text: str
    embedding: list[float] | None = None
    line_start: int | None = None  # 1-based, inclusive, in the .md file
    line_end: int | None = None


class VectorSlot(NamedTuple):
    """Where one vector lands in the database: a chunk of one version of a file."""

    source_file: str
    source_file_hash: str
    chunk_index: int
    text: str


@dataclass
class Manifest:
    source_file: str
    source_file_hash: str
    parent_source_file: str | None
    heading_path: str
    level: int
    node_type: str
    chunk_count: int
    embedding_model: str | None = None
    dimension: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Sidecar:
    manifest: Manifest
    chunks: list[Chunk]

    @property
    def vectorized(self) -> bool:
        return self.manifest.embedding_model is not None


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_SCALE = 10.0**VECTOR_DECIMALS
# |x| below this: x * 10^6 is below 10^9, where float64's error (< 1.2e-7) is far inside the
# margin `_TIE_MARGIN` of a half-integer; larger, NaN or infinite components take round()
_VECTORISED_BELOW = 1000.0
_TIE_MARGIN = 1e-6


def round_vector(vector: Any) -> list[float]:
    """`[round(float(x), VECTOR_DECIMALS) for x in vector]`, the same floats, in numpy.

    round() gives the double nearest the decimal x rounded to 6 places (half to even on
    x's exact value); rint(x * 10^6) / 10^6 is that double too (IEEE division of two exact
    integers-valued doubles rounds correctly) whenever x * 10^6 is not within float64's
    error of a half-integer, so the components that are (and any beyond
    `_VECTORISED_BELOW`, NaN, infinities) are rounded by round() itself. Same floats, so
    json writes the same bytes (tests/test_sidecar_rounding.py); ~10x faster on a
    384-dimension vector than the comprehension, which was 15 % of `glossator index`'s
    time on a 2 MB book without embeddings (bench/book.py --profile). numpy is imported
    here, not with the module: `glossator repo delete` reads sidecars' names, not vectors."""
    import numpy as np

    values = np.asarray(vector, dtype=np.float64)
    scaled = values * _SCALE
    rounded = (np.rint(scaled) / _SCALE).tolist()
    with np.errstate(invalid="ignore"):
        exact = np.abs(values) < _VECTORISED_BELOW
        near_tie = np.abs(scaled - np.floor(scaled) - 0.5) < _TIE_MARGIN
    for i in np.flatnonzero(~exact | near_tie).tolist():
        rounded[i] = round(float(vector[i]), VECTOR_DECIMALS)
    return rounded


def dumps(sidecar: Sidecar, partial: bool = False) -> bytes:
    """Serialise deterministically: fixed key order, compact separators, one object per line.
    `partial`: chunks whose vector is not computed yet are written without one (the rows a
    job loads before its vectors; never committed)."""
    m = sidecar.manifest
    head: dict[str, Any] = {
        "type": "manifest",
        "source_file": m.source_file,
        "source_file_hash": m.source_file_hash,
        "parent_source_file": m.parent_source_file,
        "heading_path": m.heading_path,
        "level": m.level,
        "node_type": m.node_type,
    }
    if m.embedding_model is not None:
        head["embedding_model"] = m.embedding_model
        head["dimension"] = m.dimension
    head["chunk_count"] = m.chunk_count
    for key in MANIFEST_EXTRA:
        if key in m.extra:
            head[key] = m.extra[key]
    for key in sorted(set(m.extra) - set(MANIFEST_EXTRA)):
        head[key] = m.extra[key]
    lines = [_dumps(head)]
    for c in sidecar.chunks:
        row: dict[str, Any] = {
            "chunk_index": c.chunk_index,
            "content_token_count": c.content_token_count,
            "text": c.text,
        }
        if m.embedding_model is not None:
            if c.embedding is not None:
                row["embedding"] = round_vector(c.embedding)
            elif not partial:
                raise ValueError(
                    f"{m.source_file}: chunk {c.chunk_index} has no embedding in a vectorized sidecar"
                )
        if c.line_start is not None:
            row["line_start"] = c.line_start
            row["line_end"] = c.line_end
        lines.append(_dumps(row))
    return ("\n".join(lines) + "\n").encode("utf-8")


def loads(path: str, data: bytes) -> Sidecar:
    """Parse and check a sidecar; CorpusError names the file and what is wrong."""
    try:
        rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorpusError(
            path, f"sidecar is not valid JSONL ({e}); regenerate it with `glossator sidecars --all`"
        ) from None
    if not rows or not isinstance(rows[0], dict) or rows[0].get("type") != "manifest":
        raise CorpusError(
            path, "sidecar has no manifest line; regenerate it with `glossator sidecars --all`"
        )
    head = rows[0]
    try:
        manifest = Manifest(
            source_file=head["source_file"],
            source_file_hash=head["source_file_hash"],
            parent_source_file=head.get("parent_source_file"),
            heading_path=head["heading_path"],
            level=int(head["level"]),
            node_type=head["node_type"],
            chunk_count=int(head["chunk_count"]),
            embedding_model=head.get("embedding_model"),
            dimension=head.get("dimension"),
            extra={k: v for k, v in head.items() if k not in MANIFEST_KEYS},
        )
        chunks = [
            Chunk(
                chunk_index=int(r["chunk_index"]),
                content_token_count=int(r["content_token_count"]),
                text=r["text"],
                embedding=r.get("embedding"),
                line_start=r.get("line_start"),
                line_end=r.get("line_end"),
            )
            for r in rows[1:]
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise CorpusError(
            path, f"sidecar is missing or has a bad key ({e}); regenerate it"
        ) from None
    return Sidecar(manifest, chunks)


def validate(path: str, sidecar: Sidecar, partial: bool = False) -> None:
    """The checks the loader makes before touching the database. `partial`: a sidecar
    whose vectors are not all computed yet (a job's rows loaded before its vectors)."""
    m = sidecar.manifest
    if len(sidecar.chunks) != m.chunk_count:
        raise CorpusError(
            path,
            f"manifest says {m.chunk_count} chunks but the sidecar holds {len(sidecar.chunks)}",
        )
    for i, c in enumerate(sidecar.chunks):
        if c.chunk_index != i:
            raise CorpusError(path, f"chunk {i} is numbered {c.chunk_index}")
        if m.embedding_model is not None:
            if c.embedding is None:
                if partial:
                    continue
                raise CorpusError(
                    path, f"chunk {i} has no embedding although the manifest names a model"
                )
            if len(c.embedding) != m.dimension:
                raise CorpusError(
                    path,
                    f"chunk {i} has {len(c.embedding)} dimensions, manifest says {m.dimension}",
                )
