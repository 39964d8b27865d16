"""The offline summarizer: the inputs' most central sentences, in reading order.

No model, no network, numpy only, deterministic. Each sentence becomes a TF-IDF
vector (the work's language's stop words dropped: French, English, German lists,
all of them for another language; its abbreviations do not end a sentence); a sentence's centrality is its cosine with
the centroid of all sentences. Sentences are picked by maximal marginal
relevance (central, but not a repeat of one already picked) until the level's
token budget is full, then put back in reading order: one paragraph per input.

Headings, footnote definitions and footnote references (`[^3]`) are not text
to summarise: they are left out, so every sentence of a summary is a sentence of
its input with only its footnote marks removed.

Dialogue is read by the exchange: in an input whose paragraphs are mostly lines of
dialogue (short, `LINE_CHARS`, and opening as a turn), consecutive paragraphs short enough are one unit (an
exchange, up to a third of the budget, `EXCHANGE_SHARE`) instead of sentences, so that
a summary of a scene holds who says what to whom rather than one-liners torn from
their replies; a longer paragraph there (narration, a speech) is read by the sentence
as in prose. An input of prose (its median paragraph longer) is read sentence by
sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from indexer.corpus import words as word_lists
from indexer.corpus.markdown import blocks
from indexer.corpus.tokens import count_tokens
from indexer.providers.summarizers.base import (
    Summarizer,
    SummaryRequest,
    SummaryResponse,
    UnsummarizableError,
)

ALGORITHM = "tfidf-centroid-mmr"  # recorded as the generator's model
RELEVANCE = 0.75  # MMR trade-off: 1.0 = centrality only, lower = more diversity
MIN_WORDS = 6  # shorter "sentences" (« Faut-il le dire ? ») carry no argument on their own
# A line of dialogue is shorter than this: the measure of a one-line paragraph in a
# dialogue-heavy Spanish novel from Project Gutenberg (median paragraph 65 characters,
# 56 % under 80).
LINE_CHARS = 80
# An exchange fills at most this share of the level's budget: a summary then holds at least
# three units for maximal marginal relevance to choose among (a 300-token chapter budget:
# ~100 tokens, ~400 characters, the low end of the packed units measured, 400-1,200).
EXCHANGE_SHARE = 1 / 3

_FOOTNOTE_DEF = re.compile(r"^\[\^[^\]]+\]:")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]]+\]")
_HEADING = re.compile(r"^#{1,6}\s")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
# a sentence ends at . ! ? … (possibly closed by quotes or brackets) before a space and
# a capital, a quote, a dash or a digit
_END = re.compile(r"(?<=[.!?…])(?:\s?[»”’\)\*_])*\s+(?=[«“\"—–\-(\d\*_A-ZÀÂÄÇÉÈÊËÎÏÔÖÙÛÜ])")
# a turn opens on a dash or quotation mark, or on a speaker's name in capitals and a period,
# a colon or a comma ("MARTINE, *les mains sur les côtés*"), after emphasis marks
_TURN = re.compile(
    r"^[*_]*(?:[—–\-«»“”„\"‘’‹›]|[A-ZÀ-ÖØ-Þ][A-ZÀ-ÖØ-Þ’' .\-]+[.:,]\s|[A-ZÀ-ÖØ-Þ][A-ZÀ-ÖØ-Þ’' \-]+\*)"
)
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# The word lists are package data, one file per language (indexer.corpus.words): a
# language without its own list gets every language's.


def abbreviations(lang: str = "fr") -> frozenset[str]:
    """Words whose period does not end a sentence ("M. Bugeaud", "Mr. Bennet", "z. B.")."""
    return word_lists.abbreviations(lang)


def stopwords(lang: str = "fr") -> frozenset[str]:
    return word_lists.stop_words(lang)


@dataclass(frozen=True)
class Sentence:
    input_index: int  # which input of the request
    index: int  # position in reading order over all inputs
    text: str


def clean_paragraphs(text: str) -> list[str]:
    """Paragraphs of prose: the paragraph blocks of indexer.corpus.markdown (no headings,
    no fenced code), without rules, footnote definitions or footnote marks.

    Read with the indexer's parser, so a summary sees the blocks chunking sees: a
    heading ends the paragraph above it and fenced code is not summarised as prose. The
    line rules stay inside a paragraph: a `#` line indented four columns or more (text
    to the parser) is dropped, and so are rules (`---`) and footnote definitions, which the parser leaves in paragraphs."""
    paragraphs: list[str] = []
    for block in blocks(text):
        if block.kind != "paragraph":
            continue
        current: list[str] = []
        in_note = False
        for line in block.lines:
            stripped = line.strip()
            if _FOOTNOTE_DEF.match(stripped):
                in_note = True  # the definition runs on over its continuation lines
                continue
            if in_note and line.startswith((" ", "\t")):
                continue
            in_note = False
            if _HEADING.match(stripped) or _RULE.match(stripped):
                continue
            stripped = stripped.lstrip("> ").strip() if stripped.startswith(">") else stripped
            current.append(_FOOTNOTE_REF.sub("", stripped).strip())
        paragraphs.append(" ".join(current))
    return [p for p in paragraphs if p]


def split_sentences(paragraph: str, lang: str = "fr") -> list[str]:
    """The sentences of one paragraph (the language's abbreviations and initials do not
    end one)."""
    known = abbreviations(lang)
    out: list[str] = []
    start = 0
    for m in _END.finditer(paragraph):
        before = paragraph[start : m.start()].rstrip("»”’)*_")
        last_word = re.findall(r"[\w\-]+(?=\.$)", before)
        if before.endswith(".") and last_word:
            word = last_word[-1].lower()
            if word in known or (len(word) == 1 and word.isalpha()) or "-" in word:
                continue  # "M. Bugeaud", "J.-B. Say"
        out.append(paragraph[start : m.start()].strip())
        start = m.end()
    tail = paragraph[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def words(sentence: str, lang: str = "fr") -> list[str]:
    return _content_words(_WORD.findall(sentence), stopwords(lang))


def _content_words(tokens: list[str], stop: frozenset[str]) -> list[str]:
    return [
        w
        for w in (t.lower().replace("’", "'") for t in tokens)
        if w not in stop and len(w) > 1 and w.split("'")[-1] not in stop
    ]


# Above this many sentence x vocabulary cells (128 MB of float64) the TF-IDF vectors are
# kept sparse. The dense matrix's products sum in BLAS's order, the sparse ones in another:
# equal scores (sentences whose words weigh alike: 28 and 29 of the example's introduction)
# then differ in their last bit the other way, and the tie goes to the other sentence. So
# below the bound the vectors stay dense, the very operations summaries were made with (the
# example's 44 committed summaries regenerate word for word, tests/test_summaries_select.py);
# above it, where the matrix took gigabytes (a whole book's level summary of ~30,000
# sentences, bench/book.py on the KJV: 4.8 GB, a third of the index's time), sparse.
DENSE_CELLS = 1 << 24


@dataclass(frozen=True)
class _Vectors:
    """The sentences' TF-IDF vectors, unit length: dense (`matrix`), or sparse (row `rows[k]`
    holds `values[k]` in column `columns[k]`, sorted by row then column)."""

    count: int
    width: int
    matrix: np.ndarray | None
    rows: np.ndarray
    columns: np.ndarray
    values: np.ndarray

    def centroid(self) -> np.ndarray:
        if self.matrix is not None:
            return self.matrix.mean(axis=0)
        total = np.bincount(self.columns, weights=self.values, minlength=self.width)
        return total.astype(np.float64) / self.count

    def dot(self, dense: np.ndarray) -> np.ndarray:
        """Each sentence's dot product with a vector over the vocabulary."""
        if self.matrix is not None:
            return self.matrix @ dense
        products = self.values * dense[self.columns]
        return np.bincount(self.rows, weights=products, minlength=self.count).astype(np.float64)

    def row(self, i: int) -> np.ndarray:
        if self.matrix is not None:
            return self.matrix[i]
        out = np.zeros(self.width)
        start, stop = np.searchsorted(self.rows, [i, i + 1])
        out[self.columns[start:stop]] = self.values[start:stop]
        return out


