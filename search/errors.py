"""Errors of search; each names what was asked and how to ask better.

    GlossatorError                     (core.errors)
     └── SearchError                   a query that cannot be answered as asked
          ├── BadQuery                 empty query, k out of range, unknown mode or level
          ├── UnknownRepository        no indexed rows for that repository (or branch)
          └── UnknownFile              no indexed rows for that source_file (or chunk)

The MCP server turns these into tool errors (the message, no traceback), the CLI
into one red line; anything else is a bug and is logged as one.
"""

from __future__ import annotations

from core.errors import GlossatorError


class SearchError(GlossatorError):
    """A search or lookup that cannot be answered as asked."""


class BadQuery(SearchError, ValueError):
    """An argument is out of range or malformed; the message says the allowed values."""


class UnknownRepository(SearchError, LookupError):
    """No rows are indexed for the repository (or its branch)."""


class UnknownFile(SearchError, LookupError):
    """No rows are indexed for the source file (or that chunk of it)."""
