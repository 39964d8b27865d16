"""Base of the errors Glossator raises on purpose; each says how to fix the problem.

    GlossatorError
     ├── SettingsError                 a bad, missing or unknown setting (glossator.settings
     │                                 raises it; a lower layer too when a value it was given
     │                                 cannot work, e.g. a summarizer spec without a model)
     ├── indexer.corpus.errors.CorpusError    a corpus file that cannot be used (names the file)
     └── …                             each package adds its own below this one

The CLI, the HTTP app, the git hooks (`remote:` lines) and the MCP server turn
these into messages at one boundary each; elsewhere they just propagate.
"""


class GlossatorError(Exception):
    """An error whose message is meant for the user."""


class SettingsError(GlossatorError, ValueError):
    """A setting is unknown, missing or has a bad value. The message says how to fix it.

    Here, not in glossator.settings, so that a lower layer handed a value it cannot use
    raises the error the CLI maps to exit status 2 without importing the composition root.
    """
