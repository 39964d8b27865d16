"""The corpus tree (DESIGN §3): nodes, levels, titles, heading paths and parent links.

    corpus/<work>/summary.md                      level 3  work_summary
    corpus/<work>/<piece>/source.md               level 0  source   (liminary piece,
    corpus/<work>/<piece>/summary.md              level 1  section_summary   or a chapter
                                                                      of a book without parts)
    corpus/<work>/<part>/summary.md               level 2  part_summary
    corpus/<work>/<part>/<chapter>/source.md      level 0  source
    corpus/<work>/<part>/<chapter>/summary.md     level 1  section_summary

`read_corpus` never stops at a bad file: it records a `Problem` and goes on, so
one malformed chapter does not keep the others from being indexed. The only
thing it writes is a missing or wrong `parent_source_file` key, returned as
`Changes` for the caller to apply.

A book without parts is the same tree with level 2 absent: its chapters sit
directly under the work, and their summaries' parent is the work's summary.
A section folder under the work is a chapter when its source.md has a `number`,
a liminary piece otherwise (docs/corpus.md). Labels in heading paths follow
the work's `lang` (indexer/corpus/lang.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from core.vocabulary import NODE_TYPES, SIDECAR_SUFFIX
from indexer.corpus import frontmatter
from indexer.corpus import lang as languages
from indexer.corpus.cache import IndexCaches
from indexer.corpus.errors import CorpusError, FrontmatterError, Problem
from indexer.corpus.policy import POLICY_FILE, Policy, parse_policy
from indexer.corpus.source import Changes, FileSource, content_id

CORPUS_DIR = "corpus"
SOURCE = "source.md"
SUMMARY = "summary.md"
EMPTY_SOURCE = "empty source: there is no text to index; write the chapter or remove its folder"
DEFAULT_LANG = languages.DEFAULT_LANG

_NUMBER = re.compile(r"\d+")


@dataclass
class Node:
    """One file of the corpus (or a summary.md still to be written: `exists` False)."""

    path: str  # repo-relative: corpus/<work>/…/source.md
    level: int
    node_type: str
    kind: str  # the folder's role: "chapter", "piece", "part" or "work"
    folder: str  # repo-relative folder of the node
    work: str  # the work's folder name
    title: str
    heading: str  # this node's own part of the heading path ("Chapitre I (Abondance, disette)")
    heading_path: str
    parent_source_file: str | None
    lang: str
    vectorize: bool
    meta: dict[str, Any]
    body: str
    body_line: int  # 1-based line of the body's first line in the file
    text: str  # the whole file as read (empty for a node that does not exist yet)
    order: tuple[int, str] = (0, "")
    exists: bool = True

    @property
    def is_summary(self) -> bool:
        return self.level > 0

    @property
    def generated(self) -> bool:
        """False for a summary written by hand (`generated: false`): never overwritten."""
        return self.meta.get("generated", True) is not False

    @property
    def sidecar_path(self) -> str:
        return self.path + SIDECAR_SUFFIX


@dataclass
class Corpus:
    policy: Policy
    nodes: dict[str, Node] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    changes: Changes = field(default_factory=Changes)

    def children(self, path: str) -> list[Node]:
        """The nodes whose parent is `path`, in reading order."""
        kids = [n for n in self.nodes.values() if n.parent_source_file == path]
        return sorted(kids, key=lambda n: (n.order, n.level, n.path))

    def parent(self, node: Node) -> Node | None:
        return self.nodes.get(node.parent_source_file) if node.parent_source_file else None

    def works(self) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.level == 3), key=lambda n: n.path)

    def in_reading_order(self) -> list[Node]:
        """Every node, depth first: a summary before its children (an outline)."""
        out: list[Node] = []

        def walk(node: Node) -> None:
            out.append(node)
            for child in self.children(node.path):
                walk(child)

        for work in self.works():
            walk(work)
        return out

    @property
    def failed(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


def humanize(folder: str) -> str:
    """A title from a folder name until the user sets one: `02-deuxieme-serie` → `Deuxieme serie`."""
    words = [w for w in re.split(r"[-_\s]+", folder) if w and not w.isdigit()]
    text = " ".join(words) or folder
    return text[:1].upper() + text[1:]


def folder_order(name: str, meta: dict[str, Any]) -> tuple[int, str]:
    order = meta.get("order")
    if isinstance(order, int) and not isinstance(order, bool):
        return (order, name)
    m = _NUMBER.search(name)
    return (int(m.group()) if m else 1_000_000, name)


def section_heading(title: str, meta: dict[str, Any], lang: str | None = None) -> str:
    """`Chapitre I (Abondance, disette)` for a numbered chapter, the bare title otherwise.

    The label is the frontmatter's `label`, else the work's language's word for a
    chapter (`Chapter`, `Kapitel`…). A chapter whose title only repeats its label
    and number (`Chapter 3`, untitled in the book) reads `Chapter 3`."""
    number = meta.get("number")
    if number is None or str(number).strip() in ("", "0"):
        return title
    label = str(meta.get("label") or languages.labels(lang).chapter).strip()
    head = f"{label} {str(number).strip()}"
    if not title or _squash(title) in (_squash(head), _squash(str(number))):
        return head
    return f"{head} ({title})"


def _squash(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def summary_heading_path(heading_path: str, lang: str | None = None) -> str:
    return heading_path + languages.summary_suffix(lang)


def _own_path(node: Node) -> str:
    """A summary's heading path without " (résumé)": what its children's paths extend."""
    return (
        languages.strip_summary_suffix(node.heading_path) if node.is_summary else node.heading_path
    )


class _Reader:
    def __init__(self, source: FileSource, caches: IndexCaches | None) -> None:
        self.source = source
        # parsed files by git blob id (indexer.corpus.cache): a job re-reads only what changed
        self.cache = caches.documents if caches is not None else None
        self.problems: list[Problem] = []
        self.docs: dict[str, frontmatter.Document] = {}
        self.texts: dict[str, str] = {}

    def problem(self, path: str, message: str, severity: str = "error") -> None:
        # every problem of the reader comes from the files and their paths: the user's
        self.problems.append(Problem(path, message, severity, user=True))  # type: ignore[arg-type]

    def load(self, path: str) -> frontmatter.Document | None:
        """The parsed file, or None (with a problem recorded) when it cannot be used."""
        if path in self.docs:
            return self.docs[path]
        key = content_id(self.source, path) if self.cache is not None else None
        try:
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is None:
                text = frontmatter.decode(path, self.source.read(path))
                doc = frontmatter.parse(path, text)
                if self.cache is not None:
                    self.cache.put(key, (text, doc))
            else:
                text, doc = cached
            validate_meta(path, doc.meta)
        except CorpusError as e:
            self.problems.append(Problem.from_error(e))
            return None
        self.docs[path] = doc
        self.texts[path] = text
        return doc


def validate_meta(path: str, meta: dict[str, Any]) -> None:
    """The checks every node's frontmatter passes (also run by the pre-receive hook)."""
    for key in ("vectorize", "generated"):
        if key in meta and not isinstance(meta[key], bool):
            raise FrontmatterError(path, f"`{key}` must be true or false, not {meta[key]!r}")
    for key in ("title", "lang", "parent_source_file"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], str):
            raise FrontmatterError(path, f"`{key}` must be a string, not {meta[key]!r}")
    if "order" in meta and (not isinstance(meta["order"], int) or isinstance(meta["order"], bool)):
        raise FrontmatterError(path, f"`order` must be a whole number, not {meta['order']!r}")
    if (
        "generator" in meta
        and meta["generator"] is not None
        and not isinstance(meta["generator"], dict)
    ):
        raise FrontmatterError(path, "`generator` must be a mapping (it is written by Glossator)")


