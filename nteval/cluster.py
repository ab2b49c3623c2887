"""Scale-out on a Dask cluster: ``--scheduler tcp://HOST:PORT`` (or ``NTEVAL_SCHEDULER``) sends grid
cells and per-system runs to the workers of a ``dask.distributed`` scheduler instead of local
processes. Without a scheduler nothing here is imported (``distributed`` is the optional
``cluster`` extra).

* **Futures**, not joblib's dask backend: ``client.submit(..., retries=RETRIES)`` per cell or system
  and ``as_completed`` let the client store each result the moment it arrives, name the worker in
  errors, and share the parsed topics/qrels once per worker as a task (recomputable when the
  workers holding it die, unlike scattered data).
* **Workers**: each is a long-lived process; the first cell or run it computes starts its JVM and
  opens the index, which stay open for all later ones (the per-process cache of
  :mod:`nteval.grid.cells`). :class:`NtevalWorker`, registered by the client, closes them when the
  worker shuts down; one search runs at a time per process (pyjnius is not thread-safe), so start
  workers with ``--nthreads 1``.
* **Shared paths**: the index must be at the same path on every worker (a shared filesystem);
  the output directory need not be: workers return results and the client writes them, under the
  same names and cache keys as a local run. A stored cell or run is never rewritten.
* **Lost workers**: the scheduler moves the tasks of a worker that dies to the others
  (``distributed.scheduler.allowed-failures`` deaths per task) and ``retries`` re-runs a task that
  raised; results are deterministic, so they are byte-identical to a local run.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._version import __version__
from .errors import InputError, env_int
from .formats.trec import canonical
from .formats.versions import CELL_FORMAT, RUN_FORMAT
from .systems.execute import close_targets, open_target, run_system

SCHEDULER_ENV = "NTEVAL_SCHEDULER"
RETRIES = 2            # re-runs of a task that raised (a worker's death is the scheduler's, not counted here)

_OPEN: dict[str, list] = {}  # scheduler address → [client, nesting depth] in this (client) process
SEARCH_LOCK = threading.Lock()   # worker side: one search at a time per process


class WorkerPathError(RuntimeError):
    """A worker cannot see a path the task needs (raised on the worker, shown as one line)."""


def distributed_module():
    try:
        import distributed
    except ImportError:
        raise InputError(None, "--scheduler needs dask.distributed: pip install 'nteval[cluster]' "
                               "(or pip install 'dask[distributed]')") from None
    return distributed


try:  # the plugin's base class when distributed is installed (workers always have it)
    from distributed import WorkerPlugin as _PluginBase
except ImportError:  # pragma: no cover - nteval without the cluster extra
    _PluginBase = object  # type: ignore[assignment,misc]


class NtevalWorker(_PluginBase):
    """Registered on every worker by the client: remembers the worker's address for error
    messages and closes the indexes the worker opened when it shuts down (the JVM, started by the
    first task, lives as long as the worker process)."""
    name = "nteval"
    idempotent = True  # a second nteval client does not re-register (which would close open indexes)

    def setup(self, worker) -> None:
        global _ADDRESS
        _ADDRESS = worker.address
        if worker.state.nthreads > 1:
            import logging

            logging.getLogger("distributed.worker").warning(
                "nteval: worker %s has %d threads but searches one task at a time (pyjnius): start workers with "
                "--nthreads 1 and more of them (--nworkers)", worker.address, worker.state.nthreads)

    def teardown(self, worker) -> None:
        with SEARCH_LOCK:
            close_targets()


_ADDRESS: str | None = None


def worker_address() -> str:
    if _ADDRESS:
        return _ADDRESS
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def require_path(path: str) -> None:
    if not Path(path).exists():
        raise WorkerPathError(f"worker {worker_address()} cannot see {path}: the index must be on a path every "
                              "worker sees (a shared filesystem, same path)")


def _worker_state(paths: list[str]) -> dict[str, Any]:
    """Run on every worker when a client connects: which paths it lacks and its nteval formats."""
    return {"missing": [p for p in paths if not Path(p).exists()],
            "formats": [__version__, CELL_FORMAT, RUN_FORMAT]}


def check_workers(client, paths: list[str]) -> int:
    """Fail with one line when a connected worker cannot see one of ``paths`` or runs another nteval
    version or format; returns the number of workers (workers joining later are checked by each
    task: :func:`require_path`)."""
    try:
        states = client.run(_worker_state, sorted(paths))
    except (ImportError, AttributeError) as err:
        raise InputError(None, f"a Dask worker cannot run nteval ({err}): install nteval in the workers' "
                               "environment") from None
    mine = [__version__, CELL_FORMAT, RUN_FORMAT]
    for addr, st in sorted(states.items()):
        if st["missing"]:
            raise InputError(None, f"worker {addr} cannot see {st['missing'][0]}: the index must be on a path every "
                                   "worker sees (a shared filesystem, same path)")
        if list(st["formats"]) != mine:
            raise InputError(None, f"worker {addr} runs nteval {st['formats'][0]} (cell/run formats "
                                   f"{st['formats'][1]}/{st['formats'][2]}), this client {mine[0]} "
                                   f"({mine[1]}/{mine[2]}): install the same nteval on both")
    return len(states)


def scheduler_address(scheduler: str | None) -> str | None:
    """``--scheduler`` as given (``tcp://HOST:PORT``); None or empty means local."""
    return scheduler.strip() if scheduler and scheduler.strip() else None


#: How long the scheduler has to connect *and* answer nteval's first request (a peer that accepts
#: the connection and never speaks used to hang nteval for good). NTEVAL_SCHEDULER_TIMEOUT overrides.
HANDSHAKE_TIMEOUT = 30

_ADDRESS_RE = r"^(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$"


def check_address(scheduler: str) -> None:
    """``tcp://HOST:PORT`` (or ``tls://``), one line otherwise — before any connection is tried."""
    import re

    m = re.match(_ADDRESS_RE, scheduler)
    if not m:
        scheme = scheduler.split("://", 1)[0] if "://" in scheduler else None
        why = (f"the {scheme}:// protocol is not supported (tcp:// or tls://)" if scheme and scheme not in ("tcp", "tls")
               else "expected tcp://HOST:PORT")
        raise InputError(None, f"--scheduler {scheduler}: {why}")
    if not 1 <= int(m.group(3)) <= 65535:
        raise InputError(None, f"--scheduler {scheduler}: port {m.group(3)} is not a port (1-65535)")


def probe(scheduler: str, timeout: float) -> None:
    """Connect to the scheduler and ask it for its workers, in a child process that must answer
    within ``timeout`` seconds: a peer that never speaks, speaks garbage or is not there costs this
    much at most, and the failed client's cleanup (a minute of waiting at exit) is not ours."""
    import subprocess
    import sys
    import time

    code = ("import sys, distributed\n"
            f"c = distributed.Client({scheduler!r}, set_as_default=False, timeout={timeout!r})\n"
            "c.nthreads()\nprint('ok', flush=True)\nimport os; os._exit(0)\n")
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout + 15)
    except subprocess.TimeoutExpired:
        # (the wait as it was: the scheduler's timeout, plus the time to start a Dask client in a child)
        raise InputError(None, f"--scheduler {scheduler}: no answer after {time.monotonic() - t0:.0f} s (is it a Dask "
                               f"scheduler? NTEVAL_SCHEDULER_TIMEOUT, now {timeout:.0f} s, sets how long it may take "
                               "to answer once a Dask client has started)") from None
    if r.stdout.strip() != "ok":
        last = [x for x in r.stderr.strip().splitlines() if x.strip()][-1:] or ["no answer"]
        raise InputError(None, f"--scheduler {scheduler}: cannot connect ({last[0].strip()[:200]})")


