"""A PDF page's lines as a reader sees them: running heads and feet gone, paragraphs rebuilt.

The lines come from a text layer (`pdf.py`, PDFium) or from OCR (`ocr.py`, Tesseract);
both give each line its page, position, size and weight, and everything here works on
those alone, by general rules rather than one book's:

- **Running heads and feet**: a page's first or last lines whose text, digits aside,
  comes back at the same height on several pages (`ADVENTURE I. A SCANDAL IN BOHEMIA 9`,
  `The War of the Worlds`), and page numbers there (`3`, `11 of 293`, `4/12`, `- 7 -`).
- **Paragraphs**: a line opens one when indented from the page's left margin, after a
  wider gap than the usual line spacing, or after a line that stopped short of the right
  margin; a paragraph runs on across a page break otherwise.
- **Words hyphenated at a line end** are joined (`pre-` / `dominates`), unless the book
  writes that word with its hyphen elsewhere and never without (`boot-` / `slitting`).
- **Headings**: a short line set larger or bolder than the body text; a drop capital
  (one big letter) is joined to its line.
- **Footnotes**: smaller lines below the body at a page's foot that start with their
  number become Markdown footnotes (`[^3]: …`), and the number glued to a word in the
  body becomes its call (`[^3]`).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class Line:
    page: int  # 0-based
    x0: float  # left edge, points
    x1: float  # right edge
    y: float  # baseline, points from the page's top (grows downwards)
    size: float  # the glyphs' height, points
    bold: bool
    text: str
    read: bool = False  # read by OCR: its text may differ from page to page by a letter

    @property
    def rows(self) -> int:
        """Printed lines it stands for: PDFium joins a line ending in a hyphen to the next."""
        return 1 + self.text.count(SOFT_HYPHEN)


@dataclass
class Block:
    """A paragraph or a heading, with where it starts."""

    kind: str  # "para" or "heading"
    text: str
    page: int
    y: float
    size: float = 0.0
    notes: list[str] = field(default_factory=list)  # footnote definitions met on its pages


# `3`, `- 7 -`, `11 of 293`, `Page 4`, `4/12`, `xii`: a page number on a line of its own,
# the first or last of its page (roman ones in small letters: `I` there is a section's)
_PAGE_NUMBER = re.compile(
    r"^[-–—\s]*(?:(?i:page|p\.|seite|pagina|página)\s*)?(?:\d{1,4}|[ivxlcdm]{1,7})"
    r"(?:\s*(?:of|/|de|von|di|sur)\s*\d{1,4})?[-–—\s]*$"
)
_DIGITS = re.compile(r"\d+")
# How many of a page's lines, from its top and from its foot, may be a running head or foot.
BAND = 3
# A line's text (digits aside) met at the same height on this many pages is a running head;
# three, since a title printed twice (half-title, title page) is not one.
MIN_REPEATS = 3
SOFT_HYPHEN = "\ufffe"  # PDFium's mark for a hyphen it found at a line's end
_LIGATURES = str.maketrans(
    {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
)
_SPACES = re.compile(r"[ \t\v\f\u00a0\u2000-\u200a\u202f]+")


def clean_text(text: str) -> str:
    """Ligatures undone, tabs and vertical tabs used as spaces made spaces; curly quotes kept."""
    return _SPACES.sub(" ", text.translate(_LIGATURES)).strip()


def merge_pieces(lines: list[Line]) -> list[Line]:
    """Pieces of one printed line (text objects side by side on one baseline, a raised note
    call among them) made one line; `lines` sorted top to bottom. A raised number set
    smaller is marked as a note call (`SUP`)."""
    groups: list[list[Line]] = []
    for line in lines:
        group = groups[-1] if groups else None
        # (a quotation mark alone stays so: it belongs to a drop capital, `_drop_capitals`)
        alone = not line.text.strip(_QUOTES + " ") or (
            group is not None and not group[0].text.strip(_QUOTES + " ")
        )
        if group is not None and line.page == group[0].page and not alone:
            base = max(group, key=lambda x: x.size)
            big = max(base.size, line.size)
            # (alike in size, or a raised number: a drop capital stands apart)
            alike = min(base.size, line.size) >= 0.6 * big or line.text.strip().isdigit()
            if alike and abs(line.y - base.y) <= 0.5 * big and not _overlaps(group, line):
                group.append(line)
                continue
        groups.append([line])
    out = []
    for group in groups:
        if len(group) == 1:
            out.append(group[0])
            continue
        group.sort(key=lambda x: x.x0)
        base = max(group, key=lambda x: len(x.text) * x.size)
        text = group[0].text
        for x in group[1:]:
            raised = x.text.isdigit() and x.size < 0.8 * base.size and x.y < base.y - 1
            text += f"{SUP[0]}{x.text}{SUP[1]}" if raised else f" {x.text}"
        out.append(Line(base.page, group[0].x0, max(x.x1 for x in group), base.y, base.size,
                        base.bold, text))  # fmt: skip
    return out


def _overlaps(group: list[Line], line: Line) -> bool:
    """Does `line` stand over a piece already in the group (another column, not a piece)?"""
    return any(line.x0 < x.x1 - 1 and x.x0 < line.x1 - 1 for x in group)


def _key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.split()).casefold())


def drop_running(pages: list[list[Line]]) -> list[list[Line]]:
    """The pages without their running heads, running feet and page numbers.

    From each edge of a page inwards, lines are furniture while each is a candidate (its
    text, digits aside, met at its height on three pages or more, or a page number) and
    the last of them stands apart from the text by more than a line's spacing: a short
    line of the text that happens to repeat at a page's top (`“Yes.”`) sits at the
    text's own spacing, and stays. A line set larger than the body text is a heading,
    never furniture (`Chapter #` opens each chapter at the same height)."""
    size = body_size(pages)
    spacing = line_spacing(pages, size)
    seen: Counter[tuple[str, int]] = Counter()
    for lines in pages:
        for line in {id(x): x for x in _band(lines)}.values():
            seen[(_key(line.text), round(line.y / 4))] += 1

    read: dict[int, list[str]] = {}  # OCR'd band lines by height, for likeness
    for lines in pages:
        for line in {id(x): x for x in _band(lines) if x.read}.values():
            read.setdefault(round(line.y / 4), []).append(_key(line.text))

    def candidate(line: Line, outer: bool) -> bool:
        at = round(line.y / 4)
        count = max(seen[(_key(line.text), a)] for a in (at - 1, at, at + 1))
        if line.read and count < MIN_REPEATS:
            count = _alike(
                _key(line.text), [k for a in (at - 1, at, at + 1) for k in read.get(a, [])]
            )
        running = count >= MIN_REPEATS and line.size <= size * 1.1
        return running or (outer and bool(_PAGE_NUMBER.match(line.text)))

    out = []
    for lines in pages:
        top = _furniture(lines, candidate, spacing)
        bottom = _furniture(lines[top:][::-1], candidate, spacing)
        out.append(lines[top : len(lines) - bottom])
    return out


# OCR reads a running head differently on each page (`- ‘Frankenstein; or, the…`; set in
# 7 pt on the noisy 150 dpi scan of tests/fixtures/pdf/, `Ptannensten. et the Meat…` /
# `Piankensten. at the Meat…`): lines this alike (difflib's ratio) count as one. There,
# 11 of 15 pairs of the garbled heads score 0.5 or more, pairs of first lines of text
# 0.12-0.37; the gap rule (`_furniture`) guards the rest.
ALIKE = 0.5


def _alike(key: str, others: list[str]) -> int:
    """How many of `others` are `key` as OCR reads it again (itself included)."""
    count = 0
    for other in others:
        m = difflib.SequenceMatcher(None, key, other, autojunk=False)
        if m.real_quick_ratio() >= ALIKE and m.quick_ratio() >= ALIKE and m.ratio() >= ALIKE:
            count += 1
    return count


def _furniture(lines: list[Line], candidate: Callable[[Line, bool], bool], spacing: float) -> int:
    """How many of `lines`, from the first, are a page's furniture (see drop_running)."""
    run = 0
    while run < min(BAND, len(lines)) and candidate(lines[run], run == 0):
        run += 1
    while run > 0:
        if run == len(lines) or abs(lines[run].y - lines[run - 1].y) > spacing * 1.3:
            return run
        run -= 1
    return 0


