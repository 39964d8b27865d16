"""Piped output is as wide as its content (issue 23): every command that prints text or
a table, its stdout a pipe (CliRunner's is no terminal), measured in bytes.

Rich lays a piped page out 100,000 columns wide so that no table wraps; whatever
expands to that width (an indented passage, a centred title) once wrote 100,000
spaces a line: `glossator search … -k 10 > out.txt` was 1 MB. The bound below is the
content's own size: no line ends with a space, and the page is within a few times
the characters it carries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from glossator.cli import main
from tests.plugins.search import HACHES, PETITION

# a page of ten hits carries ~10 excerpts of at most 420 characters plus citations: a few
# KB; padded to the piped width it was 1 MB. 64 KB holds every page below with room.
PAGE_BOUND = 64_000


def run(args: list[str], db_url: str, tmp_path: Path) -> Result:
    env = {
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_REPOS_DIR": str(tmp_path / "repos"),
        "GLOSSATOR_LOG_LEVEL": "WARNING",
    }
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def assert_unpadded(result: Result, *, wide_line: int = 0) -> None:
    out = result.stdout
    assert out.strip(), result.output
    padded = [line for line in out.splitlines() if line != line.rstrip()]
    assert not padded, (len(out.encode()), padded[0][:200])
    assert len(out.encode()) < PAGE_BOUND, len(out.encode())
    if wide_line:  # a table row stays one line: not wrapped at 80 columns
        assert max(len(line) for line in out.splitlines()) >= wide_line


def test_every_command_s_piped_output_is_as_wide_as_its_content(
    search_db_url: str, tmp_path: Path
) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"query": "des haches émoussées", "relevant": [f"{HACHES}/source.md"]}),
        "utf-8",
    )
    (tmp_path / "repos").mkdir()
    commands = [
        ["search", "la pétition des fabricants de chandelles contre le soleil", "-k", "10"],
        ["search", "chandelles", "-k", "10", "--mode", "bm25", "--parent"],
        ["search", "zzzxq", "--mode", "bm25"],  # no hit: the freshness lines alone
        ["eval", str(queries), "--by-kind", "--misses"],
        ["outline", "--excerpts"],
        ["show", f"{PETITION}/source.md", "--context", "2"],
        ["show", f"{PETITION}/summary.md", "--children"],
        ["context", "pourquoi les fabricants de chandelles se plaignent du soleil"],
        ["db", "status"],
        ["status"],
        ["doctor"],
        ["config"],
    ]
    sizes = {}
    for args in commands:
        result = run(args, search_db_url, tmp_path)
        # doctor exits 1 when a check fails (no repositories here): its page still counts
        assert result.exit_code in ((0, 1) if args[0] in ("doctor", "status") else (0,)), (
            args,
            result.output,
        )
        assert_unpadded(result, wide_line=100 if args[0] == "config" else 0)
        sizes[" ".join(args[:2])] = len(result.stdout.encode())
    # ten hits with their excerpts: kilobytes, not the megabyte the padding made
    assert sizes["search la pétition des fabricants de chandelles contre le soleil"] > 1_000


@pytest.mark.parametrize("width", [None, "300"])
def test_a_piped_search_ignores_columns(
    search_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: str | None
) -> None:
    """COLUMNS changed nothing before (issue 23); piped, neither wraps nor pads now."""
    if width is not None:
        monkeypatch.setenv("COLUMNS", width)
    result = run(
        ["search", "chandelles soleil", "-k", "3", "--mode", "bm25"], search_db_url, tmp_path
    )
    assert result.exit_code == 0, result.output
    assert_unpadded(result)
    assert f"bastiat:{PETITION}/source.md#" in result.stdout


def test_a_line_printed_in_pieces_keeps_its_spaces_and_loses_its_padding() -> None:
    """rich flushes after each print, one ending mid-line (`end=""`) too: the spaces
    before the rest of the line are content, those before its newline padding."""
    import io
    from typing import IO, cast

    from rich.console import Console

    from glossator.commands.base import PIPED_WIDTH, _Unpadded

    sink = io.StringIO()
    console = Console(
        file=cast(IO[str], _Unpadded(sink)), width=PIPED_WIDTH, soft_wrap=True, highlight=False
    )
    console.print("[red]error:[/red] ", end="")
    console.print("corpus/w/c/source.md: a message")
    console.print("trailing   ")
    console.print("last   ", end="")
    assert sink.getvalue() == "error: corpus/w/c/source.md: a message\ntrailing\nlast"
