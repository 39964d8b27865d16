"""The indexing itself: a corpus → summaries → sidecars, as one `Changes`.

pipeline.py   index(): the steps in order (what `glossator index` and the worker run)
plan.py       what each summary is made from, and whether it is due
prompts.py    which prompt summarises a node (default_prompts/ is package data)
summaries.py  generate(): the due summaries, bottom-up
recipes.py    what text a chunk's vector is computed from
sidecars.py   build(): every node's X.md.jsonl
"""
