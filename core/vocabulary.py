"""Names every layer spells the same: defined once here, imported where they are used.

    NODE_TYPES[level]   the `node_type` of a node at `level` (0 source … 3 work summary),
                        DESIGN §3; the rows' `node_type` column holds these values
    SIDECAR_SUFFIX      `X.md` + this = its sidecar, written by the indexer, read by the
                        store's loader, watched by the worker
    DEFAULT_BRANCH      the branch a new repository's HEAD names (`glossator repo create`),
                        and a repository's default when no HEAD is recorded (search.scope)
    head_for(branches)  the branch a HEAD naming no existing branch is pointed at

A summary's heading-path mark (" (résumé)", " (summary)"…) depends on the work's language
and lives with the other labels in `indexer/corpus/lang.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

NODE_TYPES: Final = ("source", "section_summary", "part_summary", "work_summary")
SIDECAR_SUFFIX: Final = ".jsonl"
DEFAULT_BRANCH: Final = "main"


def head_for(branches: Iterable[str]) -> str | None:
    """Which of `branches` a HEAD naming no existing branch is pointed at (a first push of
    `master` into a repository created on `main`): DEFAULT_BRANCH, else `master` (git's
    own default before 3.0), else the first by name; None when there is none."""
    names = sorted(set(branches))
    for preferred in (DEFAULT_BRANCH, "master"):
        if preferred in names:
            return preferred
    return names[0] if names else None
