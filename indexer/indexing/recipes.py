"""Embedding recipes: what text a chunk's vector is computed from (contextual chunks).

A paragraph alone often does not say what it is about: « Mais, dira-t-on… »
opens half the paragraphs of a pamphlet. Its vector is therefore computed from
the paragraph preceded by where it sits:

    Sophismes économiques > Première série > Chapitre I (Abondance, disette)

    <the paragraph, exact>

The sidecar keeps the paragraph's exact text; only the vector changes. The
manifest's `embedding_recipe` names the recipe, so changing it re-embeds:
`passage+heading-v1` for paragraphs (level 0), the embedder's own recipe
(`passage`) for summaries, which carry their context in themselves. A renamed
part or chapter re-embeds the paragraphs below it (their input changed);
an edit still re-embeds only the paragraphs it touched.

Measured on the example corpus (bench/RESULTS.md). A variant that
also put the first 60 words of the chapter summary in the input (its hash in
the recipe name, so a summary edit re-embeds its chapter) scored best on the
tuning half but lost on the held-out half, and it made every edit re-embed the
whole chapter (the extractive summary moves with any edit): dropped.
"""

from __future__ import annotations

from indexer.corpus.layout import Node

CONTEXTUAL = "+heading-v1"


def recipe(node: Node, base: str) -> str:
    """The recipe name for the chunks of `node`; `base` is the embedder's own recipe."""
    return f"{base}{CONTEXTUAL}" if node.level == 0 else base


def embedding_input(recipe_name: str, heading_path: str, text: str) -> str:
    """The text the embedder sees for a chunk under `recipe_name`."""
    if not recipe_name.endswith(CONTEXTUAL):
        return text
    return f"{heading_path}\n\n{text}"
