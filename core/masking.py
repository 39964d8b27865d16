"""Showing that a secret is set without showing it (settings, `glossator config`, logs).

Here, at the bottom, because the composition root masks settings and the store masks
the database URL it names in an error: one rule for both.
"""

from __future__ import annotations

from typing import Any


def mask(value: Any) -> str:
    """Show that a secret is set without showing it."""
    if value in (None, "", ()):
        return "(unset)"
    if isinstance(value, tuple):
        return f"({len(value)} set, hidden)"
    text = str(value)
    if "://" in text and "@" in text:  # a URL with credentials: keep host and database
        scheme, rest = text.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return "****"
