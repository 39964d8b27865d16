"""The `<old> <new> <ref>` lines git gives pre-receive and post-receive hooks on stdin.

Kept apart (and import-free) so the post-receive hook, which runs on every
push before git answers the client, starts fast.
"""

from __future__ import annotations

from typing import TextIO

ZERO = "0" * 40  # the id git uses for "no commit": a new or a deleted ref


def parse_updates(stdin: TextIO) -> list[tuple[str, str, str]]:
    updates = []
    for line in stdin:
        parts = line.split()
        if len(parts) == 3:
            updates.append((parts[0], parts[1], parts[2]))
    return updates
