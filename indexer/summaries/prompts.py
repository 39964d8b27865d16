"""Which prompt summarises a node: the corpus's own, else the packaged French default.

Prompts live with the text they summarise (DESIGN §4), so a change of prompt is a
commit like any other and regenerates exactly the summaries it concerns:

    <prompts_dir>/<work>/<level>.md     this work only           (level: 1, 2 or 3)
    <prompts_dir>/<level>.md            every work of the corpus
    indexer/prompts/<level>.md          the default shipped with Glossator

The prompt's sha256 is recorded in each summary's `generator`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from indexer import frontmatter
from indexer.errors import CorpusError
from indexer.policy import POLICY_FILE, Policy
from indexer.source import FileSource


@dataclass(frozen=True)
class Prompt:
    text: str
    origin: str  # the corpus file it came from, or "default"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def default_prompt(level: int) -> Prompt:
    text = resources.files("indexer").joinpath("prompts", f"{level}.md").read_text("utf-8")
    return Prompt(text.strip(), "default")


class Prompts:
    """Prompt lookup for one corpus, each file read once."""

    def __init__(self, source: FileSource, policy: Policy) -> None:
        self.source = source
        self.dir = policy.prompts_dir.strip("/")
        self._cache: dict[str, Prompt | None] = {}

    def for_node(self, work: str, level: int) -> Prompt:
        """The prompt of `level` for `work`; CorpusError naming a prompt file that is unusable."""
        for path in (f"{self.dir}/{work}/{level}.md", f"{self.dir}/{level}.md"):
            prompt = self._read(path)
            if prompt is not None:
                return prompt
        return default_prompt(level)

    def _read(self, path: str) -> Prompt | None:
        if path in self._cache:
            return self._cache[path]
        prompt = None
        if self.source.exists(path):
            doc = frontmatter.read(path, self.source.read(path))
            text = doc.body.strip()
            if not text:
                raise CorpusError(
                    path,
                    "empty prompt: write the instructions for this level, or delete the file "
                    f"to use the default (prompts_dir is set in {POLICY_FILE})",
                )
            prompt = Prompt(text, path)
        self._cache[path] = prompt
        return prompt
