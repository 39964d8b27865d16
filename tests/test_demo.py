"""The README's first command (`make demo` = `python -m glossator.demo`) end to end:
a real `glossator serve` on embedded PostgreSQL, the real git client, the MCP client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_the_main_job(private_dir: Path) -> None:
    tmp_path = private_dir  # its embedded PostgreSQL: outside pytest's tmp root (private_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
    env |= {
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_REPOS_DIR": str(tmp_path / "repos"),
        "GLOSSATOR_EMBED_THREADS": "1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "glossator.demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "repository sophismes created" in out
    assert "remote: glossator: indexing queued" in out
    # the one-paragraph edit: one text embedded, the chapter's files committed back
    assert "1 text embedded" in out
    assert "chapitre-01-abondance-disette/source.md.jsonl" in out
    # MCP search over HTTP finds the petition for the candle makers' question
    assert "Chapitre VII (Pétition des fabricants de chandelles" in out
    assert "done in" in out
    # it ends with the command that deletes its repository, and that command works
    command = out.strip().splitlines()[-1].split()
    assert command == [".venv/bin/glossator", "repo", "delete", "sophismes"], out[-500:]
    gone = subprocess.run(
        [str(Path(sys.executable).with_name("glossator")), *command[1:], "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert gone.returncode == 0 and "deleted repository sophismes" in gone.stdout, gone.stderr
    assert not (tmp_path / "repos" / "sophismes.git").exists()