def _tfidf(rows: list[list[str]], dense_cells: int = DENSE_CELLS) -> _Vectors:
    """The vectors of sentences given as their content words.

    tf is sublinear (log1p of the count: a repeated word counts, not linearly), idf
    smoothed (log((1 + n) / (1 + df)) + 1), each row scaled to unit length. The counts
    are gathered sparse either way (no Python loop over a matrix's cells)."""
    vocab: dict[str, int] = {}
    row_ids: list[int] = []
    column_ids: list[int] = []
    for i, row in enumerate(rows):
        for w in row:
            row_ids.append(i)
            column_ids.append(vocab.setdefault(w, len(vocab)))
    width = max(1, len(vocab))
    # one entry per (sentence, word) with its count, sorted by row, then column
    keys = np.array(row_ids, dtype=np.int64) * width + np.array(column_ids, dtype=np.int64)
    unique, counts = np.unique(keys, return_counts=True)
    row_of, column_of = np.divmod(unique, width)
    if len(rows) * width <= dense_cells:
        matrix = np.zeros((len(rows), width), dtype=np.float64)
        matrix[row_of, column_of] = counts  # small integers: exact, as += 1.0 made them
        df = (matrix > 0).sum(axis=0)
        idf = np.log((1 + len(rows)) / (1 + df)) + 1.0
        matrix = np.log1p(matrix) * idf
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.where(norms == 0, 1.0, norms)
        return _Vectors(len(rows), width, matrix, row_of, column_of, counts)
    df = np.bincount(column_of, minlength=width)
    idf = np.log((1 + len(rows)) / (1 + df)) + 1.0
    values = np.log1p(counts.astype(np.float64)) * idf[column_of]
    norms = np.sqrt(np.bincount(row_of, weights=values * values, minlength=len(rows)))
    values = values / np.where(norms == 0, 1.0, norms)[row_of]
    return _Vectors(len(rows), width, None, row_of, column_of, values)


