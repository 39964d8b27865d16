"""Glossator: git-driven indexing server for books in Markdown (composition root)."""

__version__ = "0.1.0"
