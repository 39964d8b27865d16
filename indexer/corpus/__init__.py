"""The corpus model (DESIGN §3, §5): what a corpus repository holds and how it reads.

layout.py          the tree of nodes: levels, titles, heading paths, parent links
frontmatter.py     YAML frontmatter: parse, validate, update keys textually
policy.py          glossator.toml, the corpus policy
source.py          where files are read from and written to (FileSource, Changes)
cache.py           what was derived from a file, by its git blob id
markdown.py        the one Markdown parser: a text → its blocks and their lines
chunking.py        a Markdown body → chunks
tokens.py          token counts (cl100k_base, offline)
lang.py            a work's language: labels, slugs, text-search configuration
sidecar_format.py  the JSONL sidecar format (X.md.jsonl), read and written
errors.py          CorpusError, FrontmatterError, Problem
"""
