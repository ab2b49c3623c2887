"""Child processes die with the nteval process that started them.

``kill -9`` of ``nteval grid --jobs 2`` used to leave its loky workers computing and writing cells,
and ``kill -9`` of ``nteval index`` left its child JVMs indexing into a temporary directory: no
handler runs on SIGKILL, so the children must notice by themselves.

* Worker processes (joblib/loky) call :func:`watch_parent` at the start of each task: a daemon
  thread checks every 0.2 s that the nteval process recorded by :func:`mark_parent` (the
  ``NTEVAL_PARENT_PID`` variable the workers inherit) is still their parent, and ends the worker
  (``os._exit``) as soon as it is not. Only workers watch: the main process never exits because
  its own shell went away (``nohup`` keeps working).
* Child JVMs are started with :func:`die_with_parent` as ``preexec_fn``: Linux's
  ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes the kernel kill the JVM when the thread that started
  it ends (that thread waits for the JVM, so only the parent's death ends it early).
"""
from __future__ import annotations

import os
import signal
import threading

ENV = "NTEVAL_PARENT_PID"
_PR_SET_PDEATHSIG = 1
_watching = False
_lock = threading.Lock()


def mark_parent() -> None:
    """Record this process as the parent workers started from now on must outlive not."""
    os.environ[ENV] = str(os.getpid())


def watch_parent(interval: float = 0.2) -> bool:
    """In a worker process: exit as soon as the recorded nteval parent is gone. Returns whether a
    watch runs (False in the main process itself, or when no parent was recorded)."""
    global _watching
    raw = os.environ.get(ENV, "")
    if not raw.isdigit() or int(raw) == os.getpid():
        return False
    parent = int(raw)
    with _lock:
        if _watching:
            return True
        if os.getppid() != parent:  # already orphaned (or not started by it): nothing to do for it
            os._exit(1)
        _watching = True

    def loop() -> None:
        import time

        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(interval)

    threading.Thread(target=loop, name="nteval-parent-watch", daemon=True).start()
    return True


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