def markdown_paths(source: FileSource) -> Iterable[str]:
    return (p for p in source.paths() if p.endswith(".md"))


def layout(
    source: FileSource, policy: Policy, reader: _Reader | None = None
) -> dict[str, set[str]]:
    """Where each `.md` of `source` belongs, from its path alone: folder → the names of its
    source.md and summary.md. The problems the paths show go to `reader` (a throwaway one
    when None); `path_problems` returns them, for the pre-receive hook."""
    reader = reader if reader is not None else _Reader(source, None)
    # folder -> names of its .md files, and folder -> sub-folders holding files
    files: dict[str, set[str]] = {}
    nfc: dict[str, str] = {}  # paths compared NFC: `e\u0301` and `é` are one name to a reader
    for path in markdown_paths(source):
        twin = nfc.setdefault(unicodedata.normalize("NFC", path), path)
        if twin != path:
            reader.problem(
                path,
                f"same name as {twin!a} under Unicode normalization (NFC): rename one",
            )
            continue
        parts = path.split("/")
        if parts[0] != CORPUS_DIR:
            if len(parts) > 1 and path.startswith(policy.prompts_dir.rstrip("/") + "/"):
                continue
            if len(parts) > 1:
                reader.problem(
                    path,
                    "Markdown file outside corpus/ is not indexed; move it under corpus/<work>/…",
                )
            continue
        if source.is_symlink(path):
            reader.problem(
                path, "symbolic links are not followed; replace the link with the file itself"
            )
            continue
        name = parts[-1]
        depth = len(parts) - 2  # folders below corpus/
        if name not in (SOURCE, SUMMARY):
            reader.problem(
                path,
                f"only {SOURCE} and {SUMMARY} are read in corpus folders; this file is ignored",
                "warning",
            )
            continue
        if depth < 1:
            reader.problem(
                path, "a file directly in corpus/ belongs to no work; put it in corpus/<work>/"
            )
            continue
        if depth > 3:
            reader.problem(
                path,
                "too deep: the corpus has work, part and chapter folders only "
                "(corpus/<work>/<part>/<chapter>/source.md); move the file up to its chapter "
                "folder, or keep deeper headings inside the chapter's text",
            )
            continue
        if depth == 1 and name == SOURCE:
            reader.problem(
                path,
                "a text directly in the work's folder: put each chapter in its own folder, "
                "corpus/<work>/<chapter>/source.md (or corpus/<work>/<part>/<chapter>/source.md)",
            )
            continue
        files.setdefault("/".join(parts[:-1]), set()).add(name)
    return files


