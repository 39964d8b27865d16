"""Turns a corpus tree into summaries and JSONL sidecars (DESIGN §3–§5)."""
