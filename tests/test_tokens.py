"""Access tokens: `glossator token create|list|revoke` on the test PostgreSQL, what the
database keeps (a digest, never the token), and the policy's answer for each
(core.access, glossator.wiring.stored_tokens)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from core.access import AccessPolicy, Role, token_digest
from glossator.cli import main
from glossator.settings import Settings
from glossator.wiring import database, stored_tokens


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    return {"GLOSSATOR_DATABASE_URL": db_url, "GLOSSATOR_DATA_DIR": str(tmp_path / "data")}


def create(env: dict[str, str], *args: str) -> str:
    r = CliRunner().invoke(main, ["token", "create", *args], env=env)
    assert r.exit_code == 0, r.output
    return r.stdout.strip()


def test_create_list_revoke_and_the_policy(env: dict[str, str], db_url: str) -> None:
    reader = create(env, "--read", "alpha", "--read", "gamma", "--note", "for Ada")
    pusher = create(env, "--push", "beta")
    admin = create(env, "--admin")
    everything = create(env, "--read", "*")
    assert len({reader, pusher, admin, everything}) == 4 and reader.startswith("glsr_")
    assert len(reader) > 40  # 256 random bits
    with psycopg.connect(db_url) as conn:
        kept = conn.execute("SELECT digest, role, repositories FROM access_tokens ORDER BY id")
        rows = kept.fetchall()
    assert rows[0] == (token_digest(reader), "read", ["alpha", "gamma"])
    assert rows[1][1:] == ("push", ["beta"]) and rows[2][1:] == ("admin", None)
    assert rows[3][1:] == ("read", None)
    stored = CliRunner().invoke(main, ["token", "list"], env=env).stdout
    assert all(secret not in stored for secret in (reader, pusher, admin))
    assert "alpha, gamma" in stored and "for Ada" in stored and "live" in stored

    settings = Settings.from_env(env).replace(anonymous_read=False)
    with database(settings) as db:
        policy = AccessPolicy.from_tokens(anonymous_read=False, stored=stored_tokens(db))

        def caller(token: str):  # type: ignore[no-untyped-def]
            return policy.caller(policy.grant(token_digest(token)))

        a = caller(reader)
        assert a.readable == frozenset({"alpha", "gamma"})
        assert a.may_read("alpha") and not a.may_read("beta") and not a.may_push("alpha")
        b = caller(pusher)
        assert b.may_push("beta") and b.may_read("beta") and not b.may_push("alpha")
        assert not b.may_read("alpha") and not b.admin
        assert caller(admin).admin and caller(admin).may_push("anything")
        assert caller(everything).readable is None and not caller(everything).may_push("x")
        assert policy.grant(token_digest("glsr_not-a-token")) is None

        revoked = CliRunner().invoke(main, ["token", "revoke", "1"], env=env)
        assert revoked.exit_code == 0 and "token 1 revoked" in revoked.stdout
        assert policy.grant(token_digest(reader)) is None  # from the next request on
        assert policy.grant(token_digest(pusher)).role is Role.PUSH  # type: ignore[union-attr]
    assert "revoked" in CliRunner().invoke(main, ["token", "list"], env=env).stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "give one role"),
        (["--read", "a", "--push", "b"], "give one role"),
        (["--admin", "--read", "a"], "give one role"),
        (["--read", "../etc"], "invalid repository name"),
        (["--read", "*", "--read", "a"], "every repository"),
        (["--read", "a", "--note", "x\x00"], "--note"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    env: dict[str, str], db_url: str, args: list[str], words: str
) -> None:
    r = CliRunner().invoke(main, ["token", "create", *args], env=env)
    assert r.exit_code == 1 and words in r.output, r.output
    assert "Traceback" not in r.output
    with psycopg.connect(db_url) as conn:
        if conn.execute("SELECT to_regclass('access_tokens')").fetchone()[0] is not None:
            assert conn.execute("SELECT count(*) FROM access_tokens").fetchone()[0] == 0


def test_revoking_an_unknown_token_is_an_error(env: dict[str, str]) -> None:
    r = CliRunner().invoke(main, ["token", "revoke", "99"], env=env)
    assert r.exit_code == 1 and "no live token 99" in r.output


def test_doctor_and_start_up_say_who_can_read_what() -> None:
    from glossator.checks import check_access

    opened = {f.check: f for f in check_access(Settings.from_env({}), None)}
    assert opened["access reads"].detail == "reads: open to anyone (GLOSSATOR_ANONYMOUS_READ=true)"
    assert opened["access MCP"].detail.startswith("MCP: open to anyone")
    exposed = Settings.from_env({"GLOSSATOR_HOST": "0.0.0.0"})
    assert {f.check: f for f in check_access(exposed, None)}["access MCP"].status == "warn"
    shut = Settings.from_env({"GLOSSATOR_ANONYMOUS_READ": "false"})
    closed = {f.check: f for f in check_access(shut, None)}
    assert closed["access reads"].detail.startswith("reads: tokens only")
    assert closed["access MCP"].detail == "MCP: tokens only"
    guarded = Settings.from_env({"GLOSSATOR_MCP_TOKEN": "m"})
    assert {f.check: f for f in check_access(guarded, None)}["access MCP"].detail == (
        "MCP: tokens only"
    )


def test_a_variables_token_is_known_without_asking_the_store() -> None:
    """`variable_grant` (what the boundary asks on the event loop, before a thread for the
    store): the variables' tokens, never the store's; `grant` still asks the store for
    the others."""
    asked: list[str] = []

    def store(digest: str) -> None:
        asked.append(digest)

    policy = AccessPolicy.from_tokens(anonymous_read=False, push=("p",), stored=store)
    granted = policy.variable_grant(token_digest("p"))
    assert granted is not None and granted.role is Role.PUSH
    assert policy.variable_grant(token_digest("stored")) is None
    assert asked == []
    assert policy.grant(token_digest("stored")) is None and asked == [token_digest("stored")]
