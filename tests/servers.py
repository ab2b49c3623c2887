"""Real servers for the tests: a PostgreSQL server started from Debian's binaries.

The server runs as a child of the test process (never daemonized): it is started as the
``postgres`` user (initdb and postgres refuse root) in a temporary data directory, on a private
Unix socket and a free port on 127.0.0.1, and gets SIGQUIT (immediate shutdown) when the process
that started it dies, ``kill -9`` included (``PR_SET_PDEATHSIG``), so no test leaves a server
behind. Where the binaries are missing, :func:`postgres_binaries` installs Debian's
``postgresql`` when it can (root, apt-get) and otherwise says why in one line; the tests that need
the server skip with that line.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import HANG

#: the user the server runs as (Debian's package creates it)
PG_USER = "postgres"
#: a role with a password, for the tests of connections by URL (password from the environment)
ROLE, PASSWORD, DATABASE = "nteval", "nteval-test-secret-7f3a", "nteval"


def _bindir() -> Path | None:
    for cand in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (cand / "postgres").is_file() and (cand / "initdb").is_file():
            return cand
    return None


def postgres_binaries() -> tuple[Path | None, str]:
    """(the directory of Debian's PostgreSQL server binaries, "") or (None, why not). Installs
    the ``postgresql`` package first when it is missing and this process may (root + apt-get)."""
    found = _bindir()
    if found is not None:
        return found, ""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, "PostgreSQL is not installed (Debian: apt-get install postgresql); .ci/run installs it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "postgresql"]):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG)
        if r.returncode != 0:
            return None, f"PostgreSQL could not be installed ({' '.join(cmd)}: {r.stderr.strip()[-200:]})"
    found = _bindir()
    return (found, "") if found else (None, "apt-get installed postgresql but no server binaries were found")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres_dying_with_parent():
    """preexec_fn: become the postgres user, and get SIGQUIT when the parent dies."""
    import pwd

    pw = pwd.getpwnam(PG_USER)
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def pre() -> None:
        os.setsid()
        if os.geteuid() == 0:
            os.setgid(pw.pw_gid)
            os.initgroups(PG_USER, pw.pw_gid)
            os.setuid(pw.pw_uid)
        libc.prctl(pr_set_pdeathsig, signal.SIGQUIT)

    return pre


@dataclass
class PostgresServer:
    """A running server: ``socket_dir`` (Unix socket), ``port`` (TCP on 127.0.0.1)."""

    proc: subprocess.Popen
    root: Path
    socket_dir: Path
    port: int
    bindir: Path

    @property
    def superuser_dsn(self) -> str:
        return f"host={self.socket_dir} port={self.port} user={PG_USER} dbname=postgres"

    def url(self, with_password: bool = False) -> str:
        """postgresql://nteval@127.0.0.1:PORT/nteval (the password only when asked: tests of
        connections normally take it from PGPASSWORD)."""
        auth = f"{ROLE}:{PASSWORD}" if with_password else ROLE
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{DATABASE}"

    def psql(self, sql: str, db: str = "postgres") -> str:
        r = subprocess.run([str(self.bindir / "psql"), "-X", "-q", "-t", "-A", "-h", str(self.socket_dir),
                            "-p", str(self.port), "-U", PG_USER, "-d", db, "-c", sql],
                           capture_output=True, text=True, timeout=60, preexec_fn=_as_postgres_dying_with_parent())
        if r.returncode != 0:
            raise RuntimeError(f"psql: {r.stderr.strip()}")
        return r.stdout

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # immediate shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres(bindir: Path, port: int | None = None) -> PostgresServer:
    """initdb in a temporary directory owned by postgres, start the server there (a child of this
    process), create the role ``nteval`` (password :data:`PASSWORD`, scram) and its database.
    ``port``: the TCP port (default: a free one; a server started again on the port of one that
    died has the same URL)."""
    import pwd

    pw = pwd.getpwnam(PG_USER)
    root = Path(tempfile.mkdtemp(prefix="nteval-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    for p in (root, sock):
        os.chown(p, pw.pw_uid, pw.pw_gid)
    pre = _as_postgres_dying_with_parent()
    r = subprocess.run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", PG_USER, "--no-sync", "-E", "UTF8",
                        "--locale=C"], capture_output=True, text=True, timeout=HANG, preexec_fn=pre)
    if r.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {r.stderr.strip()[-300:]}")
    # local socket: trust; TCP: a password (scram), so the URL tests need PGPASSWORD
    (data / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
    port = port or free_port()
    log = open(root / "server.log", "w")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen([str(bindir / "postgres"), "-D", str(data), "-k", str(sock), "-p", str(port),
                             "-h", "127.0.0.1", "-c", "fsync=off", "-c", "max_connections=60",
                             "-c", "shared_buffers=64MB"], stdout=log, stderr=subprocess.STDOUT, preexec_fn=pre)
    server = PostgresServer(proc, root, sock, port, bindir)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"postgres exited: {(root / 'server.log').read_text()[-300:]}")
        if (sock / f".s.PGSQL.{port}").exists():
            try:
                server.psql("SELECT 1")
                break
            except RuntimeError:
                pass
        time.sleep(0.1)
    else:
        server.stop()
        raise RuntimeError("postgres did not answer within 60 s")
    server.psql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
    server.psql(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
    return server
