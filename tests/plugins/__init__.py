"""Pytest plugins shared by the test tiers (listed in tests/conftest.py)."""