def _band(lines: list[Line]) -> list[Line]:
    return lines[:BAND] + lines[-BAND:]


def line_spacing(pages: list[list[Line]], size: float) -> float:
    """The body text's usual distance between baselines."""
    return _mode(
        (b.y - a.y for lines in pages for a, b in itertools.pairwise(lines)
         if abs(a.size - size) < 0.5 and abs(b.size - size) < 0.5 and 0 < b.y - a.y < 3 * size),
        size * 1.2,
    )  # fmt: skip


def body_size(pages: Iterable[list[Line]]) -> float:
    """The body text's size: the size of the most characters."""
    sizes: Counter[float] = Counter()
    for lines in pages:
        for x in lines:
            sizes[round(x.size, 1)] += len(x.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _mode(values: Iterable[float], default: float) -> float:
    counts = Counter(round(v) for v in values)
    return float(counts.most_common(1)[0][0]) if counts else default


def vocabulary(pages: Iterable[list[Line]]) -> tuple[set[str], set[str]]:
    """Words the book writes whole and words it writes with a hyphen (inside a line)."""
    whole: set[str] = set()
    hyphened: set[str] = set()
    for lines in pages:
        for x in lines:
            for w in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", x.text.replace(SOFT_HYPHEN, " ")):
                (hyphened if "-" in w else whole).add(w.casefold())
    return whole, hyphened


def join_hyphen(left: str, right: str, vocab: tuple[set[str], set[str]], soft: bool) -> str:
    """`pre` + `dominates` → `predominates`; `boot` + `slitting` → `boot-slitting` when the
    book writes it so. A hyphen PDFium did not mark (`soft` False) stays unless the joined
    word is the book's."""
    whole, hyphened = vocab
    a = re.search(r"[^\W\d_]+$", left)
    b = re.match(r"[^\W\d_]+", right)
    compound = re.search(r"[^\W\d_]-[^\W\d_]+$", left)  # `by-the-` / `bye`: a compound's
    if not a or not b or compound:
        return f"{left}-{right}"
    joined = (a.group() + b.group()).casefold()
    with_hyphen = f"{a.group()}-{b.group()}".casefold()
    keep = with_hyphen in hyphened and joined not in whole if soft else joined not in whole
    return f"{left}-{right}" if keep else left + right


def _unhyphen_inside(text: str, vocab: tuple[set[str], set[str]]) -> str:
    """PDFium joins a line ending in a hyphen to the next one, marking the hyphen."""
    # (and a word- break left inside a line, with a space after its hyphen: a line
    # break the PDF's maker drew as a space, `count- less` in The War of the Worlds)
    text = _BROKEN.sub(SOFT_HYPHEN, text)
    while SOFT_HYPHEN in text:
        left, _, right = text.partition(SOFT_HYPHEN)
        text = join_hyphen(left.rstrip(), right.lstrip(), vocab, soft=True)
    return text


_BROKEN = re.compile(r"(?<=[^\W\d_])- (?=[a-zà-ÿ])")


def _is_heading(line: Line, size: float, body_bold: bool) -> bool:
    words = line.text.split()
    if not words or len(words) > 16 or len(line.text) > 120:
        return False
    return line.size >= size * 1.15 or (line.bold and not body_bold and len(words) <= 12)


_NOTE_START = re.compile(r"^(\d{1,3}|[*†‡§])[.)]?\s+(\S.*)$")


def split_notes(
    lines: list[Line], size: float, bottom: float
) -> tuple[list[Line], list[tuple[str, str]]]:
    """A page's body lines, and its footnotes (`3 text` → (`3`, `text`)) set smaller at its foot."""
    k = len(lines)
    while k > 0 and lines[k - 1].size <= size * 0.9 and lines[k - 1].y > bottom * 0.6:
        k -= 1
    if k == len(lines) or not _NOTE_START.match(lines[k].text):
        return lines, []
    notes: list[tuple[str, str]] = []
    for x in lines[k:]:
        m = _NOTE_START.match(x.text)
        if m:
            notes.append((m.group(1), m.group(2)))
        elif notes:
            notes[-1] = (notes[-1][0], f"{notes[-1][1]} {x.text}")
    return lines[:k], notes


SUP = ("\x01", "\x02")  # around digits the text layer sets small and raised (pdf.py)
_SUP = re.compile(r"\s?\x01(\d+)\x02")


def _call(text: str, labels: dict[str, str]) -> str:
    """A raised number (`word ¹`), or a number glued to a word's end (`word3`, `word.3`),
    that is a footnote of the page → `word[^3]` (`labels`: number → the note's label)."""
    text = _SUP.sub(
        lambda m: (
            f"[^{labels[m.group(1)]}]"
            if m.group(1) in labels
            else m.group(0).replace(SUP[0], "").replace(SUP[1], "")
        ),
        text,
    )
    if not labels:
        return text
    alts = "|".join(sorted((re.escape(n) for n in labels), key=len, reverse=True))
    return re.sub(
        rf"([^\W\d_][.,;:!?’”\"]?)({alts})(?=\s|$|[.,;:])",
        lambda m: f"{m.group(1)}[^{labels[m.group(2)]}]",
        text,
    )


def _width(word: str, line: Line) -> float:
    """`word`'s width in `line`'s letters (their mean width there)."""
    return (line.x1 - line.x0) / max(1, len(line.text)) * (len(word) + 1)


_QUOTES = "“”‘’«»\"'„"


def _drop_capitals(lines: list[Line], size: float, whole: set[str]) -> list[Line]:
    """A drop capital (one letter, twice the body's size or more) joined to the line it
    opens: the first line to its right whose baseline is within its height."""
    out = list(lines)
    # (letters first, then the quotation marks that stand left of them)
    for cap in sorted(lines, key=lambda x: (not x.text.strip(_QUOTES + " "), -x.x0)):
        text = cap.text.strip()
        letters = text.strip(_QUOTES)
        if not (
            len(letters) <= 2
            and (letters.isalpha() or not letters)
            and text
            and (cap.size >= 1.5 * size or not letters)
        ):
            continue
        target = next(
            (
                x
                for x in out
                # (a quotation mark may stand a line above the line it opens)
                if x is not cap
                and x.x0 > cap.x1 - 1
                and cap.y - cap.size <= x.y <= cap.y + (1 if letters else 2 * cap.size)
            ),
            None,
        )
        if target is None:
            continue
        first = target.text.split()[0].strip(_QUOTES + ".,;:!?") if target.text.split() else ""
        glue = not letters or (text + first).casefold() in whole or first[:1].islower()
        target.text = text + ("" if glue else " ") + target.text
        out.remove(cap)
    return out


def blocks(pages: list[list[Line]]) -> list[Block]:
    """Paragraphs and headings in reading order, across page breaks."""
    size = body_size(pages)
    body = [x for lines in pages for x in lines if abs(x.size - size) < 0.5]
    left = _mode((x.x0 for x in body), 0.0)
    ends = sorted(x.x1 for x in body)
    right = ends[int(len(ends) * 0.9)] if ends else 0.0  # (justified text: most lines end there)
    spacing = line_spacing(pages, size)
    body_bold = sum(x.bold for x in body) > len(body) / 2
    vocab = vocabulary(pages)
    height = max((x.y for lines in pages for x in lines), default=0.0)
    out: list[Block] = []
    used: set[str] = set()  # footnote labels since the last heading
    open_para: Block | None = None
    last: Line | None = None
    for lines in pages:
        lines, found = split_notes(lines, size, height)
        # a label is used once in a chapter: a book numbering its notes by page gets `1-p12`
        labels = {
            n: n if n not in used else f"{n}-p{lines[0].page + 1 if lines else 0}" for n, _ in found
        }
        used.update(labels.values())
        notes = [f"[^{labels[n]}]: {clean_text(t)}" for n, t in found]
        lines = _drop_capitals(lines, size, vocab[0])
        for line in lines:
            text = clean_text(line.text)
            if not text:
                continue
            text = _call(_unhyphen_inside(text, vocab), labels)
            if _is_heading(line, size, body_bold):
                prev = out[-1] if out else None
                if (
                    prev
                    and prev.kind == "heading"
                    and abs(prev.size - line.size) < 0.1 * line.size
                    and last is not None
                    and last.page == line.page
                    and line.y - last.y < 2.5 * line.size
                ):
                    prev.text += " " + text  # a heading over two lines
                else:
                    out.append(Block("heading", text, line.page, line.y, line.size))
                    used = set(labels.values())
                open_para, last = None, line
                continue
            # (a line indented as far as the line before, both deeper than a paragraph's
            # indent, runs on: the lines beside a drop capital, a block quotation's)
            indent = line.x0 - left > size * 0.8 and not (
                last is not None
                and last.page == line.page
                and abs(line.x0 - last.x0) < size
                and last.x0 - left > size * 2.5
                and open_para is not None
            )
            gap = (
                last is not None
                and last.page == line.page
                and line.y - last.y - (line.rows - 1) * spacing > spacing * 1.6
            )
            # (the line before stopped where this line's first word would have fitted)
            short = (
                last is not None and last.x1 + _width(text.split()[0], last) < right - size * 0.5
            )
            if open_para is None or indent or gap or short:
                open_para = Block("para", text, line.page, line.y, line.size)
                out.append(open_para)
            else:
                tail = open_para.text
                if tail.endswith("-") and text[:1].isalpha():
                    open_para.text = join_hyphen(tail[:-1], text, vocab, soft=False)
                else:
                    open_para.text = f"{tail} {text}"
            last = line
        if notes:
            (open_para or (out[-1] if out else Block("para", "", 0, 0))).notes.extend(notes)
    return out
