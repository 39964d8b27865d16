"""Write an imported work under DEST: checks first, then atomic writes.

The files are checked with the corpus reader itself before anything is written
(over an overlay, nothing on disk yet), so an import never leaves a corpus that
`glossator index` would refuse, and the `parent_source_file` keys the reader
derives are written in the same pass.
"""

from __future__ import annotations

import logging
from pathlib import Path

from indexer.corpus import frontmatter
from indexer.corpus.errors import Problem
from indexer.corpus.layout import CORPUS_DIR, SOURCE, SUMMARY, folder_order, read_corpus
from indexer.corpus.policy import POLICY_FILE, parse_policy
from indexer.corpus.source import Changes, DirectorySource, MemorySource, OverlaySource
from indexer.importers.common import ImportSourceError
from indexer.importers.tree import Stats, Work, layout

log = logging.getLogger(__name__)

# The corpus policy with every default written out, so a user sees what can be set.
DEFAULT_POLICY = """\
# Glossator corpus policy (README, "The corpus repository"). Every value below is the default;
# uncomment and change one to override it. Unknown keys are refused.

[vectorize]
# Which levels get embeddings: "all" (0 paragraphs, 1 chapters, 2 parts, 3 works)
# or "economical" (summaries only; paragraphs are still found by BM25).
preset = "all"
# levels = [0, 1, 2, 3]        # list the levels yourself (overrides preset)

[summaries]
# "default": chapter ← its paragraphs, part ← its chapter summaries, work ← part
# summaries and liminary pieces. "long-context": part ← the full text of its chapters.
algorithm = "default"
# Prompts live with the text: prompts/<level>.md, prompts/<work>/<level>.md override.
prompts_dir = "prompts"
# Token budget of a summary, by level.
budget_tokens = { 1 = 300, 2 = 500, 3 = 700 }

[chunking]
# A paragraph over this many cl100k tokens is split at sentences, then words.
max_tokens = 400
# "auto": in a work whose paragraphs are mostly short lines (a play, a dialogue), short
# consecutive paragraphs are packed into retrieval units of 400 to 1,200 characters;
# false: one unit per paragraph; [min, max]: pack every work so.
pack_chars = "auto"
"""


class DestinationError(ImportSourceError):
    """DEST cannot receive the import as asked (a corpus is there, a path escapes)."""


def _inside(root: Path, path: str) -> None:
    """Refuse a target that resolves outside DEST (a symlinked folder, say)."""
    full = (root / path).resolve()
    if not full.is_relative_to(root):
        raise DestinationError(
            str(root / path),
            f"would be written outside {root} (through a symbolic link?); "
            "import into a plain folder",
        )


def existing_files(dest: Path, folder: str) -> list[str]:
    base = dest / folder
    if not base.exists():
        return []
    return sorted(p.relative_to(dest).as_posix() for p in base.rglob("*") if p.is_file())


def plan_import(dest: Path, works: list[Work], *, force: bool = False) -> tuple[Changes, Stats]:
    """Every file to write (and stale file to delete) for `works` under `dest`."""
    if dest.exists() and not dest.is_dir():
        raise DestinationError(str(dest), "exists and is not a folder; choose a folder for DEST")
    root = dest.resolve()
    changes = Changes()
    total = Stats()
    corpus_dir = dest / CORPUS_DIR
    if corpus_dir.exists() and any(corpus_dir.rglob("*.md")) and not force:
        raise DestinationError(
            str(corpus_dir),
            "already holds a corpus; import into an empty folder, or pass --force "
            "to replace the imported works (other works are kept)",
        )
    if not (dest / POLICY_FILE).exists():
        parse_policy(DEFAULT_POLICY.encode())  # the template must stay valid
        changes.write(POLICY_FILE, DEFAULT_POLICY.encode("utf-8"))
    folders: set[str] = set()
    for work in works:
        work_dir, files, stats = layout(work)
        if work_dir in folders:
            raise DestinationError(
                work_dir, "two works would share this folder; give them different titles"
            )
        folders.add(work_dir)
        for stale in existing_files(dest, work_dir):
            if stale not in files:
                changes.delete(
                    stale
                )  # --force replaces the work: no chapter of the old one lingers
        for path, data in files.items():
            _inside(root, path)
            changes.write(path, data)  # type: ignore[arg-type]
        total.works += stats.works
        total.parts += stats.parts
        total.chapters += stats.chapters
        total.pieces += stats.pieces
    return changes, total


def check_and_link(dest: Path, changes: Changes) -> list[Problem]:
    """Read the would-be corpus; add its parent fixes to `changes`; return its problems."""
    source = OverlaySource(DirectorySource(dest) if dest.exists() else MemorySource({}), changes)
    corpus = read_corpus(source)
    for path, data in corpus.changes.items():
        if data is not None and path in changes:
            changes.write(path, data)
    return corpus.problems


def apply(dest: Path, changes: Changes) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    DirectorySource(dest).apply(changes)
    for path, data in changes.items():  # remove folders the deletions emptied
        if data is None:
            parent = (dest / path).parent
            while parent != dest and parent.exists() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
    log.info("wrote %d files under %s", sum(d is not None for d in changes.values()), dest)


def plan_and_check(
    dest: Path, works: list[Work], *, force: bool = False
) -> tuple[Changes, Stats, list[Problem]]:
    """Every file the import would write, checked with the corpus reader; raises on an
    error problem (nothing is written either way)."""
    changes, stats = plan_import(dest, works, force=force)
    mine = {"/".join(p.split("/")[:2]) + "/" for p in changes if p.startswith(CORPUS_DIR + "/")}
    # problems of other works already in DEST are theirs, not this import's
    problems = [
        p
        for p in check_and_link(dest, changes)
        if p.path in changes or p.path.startswith(tuple(mine)) or p.path == POLICY_FILE
    ]
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        first = errors[0]
        raise ImportSourceError(
            first.path,
            f"{first.message} (the import would make an invalid corpus; "
            f"{len(errors)} problem(s), nothing written)",
        )
    if stats.chapters == 0:
        raise ImportSourceError(
            str(dest), "the import found no chapter; nothing written (check the source's headings)"
        )
    return changes, stats, problems


def import_works(
    dest: Path, works: list[Work], *, force: bool = False
) -> tuple[Stats, list[Problem]]:
    """Plan, check with the corpus reader, then write. Nothing is written on an error."""
    changes, stats, problems = plan_and_check(dest, works, force=force)
    apply(dest, changes)
    return stats, problems


def render_tree(changes: Changes, words: int = 8) -> str:
    """The files an import would write as an indented tree, each text with its first words."""
    lines: list[str] = []
    written = [p for p, d in changes.items() if d is not None]

    # in reading order, as the corpus reader sorts folders (the number in a folder's name),
    # not by name: `capitolo-01-…` sorts after `36-…` by name
    def order(p: str) -> tuple[object, ...]:
        folders = p.split("/")[:-1]
        return (tuple(folder_order(f, {}) for f in folders), p.endswith("/" + SOURCE))

    for path in sorted(written, key=order):
        if not path.startswith(CORPUS_DIR + "/"):
            continue
        parts = path.split("/")
        depth = len(parts) - 2
        data = changes[path]
        assert data is not None
        doc = frontmatter.read(path, data)
        title = doc.meta.get("title", "")
        if parts[-1] == SUMMARY:
            lines.append(f"{'  ' * (depth - 1)}{parts[-2]}/  {title}")
        else:
            first = " ".join(doc.body.split()[:words])
            lines.append(f"{'  ' * (depth - 1)}{parts[-2]}/  {title}: {first} …")
    return "\n".join(lines)