def path_problems(source: FileSource, policy: Policy) -> list[Problem]:
    """Every problem of the corpus that its paths alone decide (the layout: files outside
    corpus/, too deep, links, NFC twins, a folder both a piece and a part, a part with no
    chapters), read from names only, no file: the pre-receive hook refuses their errors."""
    reader = _Reader(source, None)
    files = layout(source, policy, reader)
    for work_folder in sorted({"/".join(f.split("/")[:2]) for f in files}):
        for sub, names, chapters in _subfolders(work_folder, files):
            problem = _subfolder_problem(sub, names, chapters)
            if problem is not None:
                reader.problem(*problem)
    return reader.problems


def _subfolders(
    work_folder: str, files: dict[str, set[str]]
) -> Iterator[tuple[str, set[str], list[str]]]:
    """(folder, its .md names, its chapter folders) for each folder of a work."""
    subs = sorted({"/".join(f.split("/")[:3]) for f in files if f.startswith(work_folder + "/")})
    for sub in subs:
        chapters = sorted(f for f in files if f.startswith(sub + "/") and SOURCE in files[f])
        yield sub, files.get(sub, set()), chapters


def _subfolder_problem(sub: str, names: set[str], chapters: list[str]) -> tuple[str, str] | None:
    """(path, message) when a work's folder is neither a piece nor a part."""
    if SOURCE in names and chapters:
        return (
            sub,
            "a folder cannot be both a liminary piece (it has source.md) and a part "
            "(it has chapter folders)",
        )
    if SOURCE not in names and not chapters:
        return (
            f"{sub}/{SUMMARY}" if SUMMARY in names else sub,
            "a part with no chapters: add chapter folders with a source.md, or remove it",
        )
    return None


def read_corpus(
    source: FileSource, policy: Policy | None = None, *, caches: IndexCaches | None = None
) -> Corpus:
    """Read every node of the corpus tree in `source`, with problems and parent fixes.

    `caches`: parsed files kept by blob id across reads (indexer.corpus.cache.IndexCaches)."""
    if policy is None:
        try:
            policy = parse_policy(source.read(POLICY_FILE) if source.exists(POLICY_FILE) else None)
        except CorpusError as e:
            corpus = Corpus(Policy())
            corpus.problems.append(Problem.from_error(e))
            return corpus
    corpus = Corpus(policy)
    reader = _Reader(source, caches)
    files = layout(source, policy, reader)

    works = sorted({"/".join(f.split("/")[:2]) for f in files})
    for work_folder in works:
        _read_work(corpus, reader, work_folder, files)
    corpus.problems.extend(reader.problems)
    return corpus


def _read_work(
    corpus: Corpus, reader: _Reader, work_folder: str, files: dict[str, set[str]]
) -> None:
    work_name = work_folder.split("/")[1]
    summary_path = f"{work_folder}/{SUMMARY}"
    doc = reader.load(summary_path) if SUMMARY in files.get(work_folder, set()) else None
    if SUMMARY in files.get(work_folder, set()) and doc is None:
        return  # its summary.md is unusable: without the work's title and lang nothing below can be placed
    meta = doc.meta if doc else {}
    title = meta.get("title") or ""
    if not title:
        title = humanize(work_name)
        reader.problem(
            summary_path,
            f"no `title`: using {title!r} until you set one in its frontmatter",
            "warning",
        )
    lang = meta.get("lang") or DEFAULT_LANG
    work = _node(
        corpus,
        reader,
        summary_path,
        doc,
        level=3,
        kind="work",
        folder=work_folder,
        work=work_name,
        title=title,
        heading=title,
        heading_path=title,
        parent=None,
        lang=lang,
        order=(0, work_name),
    )

    for sub, names, chapters in _subfolders(work_folder, files):
        problem = _subfolder_problem(sub, names, chapters)
        if problem is not None:
            reader.problem(*problem)
            continue
        if SOURCE in names:
            _read_section(corpus, reader, sub, None, work, work)
            continue
        part = _read_part(corpus, reader, sub, work)
        if part is not None:
            for chapter in chapters:
                _read_section(corpus, reader, chapter, "chapter", part, work)


