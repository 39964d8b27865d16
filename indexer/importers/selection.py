"""Which sections of a book to leave out (`--exclude`, `--skip-front-matter`)."""

from __future__ import annotations

import re

from indexer.importers.common import ImportSourceError, fold

# Titles of a translator's or editor's pieces, and of the page Wikisource appends
# to its exports: not the author's text.
FRONT_MATTER = re.compile(r"traduct|translat|editeur|editor|notice|avertissement", re.IGNORECASE)
WIKISOURCE_ABOUT = re.compile(r"a propos de cette edition|about this (e-?)?book", re.IGNORECASE)


class Selection:
    def __init__(self, exclude: tuple[str, ...] = (), skip_front_matter: bool = False) -> None:
        self.patterns = []
        for pattern in exclude:
            try:
                self.patterns.append(re.compile(pattern, re.IGNORECASE))
            except re.error as e:
                raise ImportSourceError(
                    f"--exclude {pattern!r}", f"not a regular expression ({e})"
                ) from None
        self.skip_front_matter = skip_front_matter

    def excluded(self, title: str, *, front: bool = False) -> bool:
        """Leave this section out? `front`: it stands before the first part of the work."""
        if any(p.search(title) or p.search(fold(title)) for p in self.patterns):
            return True
        if not self.skip_front_matter:
            return False
        folded = fold(title)
        return bool(WIKISOURCE_ABOUT.search(folded)) or (
            front and bool(FRONT_MATTER.search(folded))
        )
