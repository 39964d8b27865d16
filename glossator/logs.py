"""Expected failures logged as one line: the traceback at DEBUG only.

When the database goes away or its disk fills, procrastinate's worker logs each of
its loops' failures (polling, the listener, heartbeats, the job that met the outage)
with `logger.exception`: a 30-line traceback at ERROR, several a second, for an
outage the server already reports in one line (glossator.supervision.database) and recovers
from by itself. `quiet_expected_failures()` puts a filter on procrastinate's loggers (and asyncio's)
that keeps such a record at its level as one line (what failed, then the reason as
store.errors.describe_failure words it) and logs its traceback at DEBUG (`-vv`).
A failure that is not expected (a bug, an SQL error) keeps its traceback at ERROR.
It also puts psycopg_pool's line per reconnection attempt (`PoolReconnecting`: one
every second or two per pool while the database is down, store.db.RECONNECT_S, each
quoting the driver's message) at DEBUG.

    quiet_expected_failures()      # the composition root, where a worker or server starts
"""

from __future__ import annotations

import errno
import logging
import traceback

import psycopg
from procrastinate.exceptions import ConnectorException
from psycopg_pool import PoolTimeout

from hooks.attempt import JobFailed
from store.errors import describe_failure

# The loggers of procrastinate that log a failure with its traceback (its modules'
# `logging.getLogger(__name__)`), and asyncio's, which reports a task of procrastinate's
# that died of the outage ("Task exception was never retrieved"). A logger's filters
# see only its own records, not its children's, hence each one named.
QUIETED_LOGGERS = (
    "asyncio",
    "procrastinate.worker",
    "procrastinate.utils",
    "procrastinate.manager",
    "procrastinate.job_manager",
    "procrastinate.psycopg_connector",
    "procrastinate.app",
    "procrastinate.periodic",
)


def expected_reason(error: BaseException) -> str | None:
    """One line saying why, for a failure the server expects and recovers from; None
    for anything else (a bug keeps its traceback)."""
    if isinstance(error, JobFailed):
        return str(error)  # already one line, logged with its traceback at DEBUG
    if isinstance(error, ConnectorException) and error.__cause__ is not None:
        error = error.__cause__
    if isinstance(error, psycopg.OperationalError | PoolTimeout):  # gone, restarting, disk full
        return describe_failure(error)
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return "no space left on the device: free space where Glossator keeps its data"
    return None


class OneLineFailures(logging.Filter):
    """A record of an expected failure: its traceback moved to a DEBUG record, its
    message made one line ending with the reason."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        reason = expected_reason(error) if error is not None else None
        if error is None or reason is None:
            return True
        said = " ".join(record.getMessage().split())  # a repr may span lines
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: traceback\n%s", said, "".join(traceback.format_exception(error)))
        record.msg, record.args = f"{said}: {reason}", None
        record.exc_info, record.exc_text = None, None
        return True


# psycopg_pool's logger, and the starts of its messages (format strings) while it
# tries to replace a lost connection: "error connecting in %r: %s" and "reconnection
# attempt in pool %r failed after %s sec"
POOL_LOGGER = "psycopg.pool"
POOL_RECONNECTING = ("error connecting in ", "reconnection attempt in pool ")


class PoolReconnecting(logging.Filter):
    """psycopg_pool's warning for each failed reconnection attempt, at DEBUG: while the
    database is down the pools try every second or two (store.db.RECONNECT_S), and the
    outage is said once, in our words (glossator.supervision.database, the worker)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.levelno == logging.WARNING
            and isinstance(record.msg, str)
            and record.msg.startswith(POOL_RECONNECTING)
        ):
            if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
                return False
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def quiet_expected_failures() -> None:
    """Put the filters on procrastinate's loggers and psycopg_pool's (once: calling
    again adds nothing)."""
    for name in QUIETED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OneLineFailures) for f in logger.filters):
            logger.addFilter(OneLineFailures())
    pool = logging.getLogger(POOL_LOGGER)
    if not any(isinstance(f, PoolReconnecting) for f in pool.filters):
        pool.addFilter(PoolReconnecting())