def select(
    sentences: list[Sentence],
    budget_tokens: int,
    lang: str = "fr",
    dense_cells: int = DENSE_CELLS,
) -> list[Sentence]:
    """The central, diverse sentences that fit `budget_tokens`, in reading order."""
    if not sentences:
        return []
    stop = stopwords(lang)
    tokens = [_WORD.findall(s.text) for s in sentences]  # once: the words and MIN_WORDS
    vectors = _tfidf([_content_words(t, stop) for t in tokens], dense_cells)
    centroid = vectors.centroid()
    norm = float(np.linalg.norm(centroid))
    relevance = vectors.dot(centroid / norm) if norm else np.zeros(len(sentences))
    sizes = [count_tokens(s.text) + 1 for s in sentences]
    eligible = [i for i, t in enumerate(tokens) if len(t) >= MIN_WORDS]
    if not eligible:
        eligible = list(range(len(sentences)))
    chosen: list[int] = []
    redundancy = np.zeros(len(sentences))
    used = 0
    # Maximal marginal relevance, one numpy pass a pick instead of a Python loop over the
    # remaining sentences (a whole book's level summary reads thousands: that loop was
    # quadratic in Python, bench/book.py --profile). The same float64 operations on the
    # same values, so the same picks; argmax takes the first of equal scores, i.e. ties
    # break on reading order, as before.
    remaining = np.zeros(len(sentences), dtype=bool)
    remaining[eligible] = True
    size = np.array(sizes)
    while remaining.any():
        if not (size[remaining] <= budget_tokens - used).any():
            break  # nothing left fits: every later pick would be skipped
        score = RELEVANCE * relevance - (1 - RELEVANCE) * redundancy
        best = int(np.argmax(np.where(remaining, score, -np.inf)))
        remaining[best] = False
        if used + sizes[best] > budget_tokens:
            continue
        chosen.append(best)
        used += sizes[best]
        redundancy = np.maximum(redundancy, vectors.dot(vectors.row(best)))
    return [sentences[i] for i in sorted(chosen)]


def is_line(paragraph: str) -> bool:
    """A line of dialogue: shorter than LINE_CHARS and opening as a turn does, on a dialogue
    mark (a dash or a quotation mark) or on its speaker's name in capitals ("JUST. — …")."""
    return len(paragraph) < LINE_CHARS and _TURN.match(paragraph) is not None


def is_dialogue(paragraphs: list[str]) -> bool:
    """Whether more than half of the paragraphs are lines of dialogue."""
    return sum(map(is_line, paragraphs)) * 2 > len(paragraphs)


def units(paragraphs: list[str], lang: str, exchange_tokens: int) -> list[str]:
    """The units a summary picks from: sentences; in dialogue, runs of consecutive
    paragraphs of at most `exchange_tokens` together (exchanges), a longer paragraph
    by the sentence."""
    if not is_dialogue(paragraphs):
        return [s for p in paragraphs for s in split_sentences(p, lang)]
    out: list[str] = []
    exchange: list[str] = []
    size = 0
    for paragraph in paragraphs:
        tokens = count_tokens(paragraph) + 1
        if exchange and (tokens > exchange_tokens or size + tokens > exchange_tokens):
            out.append(" ".join(exchange))
            exchange, size = [], 0
        if tokens > exchange_tokens:
            out.extend(split_sentences(paragraph, lang))
        else:
            exchange.append(paragraph)
            size += tokens
    if exchange:
        out.append(" ".join(exchange))
    return out


def sentences_of(request: SummaryRequest) -> list[Sentence]:
    out: list[Sentence] = []
    exchange_tokens = int(request.budget_tokens * EXCHANGE_SHARE)
    for n, item in enumerate(request.inputs):
        for text in units(clean_paragraphs(item.text), request.lang, exchange_tokens):
            out.append(Sentence(n, len(out), text))
    return out


class ExtractiveSummarizer(Summarizer):
    """Central sentences within the level's token budget; no LLM."""

    provider = "extractive"
    model = ALGORITHM
    context_tokens = None
    uses_prompt = False

    def extract(self, request: SummaryRequest) -> list[Sentence]:
        """The sentences the summary is made of, in reading order."""
        sentences = sentences_of(request)
        if not sentences:
            raise UnsummarizableError(
                request.path, "no sentences to summarise in its inputs (only headings or notes?)"
            )
        chosen = select(sentences, request.budget_tokens, request.lang)
        if not chosen:
            raise UnsummarizableError(
                request.path,
                f"no sentence fits the budget of {request.budget_tokens} tokens (a paragraph "
                "without sentence punctuation, or sentences longer than the budget: split "
                "it, or raise summaries.budget_tokens in glossator.toml)",
            )
        return chosen

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        paragraphs: list[str] = []  # one per input the sentences come from
        last_input = -1
        for s in self.extract(request):
            if s.input_index != last_input:
                paragraphs.append(s.text)
                last_input = s.input_index
            else:
                paragraphs[-1] += " " + s.text
        return SummaryResponse("\n\n".join(paragraphs), calls=1)
