"""Where `mnemos export -o FILE` writes: a file replaced only once the export has succeeded (a
failed export leaves an existing file as it was), or a device, pipe or descriptor written in
place."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from cli.common import fail


def _cannot_write(output: Path, err: OSError) -> str:
    return f"cannot write {output}: {err.strerror or err}"


def _in_place(output: Path) -> bool:
    """Whether ``output`` is written as it is, not replaced: a device, a pipe or a descriptor
    (``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/1``), whatever the shell made of it (a
    pipe, or a file it appends to: replaced, that file would lose what it held), or anything
    but a regular file or a directory."""
    if str(output).startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = output.stat().st_mode  # through links
    except OSError:
        return False  # not there yet, or not reachable: said below
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextmanager
def replacing(output: Path) -> Iterator[TextIO]:
    """``output`` to write, replaced only once the block has succeeded: the export is written to
    a temporary file beside it and renamed over it at the end (removed on failure), so a failed
    export leaves an existing file as it was, and no half-written one. A path that cannot be
    written (no such directory, a directory) is said as one line before the block runs. An
    existing file keeps its mode (a new one is the owner's only: 0600); a symlink is written
    through; a device, a pipe or a descriptor (/dev/stdout) is written in place (``_in_place``)."""
    if _in_place(output):
        try:
            # Appended: what the shell opened is as it left it (`>> log` keeps the log).
            special = output.open("a", encoding="utf-8")
        except OSError as err:
            fail(_cannot_write(output, err))
        with special:
            yield special
        return
    target = Path(os.path.realpath(output))
    try:
        existing: os.stat_result | None = target.stat()
    except FileNotFoundError:
        existing = None
    except OSError as err:  # a path through a file, a directory it may not search
        fail(_cannot_write(output, err))
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        fail(f"cannot write {output}: it is a directory")
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        # Owner-only: an export holds a person's messages and memory (as the keys file is 0600).
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as err:
        fail(_cannot_write(output, err))
    try:
        f = open(fd, "w", encoding="utf-8")  # noqa: SIM115 - closed below, before the rename
        try:
            yield f
        finally:
            f.close()
        if existing is not None:
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
        os.replace(temporary, target)
    except OSError as err:  # the block's own are lines already (run): closing, the rename
        temporary.unlink(missing_ok=True)
        fail(_cannot_write(output, err))
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
