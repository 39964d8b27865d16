"""The words of a query in a passage, and the part of a long passage that holds them.

    marks = query_words("la pétition des fabricants de chandelles")
    excerpt(long_text, marks, 420)     # '… des fabricants de chandelles, de bougies …'

A search page shows each hit's passage. A chunk longer than a page line or two (an
unpunctuated paragraph, a packed run of dialogue) was shown from its start, where the
searched words may not be: `excerpt` shows the window of the passage that holds the most
of them, as a search engine's snippet does, cut at word boundaries with "…" where text
is left out. The CLI's `search` and the web reader's search page use it; the MCP tools
give an agent the whole passage (`snippets` asks for openings instead).

Words compare folded (case and accents, `fold`) with a crude stemmer (`STEM_CHARS`), the
same rules that mark them in the web reader (search.web.render).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from indexer.providers.summarizers.extractive import stopwords

# Words of the query shorter than this are not marked (l', d', a…) even when they are
# no stop word: marking every "de" would hide the words that matter.
MIN_MARKED_CHARS = 3
# A marked word and a word of the text agree on this many first letters when both are
# at least this long: a crude stemmer that keeps plural and feminine forms
# (chandelle / chandelles, protection / protectionnistes) in any language with suffixes.
STEM_CHARS = 6
# How much of the window comes before its first matched word: enough to read the
# sentence it sits in, most of the window left for what follows
LEAD = 0.2
WORD = re.compile(r"\w+", re.UNICODE)


def fold(word: str) -> str:
    """Lower case, accents dropped: how two spellings of one word compare."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_words(query: str) -> frozenset[str]:
    """The folded words of `query` worth marking (no stop word of any language we know)."""
    stop = {fold(w) for w in stopwords("")}
    words = (fold(w) for w in WORD.findall(query))
    return frozenset(w for w in words if len(w) >= MIN_MARKED_CHARS and w not in stop)


def matches(word: str, marks: frozenset[str]) -> bool:
    folded = fold(word)
    if folded in marks:
        return True
    if len(folded) < STEM_CHARS:
        return False
    return any(len(m) >= STEM_CHARS and m[:STEM_CHARS] == folded[:STEM_CHARS] for m in marks)


def excerpt(text: str, marks: Iterable[str], limit: int) -> str:
    """`text` with its whitespace collapsed, or, when longer than `limit` characters, the
    window of about that many holding the most words of `marks` (the opening if none)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    marked = frozenset(marks)
    words = list(WORD.finditer(text))
    hits = [m.start() for m in words if marked and matches(m.group(), marked)]
    start = 0
    if hits:
        best = max(hits, key=lambda h: (sum(h <= o < h + limit * (1 - LEAD) for o in hits), -h))
        start = max(0, best - int(limit * LEAD))
    end = min(len(text), start + limit)
    if end == len(text):
        start = max(0, end - limit)
    if start > 0:  # begin on a word
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < end else start
    if end < len(text):  # end on a word
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    return ("… " if start > 0 else "") + text[start:end] + (" …" if end < len(text) else "")
