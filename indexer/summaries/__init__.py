"""Kept only for `fake.py` until the fakes move to tests/ (issue 27).

The summarizers are in `indexer.providers.summarizers`, the summaries step in
`indexer.indexing.summaries`.
"""