def _read_part(corpus: Corpus, reader: _Reader, folder: str, work: Node) -> Node | None:
    path = f"{folder}/{SUMMARY}"
    name = folder.split("/")[-1]
    exists = reader.source.exists(path)
    doc = reader.load(path) if exists else None
    if exists and doc is None:
        return None
    meta = doc.meta if doc else {}
    title = meta.get("title") or ""
    if not title:
        title = humanize(name)
        reader.problem(
            path, f"no `title`: using {title!r} until you set one in its frontmatter", "warning"
        )
    return _node(
        corpus,
        reader,
        path,
        doc,
        level=2,
        kind="part",
        folder=folder,
        work=work.work,
        title=title,
        heading=title,
        heading_path=f"{_own_path(work)} > {title}",
        parent=work,
        lang=meta.get("lang") or work.lang,
        order=folder_order(name, meta),
    )


def _read_section(
    corpus: Corpus, reader: _Reader, folder: str, kind: str | None, parent: Node, work: Node
) -> None:
    """A chapter or a piece; `kind` None: directly under the work, a chapter when numbered."""
    src_path = f"{folder}/{SOURCE}"
    sum_path = f"{folder}/{SUMMARY}"
    name = folder.split("/")[-1]
    src = reader.load(src_path)
    if src is None:
        return
    if not src.body.strip():
        reader.problem(
            src_path,
            EMPTY_SOURCE,
        )
        return
    sum_exists = reader.source.exists(sum_path)
    summ = reader.load(sum_path) if sum_exists else None
    meta = src.meta
    title = meta.get("title") or (summ.meta.get("title") if summ else "") or ""
    if not title:
        title = humanize(name)
        reader.problem(
            src_path, f"no `title`: using {title!r} until you set one in its frontmatter", "warning"
        )
    lang = meta.get("lang") or parent.lang
    if kind is None:
        number = meta.get("number")
        kind = "piece" if number is None or str(number).strip() in ("", "0") else "chapter"
    heading = section_heading(title, meta, lang)
    heading_path = f"{_own_path(parent)} > {heading}"
    order = folder_order(name, meta)
    summary = None
    if not (sum_exists and summ is None):
        summary = _node(
            corpus,
            reader,
            sum_path,
            summ,
            level=1,
            kind=kind,
            folder=folder,
            work=work.work,
            title=title,
            heading=heading,
            heading_path=heading_path,
            parent=parent,
            lang=lang,
            order=order,
        )
    _node(
        corpus,
        reader,
        src_path,
        src,
        level=0,
        kind=kind,
        folder=folder,
        work=work.work,
        title=title,
        heading=heading,
        heading_path=heading_path,
        parent=summary,
        lang=lang,
        order=order,
        parent_path=sum_path,
    )


def _node(
    corpus: Corpus,
    reader: _Reader,
    path: str,
    doc: frontmatter.Document | None,
    *,
    level: int,
    kind: str,
    folder: str,
    work: str,
    title: str,
    heading: str,
    heading_path: str,
    parent: Node | None,
    lang: str,
    order: tuple[int, str],
    parent_path: str | None = None,
) -> Node:
    meta = dict(doc.meta) if doc else {}
    vectorize = meta.get("vectorize")
    expected_parent = parent.path if parent else parent_path
    node = Node(
        path=path,
        level=level,
        node_type=NODE_TYPES[level],
        kind=kind,
        folder=folder,
        work=work,
        title=title,
        heading=heading,
        heading_path=heading_path if level == 0 else summary_heading_path(heading_path, lang),
        parent_source_file=expected_parent,
        lang=lang,
        vectorize=corpus.policy.vectorize(level) if vectorize is None else bool(vectorize),
        meta=meta,
        body=frontmatter.normalize_text(doc.body) if doc else "",
        body_line=doc.body_line if doc else 1,
        text=reader.texts.get(path, ""),
        order=order,
        exists=doc is not None,
    )
    corpus.nodes[path] = node
    if doc is not None and meta.get("parent_source_file") != expected_parent:
        fixed = frontmatter.set_keys(node.text, {"parent_source_file": expected_parent})
        # the user's file keeps its BOM (decode dropped it) and its line endings
        bom = frontmatter.BOM if reader.source.read(path)[:3] == b"\xef\xbb\xbf" else ""
        corpus.changes.write(path, (bom + fixed).encode("utf-8"))
        node.text = fixed
        node.meta["parent_source_file"] = expected_parent
        node.body_line = frontmatter.parse(path, fixed).body_line
    return node
