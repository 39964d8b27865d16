"""Kept only for `fake.py` until the fakes move to tests/ (issue 27).

The embedding providers are in `indexer.providers.embedders`.
"""