@contextlib.contextmanager
def session(scheduler: str, paths: list[str] | tuple[str, ...] = ()) -> Iterator[Any]:
    """A connected ``distributed.Client`` with nteval's worker plugin registered and ``paths``
    checked on every worker. Nested sessions on the same scheduler share one client. The address
    is checked and the scheduler probed (:func:`probe`) first: a bad address or a peer that does
    not answer is one line within :data:`HANDSHAKE_TIMEOUT` seconds."""
    distributed = distributed_module()
    entry = _OPEN.get(scheduler)
    if entry is None:
        check_address(scheduler)
        timeout = env_int("NTEVAL_SCHEDULER_TIMEOUT", HANDSHAKE_TIMEOUT, minimum=1)
        probe(scheduler, timeout)
        try:
            client = distributed.Client(scheduler, set_as_default=False, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as err:
            msg = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InputError(None, f"--scheduler {scheduler}: cannot connect ({msg})") from None
        try:
            client.register_plugin(NtevalWorker(), name=NtevalWorker.name)
        except BaseException:
            client.close()
            raise
        entry = _OPEN[scheduler] = [client, 0]
        if not client.nthreads():
            import sys

            print(f"note: scheduler {scheduler} has no workers yet: tasks wait for them", file=sys.stderr)
    entry[1] += 1
    try:
        if paths:
            check_workers(entry[0], list(paths))
        yield entry[0]
    finally:
        entry[1] -= 1
        if entry[1] == 0:
            del _OPEN[scheduler]
            entry[0].close()


def current() -> str | None:
    """The scheduler of the session this process has open (the pipeline's prologue opens it for
    ``--scheduler``), or None: work deep in a pipeline (the references' encoding) goes where the
    pipeline's runs go without being handed the address."""
    return next(iter(_OPEN), None)


def workers(client) -> int:
    return len(client.nthreads())


def _unpack(blob: bytes) -> Any:
    return pickle.loads(zlib.decompress(blob))


def share(client, obj: Any, name: str) -> Any:
    """``obj`` (topics, qrels) as a future every task can take as an argument: computed once on a
    worker, copied to the others as they need it, and recomputed should every copy be lost."""
    from dask.base import tokenize

    blob = zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), 3)
    return client.submit(_unpack, blob, key=f"nteval-{name}-{tokenize(blob)}", retries=RETRIES)


