"""Names every layer spells the same: defined once here, imported where they are used.

    NODE_TYPES[level]   the `node_type` of a node at `level` (0 source … 3 work summary),
                        DESIGN §3; the rows' `node_type` column holds these values
    SIDECAR_SUFFIX      `X.md` + this = its sidecar, written by the indexer, read by the
                        store's loader, watched by the worker
    DEFAULT_BRANCH      the branch a new repository starts with (`glossator repo create`)
                        and the one search, the lookups and the CLI read when none is named

A summary's heading-path mark (" (résumé)", " (summary)"…) depends on the work's language
and lives with the other labels in `indexer/lang.py`.
"""

from __future__ import annotations

from typing import Final

NODE_TYPES: Final = ("source", "section_summary", "part_summary", "work_summary")
SIDECAR_SUFFIX: Final = ".jsonl"
DEFAULT_BRANCH: Final = "main"
