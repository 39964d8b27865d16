"""The summarizer interface: one abstract method, everything else in the base class.

    SummarizerError            (a GlossatorError) one summary could not be made; names the file
     ├── RetryableError        429, 5xx, 529 overloaded, timeouts: retried with backoff
     ├── RefusalError          the model refused or answered nothing: never a summary
     └── UnsummarizableError   the input itself defeats this summarizer (no sentence fits
                               the budget, too large even after map-reduce): the same input
                               always fails the same way, so the indexer writes a fallback

A provider implements `summarize(request) -> SummaryResponse` for a request that
fits its context window. `Summarizer.run` adds what every provider needs:
retries with exponential backoff, map-reduce when the input is larger than the
window (never a silent truncation), and usage and cost accounting. Retries are
tenacity's, the wait injectable as `sleep`, for a provider that raises
`RetryableError`; a provider whose SDK retries (Anthropic) raises none, and its
last failure is a plain `SummarizerError` saying it gave up.
`run_many` runs a level's requests; a provider with a cheaper bulk path
(Anthropic's Message Batches) overrides it.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from core.errors import GlossatorError
from indexer.corpus import lang as languages
from indexer.corpus.tokens import count_tokens
from indexer.providers.retrying import RetryAfter

log = logging.getLogger(__name__)

T = TypeVar("T")


class SummarizerError(GlossatorError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class RetryableError(SummarizerError):
    """A transient failure (rate limit, overload, 5xx, timeout); `retry_after` in seconds."""

    def __init__(self, path: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(path, message)
        self.retry_after = retry_after


class RefusalError(SummarizerError):
    pass


class UnsummarizableError(SummarizerError):
    """Permanent for this input: retrying cannot help (indexer.providers.summarizers.fallback)."""


@dataclass(frozen=True)
class SummaryInput:
    """One piece of text to summarise: a chapter's body, or a lower summary."""

    label: str  # the heading of what it is ("Chapitre I (Abondance, disette)")
    text: str
    path: str = ""  # the file it came from


@dataclass(frozen=True)
class _Message:
    """The user message's wording in one language (`str.format` fields)."""

    head: str  # excerpt, title, lang, budget, words
    excerpt: str  # before the title in a map step of map-reduce
    text: str  # one input: label, text


_MESSAGES = {
    "fr": _Message(
        "Résumez {excerpt}« {title} ».\nLangue du résumé : {lang}. Longueur : au plus "
        "{budget} tokens (environ {words} mots).\n",
        "un extrait de ",
        "<texte titre=« {label} »>\n{text}\n</texte>",
    ),
    "en": _Message(
        "Summarise {excerpt}“{title}”.\nLanguage of the summary: {lang}. Length: at most "
        "{budget} tokens (about {words} words).\n",
        "an excerpt of ",
        '<text title="{label}">\n{text}\n</text>',
    ),
}


@dataclass(frozen=True)
class SummaryRequest:
    path: str  # the summary.md to write (for messages and fakes)
    level: int  # 1 section, 2 part, 3 work
    title: str  # heading path of the node summarised
    prompt: str  # the system prompt (instructions), cached by providers that can
    inputs: tuple[SummaryInput, ...]
    budget_tokens: int
    lang: str = "fr"
    partial: bool = False  # a map step of map-reduce: summarise a slice of the inputs

    def user_message(self) -> str:
        """The text sent after the prompt: what to summarise, in reading order (in French
        for a French work, in English otherwise: the language of the default prompts)."""
        words = _MESSAGES["fr" if languages.code(self.lang) == "fr" else "en"]
        head = words.head.format(
            excerpt=words.excerpt if self.partial else "",
            title=self.title,
            lang=self.lang,
            budget=self.budget_tokens,
            words=int(self.budget_tokens * 0.7),  # ~0.7 words a token in cl100k prose
        )
        parts = [words.text.format(label=i.label, text=i.text.strip()) for i in self.inputs]
        return head + "\n" + "\n\n".join(parts)

    def input_tokens(self) -> int:
        return count_tokens(self.prompt) + count_tokens(self.user_message())


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.calls += other.calls


@dataclass(frozen=True)
class SummaryResponse:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 1

    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cost_usd, self.calls)


