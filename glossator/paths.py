"""Where a command finds the running server's directories.

`glossator serve` writes `<data_dir>/server.json` (its pid, repositories'
directory and URL) while it runs; a command run with the same data directory and no
`GLOSSATOR_REPOS_DIR` of its own takes the server's repositories from it, so a
desktop MCP client configured with the data directory alone (or nothing: the
per-user default) sees the freshness of the repositories the server holds.

    record_server(settings)      # serve: at start; forget_server(settings) at stop
    settings = attach(settings)  # every other command, once, in glossator.cli
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from glossator.settings import Settings

log = logging.getLogger(__name__)

SERVER_FILE = "server.json"


def _file(settings: Settings) -> Path:
    return Path(settings.data_dir).expanduser().resolve() / SERVER_FILE


def record_server(settings: Settings) -> None:
    path = _file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {
        "pid": os.getpid(),
        "repos_dir": str(Path(settings.repos_dir).expanduser().resolve()),
        "url": server_url(settings.host, settings.port),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info), "utf-8")
    tmp.replace(path)  # readers never see half a file


def server_url(host: str, port: int) -> str:
    """Where a command on this machine reaches a server listening on host:port."""
    if host in ("0.0.0.0", ""):  # every IPv4 address: the loopback is one
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def forget_server(settings: Settings) -> None:
    path = _file(settings)
    try:
        if json.loads(path.read_text("utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def running_server(settings: Settings) -> dict | None:
    """The running server's record for this data directory, if its process is alive."""
    try:
        info = json.loads(_file(settings).read_text("utf-8"))
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a server killed before it could forget: stale
    except PermissionError:
        pass  # alive, another user's
    return info


def attach(settings: Settings) -> Settings:
    """The settings with the running server's repositories when none were given."""
    if settings.source("repos_dir") != "default":
        return settings
    info = running_server(settings)
    if info is None or not info.get("repos_dir"):
        return settings
    repos = Path(info["repos_dir"])
    if repos != Path(settings.repos_dir).expanduser().resolve():
        log.info("using the repositories of the running server (pid %s): %s", info["pid"], repos)
    return settings.with_default(repos_dir=repos)
