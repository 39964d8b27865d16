"""Which sections of a book to leave out (`--exclude`, `--skip-front-matter`)."""

from __future__ import annotations

import re

from indexer.importers.common import ImportSourceError, fold, same_title

# Titles of a translator's or editor's pieces, of title pages, and of the page
# Wikisource appends to its exports (wikimedia/ws-export: title.xhtml first,
# about.xhtml last): not the author's text.
FRONT_MATTER = re.compile(
    r"traduct|translat|editeur|editor|notice|avertissement|"
    r"^\s*(page de )?titre\s*$|^\s*title page\s*$|^\s*couverture\s*$|^\s*cover\s*$",
    re.IGNORECASE,
)
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

    def excluded(self, title: str, *, front: bool = False, work_title: str | None = None) -> bool:
        """Leave this section out? `front`: it stands before the first part of the work.

        With --skip-front-matter, a front entry titled like the work itself goes too:
        it is the book's main page (Wikisource's list of chapters), not a preface.
        """
        if any(p.search(title) or p.search(fold(title)) for p in self.patterns):
            return True
        if not self.skip_front_matter:
            return False
        folded = fold(title)
        if WIKISOURCE_ABOUT.search(folded):
            return True
        if front and work_title and same_title(title, work_title):
            return True
        return front and bool(FRONT_MATTER.search(folded))
