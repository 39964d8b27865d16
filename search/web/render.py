"""Book text → HTML: Markdown by markdown-it-py with raw HTML off, the query's words marked.

Book text is untrusted (anyone with a push token writes it, an importer copies it
from the web), so nothing in it may become markup of its own:

- `html` is off: `<script>`, `<img onerror=…>` and every other tag in the text are
  printed as text, escaped, never parsed;
- links and images go through markdown-it's `validateLink`, which refuses
  `javascript:`, `vbscript:`, `file:` and `data:` (but for images of a safe type) URLs:
  such a link stays text; kept links get `rel="nofollow noopener noreferrer"`;
- the page's Content-Security-Policy (search.web.app) forbids inline script and any
  script, frame or image from elsewhere, should anything slip through.

Which words are the query's is search.excerpt's (`query_words`, folded, stemmed).
Highlighting works on the rendered tokens, not the HTML: each text token's words
that fold (case, accents) to a query word are wrapped in `<mark>` after escaping,
so a mark can never split a tag or an entity.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from search.excerpt import WORD, query_words
from search.excerpt import matches as _matches


def highlight(text: str, marks: frozenset[str]) -> str:
    """`text` escaped, the words matching `marks` in `<mark>`."""
    if not marks:
        return html.escape(text, quote=False)
    out: list[str] = []
    last = 0
    for m in WORD.finditer(text):
        if _matches(m.group(), marks):
            out.append(html.escape(text[last : m.start()], quote=False))
            out.append(f"<mark>{html.escape(m.group(), quote=False)}</mark>")
            last = m.end()
    out.append(html.escape(text[last:], quote=False))
    return "".join(out)


def _text_rule(tokens: Sequence[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    return highlight(tokens[idx].content, env.get("marks") or frozenset())


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


def renderer() -> MarkdownIt:
    """CommonMark with raw HTML off, tables and strikethrough, links made inert elsewhere."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule(
        "text", lambda self, tokens, idx, options, env: _text_rule(tokens, idx, options, env)
    )
    md.add_render_rule("link_open", _link_open)
    return md


class BookText:
    """Renders chunks of book text; one per web reader (a MarkdownIt is not shared state
    between requests: `render` keeps nothing)."""

    def __init__(self) -> None:
        self._md = renderer()

    def render(self, text: str, marks: Iterable[str] = ()) -> Markup:
        """A chunk of Markdown as safe HTML, `marks`' words in `<mark>`."""
        return Markup(self._md.render(text, {"marks": frozenset(marks)}))

    def plain(self, text: str, marks: Iterable[str] = ()) -> Markup:
        """Text shown as it is (no Markdown), escaped, words marked."""
        return Markup(highlight(text, frozenset(marks)))


__all__ = ["BookText", "highlight", "query_words"]
