"""YAML frontmatter: parse it, validate it, and update keys without touching the rest.

Updates are textual on purpose: re-dumping the YAML would reorder the user's keys
and drop their comments, and the body must stay byte for byte what they wrote.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import yaml

from indexer.corpus.errors import FrontmatterError

MAX_FILE_BYTES = 10 * 1024 * 1024  # a chapter is at most a few hundred KB; 10 MB is a mistake

# libyaml's C parser when present: the pure-Python one dominated a push job on a
# large corpus (every frontmatter is parsed on each run).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FENCE = "---"
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)\s*:")


@dataclass(frozen=True)
class Document:
    """A Markdown file split into its frontmatter and body."""

    meta: dict[str, Any]
    body: str
    body_line: int  # 1-based line number in the file of the body's first line
    has_frontmatter: bool
    raw_frontmatter: str  # the YAML text between the fences, "" when absent


def decode(path: str, data: bytes) -> str:
    """Bytes of a .md file to text, refusing what is not a UTF-8 text file."""
    if len(data) > MAX_FILE_BYTES:
        raise FrontmatterError(
            path,
            f"file is {len(data) / 1e6:.1f} MB, over the {MAX_FILE_BYTES // 1_000_000} MB limit; "
            "split it into chapters (one folder per chapter)",
        )
    if b"\x00" in data:
        raise FrontmatterError(path, "binary file (NUL bytes): a .md file must be UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FrontmatterError(
            path,
            f"not valid UTF-8 (byte {e.start}); re-save the file as UTF-8 "
            "(e.g. `iconv -f latin1 -t utf-8`)",
        ) from None
    return text.removeprefix("\ufeff")


BOM = "\ufeff"


def normalize_text(text: str) -> str:
    """Text as Glossator indexes it: no BOM, `\n` line ends, Unicode NFC.

    Line counts are unchanged for `\r\n` files, so line spans still point into
    the file as written; only the rows and summaries see the normalized text."""
    if text.startswith(BOM):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def line_ending(text: str) -> str:
    """The file's own line ending, from its first line: `\r\n` or `\n`."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def parse(path: str, text: str) -> Document:
    """Split `text` into frontmatter and body; raise FrontmatterError when malformed."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != _FENCE:
        return Document({}, text, 1, False, "")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r") in (_FENCE, "..."):
            raw = "\n".join(lines[1:i])
            body = "\n".join(lines[i + 1 :])
            return Document(_load(path, raw), body, i + 2, True, raw)
    raise FrontmatterError(
        path, "frontmatter opened with '---' on line 1 is never closed; add a '---' line after it"
    )


def _load(path: str, raw: str) -> dict[str, Any]:
    try:
        meta = yaml.load(raw, Loader=_Loader) if raw.strip() else {}
    except yaml.YAMLError as e:
        where = ""
        mark = getattr(e, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 2}"  # +1 for 1-based, +1 for the opening fence
        problem = getattr(e, "problem", None) or "invalid YAML"
        raise FrontmatterError(path, f"malformed YAML frontmatter{where}: {problem}") from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise FrontmatterError(
            path, f"frontmatter must be a mapping of keys to values, not a {type(meta).__name__}"
        )
    return meta


def read(path: str, data: bytes) -> Document:
    return parse(path, decode(path, data))


def set_keys(text: str, updates: dict[str, Any]) -> str:
    """Return `text` with top-level frontmatter keys set (None removes a key).

    Other keys, their order, comments and the whole body stay as they were; a
    file without frontmatter gets one.
    """
    bom = BOM if text.startswith(BOM) else ""
    text = text.removeprefix(BOM)
    cr = "\r" if line_ending(text) == "\r\n" else ""  # the lines we write end as the file's do
    lines = text.split("\n")
    if lines and lines[0].rstrip("\r") == _FENCE:
        end = next(
            (i for i in range(1, len(lines)) if lines[i].rstrip("\r") in (_FENCE, "...")), None
        )
        if end is None:
            raise ValueError("unclosed frontmatter")
        head, rest = lines[1:end], lines[end:]
        fence = lines[0]
    else:
        head, rest = [], [_FENCE + cr, *lines]
        fence = _FENCE + cr
    for key, value in updates.items():
        head = _set_key(head, key, value, cr)
    return bom + "\n".join([fence, *head, *rest])


def _set_key(head: list[str], key: str, value: Any, cr: str = "") -> list[str]:
    start = next(
        (i for i, line in enumerate(head) if (m := _TOP_KEY.match(line)) and m.group(1) == key),
        None,
    )
    new = [] if value is None else [line + cr for line in dump_key(key, value)]
    if start is None:
        return head + new
    end = start + 1
    # the key's block runs on over indented or blank continuation lines
    while end < len(head) and (head[end].startswith((" ", "\t", "-")) or not head[end].strip()):
        if not head[end].strip() and (
            end + 1 >= len(head) or not head[end + 1].startswith((" ", "\t"))
        ):
            break
        end += 1
    return head[:start] + new + head[end:]


def dump_key(key: str, value: Any) -> list[str]:
    """YAML lines for one key, unicode kept as is, stable across runs."""
    text = yaml.safe_dump(
        {key: value}, allow_unicode=True, sort_keys=False, width=10_000, default_flow_style=False
    )
    return text.rstrip("\n").split("\n")


def render(meta: dict[str, Any], body: str) -> str:
    """A whole file from a mapping and a body (for files the indexer creates)."""
    head = yaml.safe_dump(
        meta, allow_unicode=True, sort_keys=False, width=10_000, default_flow_style=False
    )
    return f"{_FENCE}\n{head}{_FENCE}\n{body}"
