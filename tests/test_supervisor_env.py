"""The environment `glossator serve` gives its worker child (glossator.supervision.worker_process)."""

from __future__ import annotations

from pathlib import Path

from glossator.settings import Settings
from glossator.supervision.worker_process import worker_environment


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"GLOSSATOR_DATA_DIR": str(tmp_path), **env})


def test_the_worker_logs_at_the_servers_level(tmp_path: Path) -> None:
    """`serve -v` (or -vv) reaches the child: its INFO/DEBUG lines are logged too."""
    env = worker_environment(settings(tmp_path), "postgresql:///x", log_level="DEBUG")
    assert env["GLOSSATOR_LOG_LEVEL"] == "DEBUG"


def test_without_a_level_the_setting_passes_as_given(tmp_path: Path) -> None:
    env = worker_environment(settings(tmp_path, GLOSSATOR_LOG_LEVEL="warning"), "postgresql:///x")
    assert env["GLOSSATOR_LOG_LEVEL"] == "WARNING"
    assert env["GLOSSATOR_DATABASE_URL"] == "postgresql:///x"
    assert env["GLOSSATOR_DATA_DIR"] == str(tmp_path.resolve())
