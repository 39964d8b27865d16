"""Which prompt summarises a node: the corpus's own, else the packaged default for its language.

Prompts live with the text they summarise (DESIGN §4), so a change of prompt is a
commit like any other and regenerates exactly the summaries it concerns:

    <prompts_dir>/<work>/<level>.md   this work only           (level: 1, 2 or 3)
    <prompts_dir>/<level>.md          every work of the corpus
    default_prompts/<lang>/<level>.md the default shipped for the work's language (en)
    default_prompts/<level>.md        the default shipped with Glossator (French); for a
                                      language without its own, the English one

(`default_prompts/` is package data beside this module, in `indexer/indexing/`.)

The prompt's sha256 is recorded in each summary's `generator`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from indexer.corpus import frontmatter
from indexer.corpus import lang as languages
from indexer.corpus.errors import CorpusError
from indexer.corpus.policy import POLICY_FILE, Policy
from indexer.corpus.source import FileSource


@dataclass(frozen=True)
class Prompt:
    text: str
    origin: str  # the corpus file it came from, or "default"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


DEFAULT_PROMPT_LANGS = (
    "fr",
    "en",
)  # French at indexer/indexing/default_prompts/, the others in <lang>/


def default_prompt(level: int, lang: str = "fr") -> Prompt:
    """The packaged prompt for `lang`: French, English, else English (the request says
    which language the summary is written in)."""
    code = languages.code(lang)
    folder = resources.files("indexer.indexing").joinpath("default_prompts")
    if code != "fr":
        folder = folder.joinpath(code if code in DEFAULT_PROMPT_LANGS else "en")
    text = folder.joinpath(f"{level}.md").read_text("utf-8")
    return Prompt(text.strip(), "default" if code == "fr" else f"default ({code})")


class Prompts:
    """Prompt lookup for one corpus, each file read once."""

    def __init__(self, source: FileSource, policy: Policy) -> None:
        self.source = source
        self.dir = policy.prompts_dir.strip("/")
        self._cache: dict[str, Prompt | None] = {}

    def for_node(self, work: str, level: int, lang: str = "fr") -> Prompt:
        """The prompt of `level` for `work`; CorpusError naming a prompt file that is unusable."""
        for path in (f"{self.dir}/{work}/{level}.md", f"{self.dir}/{level}.md"):
            prompt = self._read(path)
            if prompt is not None:
                return prompt
        return default_prompt(level, lang)

    def _read(self, path: str) -> Prompt | None:
        if path in self._cache:
            return self._cache[path]
        prompt = None
        if self.source.exists(path):
            if self.source.is_symlink(path):
                # read from git, a link's content is its target's path: that would be
                # the prompt (the corpus reader refuses links for the same reason)
                raise CorpusError(
                    path,
                    "a symbolic link: links are not followed; replace it with the prompt file "
                    "itself",
                )
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