def result_of(future, what: str) -> Any:
    """A task's result; a worker-side path error and a task that killed its workers become one
    line."""
    from distributed import KilledWorker

    try:
        return future.result()
    except WorkerPathError as err:
        raise InputError(None, str(err)) from None
    except KilledWorker as err:
        raise RuntimeError(f"{what}: the workers computing it died repeatedly ({err}); see the workers' logs "
                           "(memory limit?) and re-run: finished results are kept") from None


# -- per-system runs ----------------------------------------------------------------------------

def _run_task(index: str, label: str, system, topics: dict[str, str], depth: int, threads: int | None) -> dict[str, Any]:
    require_path(index)
    with SEARCH_LOCK:
        target = open_target(index, label)
        before = target.lucene.long_queries if target.opened else 0
        t0 = time.perf_counter()
        raw = run_system(target, system, topics, depth, threads=threads)
        seconds = time.perf_counter() - t0
        long_queries = target.lucene.long_queries - before
    return {"run": {q: canonical(raw.get(q, []), depth) for q in topics}, "seconds": seconds,
            "long_queries": long_queries, "worker": worker_address()}


class RemoteRuns:
    """Runs of Lucene systems submitted to the cluster at once (one task each); :meth:`get` waits
    for one. Systems that search no Lucene index (fusions, dense, external) stay with the caller."""

    def __init__(self, scheduler: str, index: Path, label: str, topics: dict[str, str], systems: list[tuple[Any, str]],
                 depth: int, threads: int | None):
        """``systems``: each system with its run's cache key (the task's key on the cluster)."""
        self._session = session(scheduler, [str(index)])
        client = self._session.__enter__()
        try:
            shared = share(client, topics, f"topics-{label}")
            self._futures = {s.name: client.submit(_run_task, str(index), label, s, shared, depth, threads,
                                                   key=f"nteval-run-{key}",
                                                   retries=RETRIES)
                             for s, key in systems}
        except BaseException:
            self.close()
            raise

    def __contains__(self, name: str) -> bool:
        return name in self._futures

    def get(self, name: str) -> dict[str, Any]:
        return result_of(self._futures.pop(name), f"system {name}")

    def close(self) -> None:
        for fut in self._futures.values():
            fut.cancel()
        self._futures = {}
        self._session.__exit__(None, None, None)