class Summarizer(ABC):
    """Base of every provider. Subclasses set `provider`, `model` and implement `summarize`."""

    provider: str = ""
    model: str = ""
    # Input tokens a request may hold (prompt + texts); None: no limit (extractive).
    context_tokens: int | None = None
    uses_prompt = True  # False: the prompt does not change the output (extractive)

    def __init__(
        self,
        *,
        max_attempts: int = 5,
        backoff_seconds: float = 1.0,
        backoff_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds  # first wait; doubles each attempt, capped
        self.backoff_max = backoff_max
        self.sleep = sleep

    @abstractmethod
    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Summarise a request that fits the context window; raise SummarizerError."""

    # -- cost -------------------------------------------------------------------------

    def price(self, input_tokens: int, output_tokens: int) -> float | None:
        """US dollars for that many tokens, or None when the price is unknown."""
        return 0.0

    def estimate(self, request: SummaryRequest) -> Usage:
        """Tokens and cost one request should take (for the plan, before anything is spent)."""
        tokens = request.input_tokens()
        out = request.budget_tokens
        cost = self.price(tokens, out)
        return Usage(tokens, out, cost or 0.0, 1)

    # -- running ----------------------------------------------------------------------

    def run(self, request: SummaryRequest) -> SummaryResponse:
        """Summarise any request: map-reduce over the window, retries, usage summed."""
        return self._run(request, depth=0)

    def run_many(
        self,
        requests: Sequence[SummaryRequest],
        progress: Callable[[SummaryRequest], None] | None = None,
    ) -> dict[str, SummaryResponse | SummarizerError]:
        """Every request of one level; a failure is returned for its path, the rest go on."""
        out: dict[str, SummaryResponse | SummarizerError] = {}
        for request in requests:
            try:
                out[request.path] = self.run(request)
            except SummarizerError as e:
                out[request.path] = e
            if progress:
                progress(request)
        return out

    def fits(self, request: SummaryRequest) -> bool:
        return self.context_tokens is None or request.input_tokens() <= self.context_tokens

    def _run(self, request: SummaryRequest, depth: int) -> SummaryResponse:
        if self.fits(request):
            return self.with_retries(request.path, lambda: self.summarize(request))
        if depth >= 4:
            raise UnsummarizableError(
                request.path,
                f"input too large for {self.model}'s context even after {depth} map-reduce rounds; "
                "split the chapter or use a model with a longer context",
            )
        groups = self._split(request)
        log.info(
            "%s: input over %s's context window, summarising in %d slices",
            request.path,
            self.model,
            len(groups),
        )
        usage = Usage()
        partials: list[SummaryInput] = []
        for i, group in enumerate(groups, 1):
            part = replace(request, inputs=tuple(group), partial=True)
            response = self._run(part, depth + 1)
            usage.add(response.usage())
            partials.append(SummaryInput(f"{request.title} — extrait {i}", response.text))
        final = self._run(replace(request, inputs=tuple(partials)), depth + 1)
        usage.add(final.usage())
        return SummaryResponse(
            final.text, usage.input_tokens, usage.output_tokens, usage.cost_usd, usage.calls
        )

    def _split(self, request: SummaryRequest) -> list[list[SummaryInput]]:
        """Slices of the inputs that each fit the window; a long input splits at paragraphs."""
        assert self.context_tokens is not None
        room = self.context_tokens - count_tokens(request.prompt) - 200
        if room <= 200:
            raise SummarizerError(request.path, "the prompt alone fills the context window")
        pieces: list[tuple[SummaryInput, int]] = []
        for item in request.inputs:
            size = count_tokens(item.text) + 20
            if size <= room:
                pieces.append((item, size))
                continue
            for n, chunk in enumerate(_paragraph_slices(item.text, room), 1):
                pieces.append(
                    (SummaryInput(f"{item.label} ({n})", chunk, item.path), count_tokens(chunk))
                )
        groups: list[list[SummaryInput]] = [[]]
        used = 0
        for item, size in pieces:
            if groups[-1] and used + size > room:
                groups.append([])
                used = 0
            groups[-1].append(item)
            used += size
        if len(groups) == 1 and len(pieces) == len(request.inputs):
            # every input fits alone but not together with the prompt: halve it
            half = max(1, len(groups[0]) // 2)
            groups = [groups[0][:half], groups[0][half:]]
        return [g for g in groups if g]

    def with_retries(self, path: str, call: Callable[[], T]) -> T:
        """`call()` retried on RetryableError with exponential backoff, bounded."""

        def warn(state: RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome is not None else None
            log.warning(
                "%s: %s; retry %d/%d in %.1f s",
                path,
                getattr(failure, "message", failure),
                state.attempt_number,
                self.max_attempts - 1,
                state.next_action.sleep if state.next_action is not None else 0.0,
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=RetryAfter(
                wait_exponential(multiplier=self.backoff_seconds, max=self.backoff_max),
                cap=self.backoff_max,
            ),
            retry=retry_if_exception_type(RetryableError),
            sleep=self.sleep,
            before_sleep=warn,
        )
        try:
            return retrying(call)
        except RetryError as e:
            failure = e.last_attempt.exception()
            assert isinstance(failure, RetryableError)
            raise SummarizerError(
                path, f"{failure.message} (gave up after {e.last_attempt.attempt_number} attempts)"
            ) from failure


def _paragraph_slices(text: str, room: int) -> list[str]:
    """`text` cut at paragraph boundaries (then words) into slices of at most `room` tokens."""
    slices: list[str] = []
    current: list[str] = []
    used = 0
    for para in (p for p in text.split("\n\n") if p.strip()):
        size = count_tokens(para) + 2
        if size > room:  # one huge paragraph: cut at words
            words = para.split()
            step = max(1, len(words) * room // (size * 2))
            pieces = [" ".join(words[i : i + step]) for i in range(0, len(words), step)]
        else:
            pieces = [para]
        pieces = [cut for piece in pieces for cut in _character_slices(piece, room)]
        for piece in pieces:
            size = count_tokens(piece) + 2
            if current and used + size > room:
                slices.append("\n\n".join(current))
                current, used = [], 0
            current.append(piece)
            used += size
    if current:
        slices.append("\n\n".join(current))
    return slices


def _character_slices(text: str, room: int) -> list[str]:
    """`text` itself, or, when it is over `room` tokens with no space to cut at (a
    300 KB run of characters), consecutive slices of it that each fit."""
    size = count_tokens(text) + 2
    if size <= room:
        return [text]
    parts = -(-size * 2 // room)  # ceil, and twice over: tokens are not spread evenly
    step = max(1, -(-len(text) // parts))
    out: list[str] = []
    for i in range(0, len(text), step):
        out.extend(
            _character_slices(text[i : i + step], room) if step > 1 else [text[i : i + step]]
        )
    return out
