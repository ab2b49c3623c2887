"""Child processes die with the nteval process that started them.

``kill -9`` of ``nteval grid --jobs 2`` used to leave its loky workers computing and writing cells,
and ``kill -9`` of ``nteval index`` left its child JVMs indexing into a temporary directory: no
handler runs on SIGKILL, so the children must notice by themselves.

* Worker processes (joblib/loky) call :func:`watch_parent` with the pid of the nteval process that
  submitted the task: a daemon thread checks every 0.2 s that this process is still their parent,
  and ends the worker (``os._exit``) as soon as it is not. Only workers watch: the main process
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
    """In a worker process started by nteval process ``parent``: exit as soon as that process is
    gone. Returns whether a watch runs (not in ``parent`` itself, nor in a process that is not its
    direct child)."""
    if parent == os.getpid() or os.getppid() != parent:
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
