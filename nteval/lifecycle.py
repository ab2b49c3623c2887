"""Child processes die with the nteval process that started them.

``kill -9`` of ``nteval grid --jobs 2`` used to leave its loky workers computing and writing cells,
and ``kill -9`` of ``nteval index`` left its child JVMs indexing into a temporary directory: no
handler runs on SIGKILL, so the children must notice by themselves.

* Worker processes (joblib/loky: grid cells, index parses, local encodings) run :func:`watch_parent`
  as their pool's initializer, with the pid of the nteval process that started them: from its start
  (not its first task: a worker that never got one stayed for loky's idle timeout), a daemon thread
  checks every 0.2 s that this process is still its parent, and ends the worker (``os._exit``) as
  soon as it is not. Only workers watch: the main process
  never exits because its own shell went away (``nohup`` keeps working).
* Child JVMs are started with :func:`die_with_parent` as ``preexec_fn``: Linux's
  ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes the kernel kill the JVM when the thread that started
  it ends (that thread waits for the JVM, so only the parent's death ends it early).
"""
from __future__ import annotations

import os
import signal
import threading

_PR_SET_PDEATHSIG = 1
_watching: set[int] = set()
_lock = threading.Lock()


def watch_parent(parent: int, interval: float = 0.2) -> bool:
    """In a worker process started by nteval process ``parent`` (its pool's initializer): exit as
    soon as that process is gone — at once when it is gone already (a worker that starts just after
    nteval was killed must not compute and store what was queued for it), a parent that exited but
    was not yet reaped (a zombie) counting as gone. Returns whether a watch runs (not in ``parent``
    itself, nor in a process whose parent is another, living one)."""
    if parent == os.getpid():
        return False
    if os.getppid() != parent:
        if not _running(parent):
            os._exit(1)  # the nteval process that started us is gone
        return False
    with _lock:
        if parent in _watching:
            return True
        _watching.add(parent)

    def loop() -> None:
        import time

        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(interval)

    threading.Thread(target=loop, name="nteval-parent-watch", daemon=True).start()
    return True


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie, exited but not yet reaped by its
    own parent, has: ``kill(pid, 0)`` alone would call it alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True   # (no /proc: what kill said)


def _libc_prctl():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl() if os.uname().sysname == "Linux" else None


def die_with_parent() -> None:
    """``preexec_fn`` for child processes: the kernel sends SIGKILL when the parent thread ends."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def die_with_parent_gently() -> None:
    """``preexec_fn``: the kernel sends SIGTERM (not SIGKILL) when the parent thread ends, so the
    child can clean up after itself (:func:`run_group`)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


#: How much of a program's stderr is kept (its last bytes): a program writing gigabytes of stderr
#: costs no more memory than this.
STDERR_TAIL = 64 * 1024


def run_group(workdir: str, tail_path: str, argv: list[str]) -> int:
    """Run ``argv`` in a process group of its own and return its exit status; what it writes to
    stderr is read as it comes and only the last :data:`STDERR_TAIL` bytes are kept (in
    ``tail_path``). Once it exits, the rest of its group (background children it left) is killed,
    so nothing it started outlives it. When this process is told to stop (SIGTERM: the nteval
    process that started it died, or was interrupted), the whole group is killed and ``workdir``
    removed. Started as ``python -m nteval.lifecycle WORKDIR TAIL -- ARGV...`` by
    :func:`nteval.systems.external._run_command`."""
    import select
    import shutil
    import subprocess

    proc = None

    def stop(_signum, _frame) -> None:
        if proc is not None:
            _kill_group(proc.pid)
        shutil.rmtree(workdir, ignore_errors=True)
        os._exit(143)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as err:
        with open(tail_path, "w", encoding="utf-8") as fh:
            fh.write(f"cannot start {argv[0]}: {err.strerror}")
        return 127
    tail = b""
    assert proc.stderr is not None  # stderr=PIPE
    fd = proc.stderr.fileno()
    exited = False
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break  # every writer is gone
            tail = (tail + chunk)[-STDERR_TAIL:]
        elif exited:
            break
        if not exited and proc.poll() is not None:
            exited = True
            _kill_group(proc.pid)  # background children: gone with the program (their pipe ends close)
    proc.wait()
    with open(tail_path, "wb") as out:
        out.write(tail)
    return proc.returncode


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":  # python -m nteval.lifecycle WORKDIR TAIL -- ARGV...
    import sys

    _workdir, _tail, _sep, *_argv = sys.argv[1:]
    sys.exit(run_group(_workdir, _tail, _argv))
