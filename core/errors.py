"""Base of the errors Glossator raises on purpose; each says how to fix the problem.

    GlossatorError
     ├── settings.SettingsError        a bad or unknown setting
     ├── indexer.errors.CorpusError    a corpus file that cannot be used (names the file)
     └── …                             each package adds its own below this one

The CLI, the HTTP app, the git hooks (`remote:` lines) and the MCP server turn
these into messages at one boundary each; elsewhere they just propagate.
"""


class GlossatorError(Exception):
    """An error whose message is meant for the user."""
