"""Settings → the embedder, the summarizer and the reranker: one registry of providers.

    get_embedder(settings)     GLOSSATOR_EMBEDDER (`name` or `name:argument`) → an Embedder
    get_summarizer(settings)   GLOSSATOR_SUMMARIZER → a Summarizer
    get_reranker(settings)     GLOSSATOR_RERANKER → a Reranker, or None for `none`
    check(settings)            refuses a name no plugin registers (the CLI, once it has
                               read the settings: a bad choice stops a command at its start)
    available(plugins)         the providers each setting may name: the built-in plugins'
                               (DEFAULT_PLUGINS), then those GLOSSATOR_PROVIDER_PLUGINS names

A plugin is a Python module with `register(providers: Providers) -> None`, which adds
factories `(settings, argument) -> provider` under names of its own; a name another
plugin already registered is refused. The built-in providers are plugins too, loaded
the same way (llm's `DEFAULT_PLUGINS`): `glossator/default_plugins/`. Adding a built-in
is one module there with its `register`, one line in DEFAULT_PLUGINS, and a setting for
its key if it has one. Factories import their provider when chosen; the registry is
loaded when a provider is built or the CLI checks the choices (`check`), never when the
settings are read: a name no plugin registers is refused then, with the valid ones listed.

The providers in `indexer/` and `search/` take plain values (a model, an API key as
text, a base URL, a thread count); only the factories read the settings for them and
reveal their secrets, at the moment they hand them on (docs/architecture.md, "Where
configuration enters"). The test suite's recording fakes are a plugin
(`tests.fakes`, named by the tests' environment and passed to every process they
start): `fake` is no production choice.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from core.errors import SettingsError

if TYPE_CHECKING:  # the providers themselves are imported when chosen (their factories)
    from glossator.settings import Settings
    from indexer.providers.embedders import BaseEmbedder
    from indexer.providers.summarizers import Summarizer
    from search.rerank import Reranker

T = TypeVar("T")
# (settings, the argument after "name:") → the provider
EmbedderFactory = Callable[["Settings", str], "BaseEmbedder"]
SummarizerFactory = Callable[["Settings", str], "Summarizer"]
RerankerFactory = Callable[["Settings", str], "Reranker | None"]

PLUGINS_VARIABLE = "GLOSSATOR_PROVIDER_PLUGINS"


@dataclass
class Providers:
    """Factories by the name a setting gives, one table per kind (what a plugin's
    `register` fills)."""

    embedders: dict[str, EmbedderFactory] = field(default_factory=dict)
    summarizers: dict[str, SummarizerFactory] = field(default_factory=dict)
    rerankers: dict[str, RerankerFactory] = field(default_factory=dict)

    def names(self, kind: str) -> tuple[str, ...]:
        """The names of one kind ("embedders", "summarizers", "rerankers")."""
        table: dict[str, object] = getattr(self, kind)
        return tuple(table)


# The built-in providers, loaded as a third party's plugin is (STYLE.md 2), in this
# order (the order a refusal lists the names in).
DEFAULT_PLUGINS = (
    "glossator.default_plugins.offline",
    "glossator.default_plugins.voyage",
    "glossator.default_plugins.anthropic",
    "glossator.default_plugins.openai",
)
KINDS = ("embedders", "summarizers", "rerankers")

# -- plugins ---------------------------------------------------------------------------

_PLUGINS: dict[str, Providers] = {}  # module → what its register() added, once per process


def plugin(module: str) -> Providers:
    """What the plugin `module` registers: imported and registered once per process (a
    test may lend its factories a recording fake for its duration)."""
    if module in _PLUGINS:
        return _PLUGINS[module]
    try:
        loaded = importlib.import_module(module)
    except ImportError as e:
        raise SettingsError(
            f"{module} cannot be imported ({e}): install it or put it on PYTHONPATH, "
            f"or take it out of {PLUGINS_VARIABLE}"
        ) from None
    register = getattr(loaded, "register", None)
    if not callable(register):
        raise SettingsError(
            f"{module} has no register(providers) function: {PLUGINS_VARIABLE} names "
            "provider plugin modules"
        )
    found = Providers()
    register(found)
    _PLUGINS[module] = found
    return found


def available(plugins: Sequence[str] = ()) -> Providers:
    """The built-in plugins' providers, then those of each plugin module named (in order);
    a name registered twice is refused: a plugin adds names, it replaces none."""
    out = Providers()
    for module in (*DEFAULT_PLUGINS, *plugins):
        found = plugin(module)
        for kind in KINDS:
            table: dict[str, object] = getattr(out, kind)
            if taken := sorted(set(found.names(kind)) & set(table)):
                raise SettingsError(
                    f"{module} registers {kind} another plugin already names "
                    f"({', '.join(taken)}): a plugin adds names, it replaces none"
                )
            table.update(getattr(found, kind))
    return out


def _factory(table: dict[str, Callable[..., T]], variable: str, spec: str) -> Callable[..., T]:
    name = spec.partition(":")[0]
    try:
        return table[name]
    except KeyError:  # checked here, where it is chosen: the settings import no plugin
        raise SettingsError(
            f"{variable}={spec!r}: unknown provider {name!r}; expected one of "
            f"{', '.join(table)} ({PLUGINS_VARIABLE} names plugins that add more)"
        ) from None


# -- settings → providers ----------------------------------------------------------------


def check(settings: Settings) -> None:
    """Refuse a provider name no plugin registers, or a plugin that cannot load, before
    anything is built (SettingsError, naming the valid choices)."""
    found = available(settings.provider_plugins)
    _factory(found.embedders, "GLOSSATOR_EMBEDDER", settings.embedder)
    _factory(found.summarizers, "GLOSSATOR_SUMMARIZER", settings.summarizer)
    _factory(found.rerankers, "GLOSSATOR_RERANKER", settings.reranker or "none")


def get_embedder(settings: Settings) -> BaseEmbedder:
    """The embedder GLOSSATOR_EMBEDDER names."""
    spec = settings.embedder
    table = available(settings.provider_plugins).embedders
    return _factory(table, "GLOSSATOR_EMBEDDER", spec)(settings, spec.partition(":")[2])


def get_summarizer(settings: Settings) -> Summarizer:
    """The summarizer GLOSSATOR_SUMMARIZER names (`name` or `name:argument`)."""
    spec = settings.summarizer
    table = available(settings.provider_plugins).summarizers
    return _factory(table, "GLOSSATOR_SUMMARIZER", spec)(settings, spec.partition(":")[2])


def get_reranker(settings: Settings) -> Reranker | None:
    """The reranker GLOSSATOR_RERANKER names, or None for `none`."""
    spec = settings.reranker or "none"
    table = available(settings.provider_plugins).rerankers
    return _factory(table, "GLOSSATOR_RERANKER", spec)(settings, spec.partition(":")[2])
