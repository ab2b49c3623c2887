"""What every engine nteval asks over the network shares (the ``http`` and ``postgres`` kinds):
secrets from the environment, a per-query answer cache, concurrency, per-request timeouts,
retries with backoff, a rate limit, progress, and one line on failure.

- **Secrets**: ``${NAME}`` in a URL, a header, a body or a query string is replaced by environment
  variable ``NAME`` when a request is made, never before: the parameters that land in run
  metadata, reports and cache keys keep ``${NAME}``. Every message that comes back from the
  engine or the network has the values replaced by their ``${NAME}`` again before nteval shows
  or writes it (:meth:`Secrets.redact`).
- **Answer cache**: every answer is kept as it arrives, in one SQLite file per system under the
  engine caches (``INDEX/engines/answers/``; ``NTEVAL_ENGINE_CACHE`` moves the root), keyed by
  what determines the engine's answer (the request, the paths into the response, your
  ``version`` label, the version the engine reports), the query text and the depth. A run that
  fails leaves no run file (:func:`nteval.runs.run_all` writes a run only once it is complete),
  but the answers it got stay: a rerun asks the engine only for the queries still missing. An
  answer that failed its checks (not JSON, a hit without an id, an id twice) is never kept.
- **Retries**: a timeout, a lost or refused connection, HTTP 429 or 5xx are tried again up to
  ``retries`` times, after ``backoff`` seconds doubled at each try, or after the ``Retry-After``
  the engine sends (up to :data:`MAX_RETRY_AFTER` seconds); any other failure, or the last try's,
  stops the run with one line naming the system, the topic and what the engine said.
- **Rate**: at most ``rate`` requests per second over all ``concurrency`` workers (retries count).
"""
from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, short
from ..params import Param

CONCURRENCY = Param("concurrency", 4, "requests in flight at once", min=1, max=64)
TIMEOUT = Param("timeout", 30.0, "seconds a request may take before it counts as failed (and is tried again)",
                positive=True, max=3600)
RETRIES = Param("retries", 4, "tries after the first on a timeout, a lost connection, HTTP 429 or 5xx", min=0, max=20)
BACKOFF = Param("backoff", 0.5, "seconds before the first retry, doubled at each one (Retry-After wins when sent)",
                min=0, max=300)
RATE = Param("rate", 0.0, "requests per second at most, over all workers (0: no limit)", min=0, max=100_000)
VERSION = Param("version", "", "your label for the engine's release and index (part of the cache keys: change it "
                               "when they change and the engine reports no new version)")
#: the parameters of how a remote engine is asked (not of what it answers: outside the cache keys)
HOW = (CONCURRENCY, TIMEOUT, RETRIES, BACKOFF, RATE)
#: the longest ``Retry-After`` honoured; an engine asking for more fails the run (one line)
MAX_RETRY_AFTER = 300.0
#: the layout of an answer cache
ANSWERS_FORMAT = 1

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Secrets:
    """``${NAME}`` placeholders of one system's parameters: expanded from the environment at request
    time, and the values put back as placeholders in anything shown or written."""

    def __init__(self, system: str):
        self.system = system
        self.values: dict[str, str] = {}

    def expand(self, text: str) -> str:
        def value(m: re.Match) -> str:
            name = m.group(1)
            v = os.environ.get(name)
            if v is None:
                raise InputError(None, f"system {short(self.system)}: environment variable {name} is not set (its "
                                       f"parameters use ${{{name}}})")
            if v:
                self.values[name] = v
            return v

        return _ENV.sub(value, text)

    def expand_all(self, value: Any) -> Any:
        """Every string of a JSON-like value expanded (keys too)."""
        if isinstance(value, str):
            return self.expand(value)
        if isinstance(value, list):
            return [self.expand_all(v) for v in value]
        if isinstance(value, dict):
            return {self.expand(k): self.expand_all(v) for k, v in value.items()}
        return value

    def redact(self, text: str) -> str:
        """``text`` with every expanded secret replaced by its ``${NAME}`` (longest values first)."""
        for name, v in sorted(self.values.items(), key=lambda kv: -len(kv[1])):
            text = text.replace(v, f"${{{name}}}")
        return text


def uses_env(value: Any) -> list[str]:
    """The ``${NAME}`` variables a JSON-like value names."""
    if isinstance(value, str):
        return _ENV.findall(value)
    if isinstance(value, list):
        return [n for v in value for n in uses_env(v)]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in (*uses_env(k), *uses_env(v))]
    return []


class EngineError(Exception):
    """What went wrong with one request: ``said`` (one line, what the engine or the network said),
    whether trying again may help, and how long the engine asked to wait (Retry-After)."""

    def __init__(self, said: str, retry: bool = False, retry_after: float | None = None):
        super().__init__(said)
        self.said, self.retry, self.retry_after = said, retry, retry_after


@dataclass
class Answer:
    """An engine's answer to one query: its ids (the engine's own) and their scores, best first, and
    the number of matches it counts when it says (to catch a page cut short). Two lists, not pairs:
    an answer of a thousand hits is checked and kept without a tuple per hit."""

    ids: list[str]
    scores: list[float]
    total: int | None = None

    @classmethod
    def of(cls, hits: Iterable[tuple[str, float]], total: int | None = None) -> Answer:
        pairs = list(hits)
        return cls([d for d, _ in pairs], [s for _, s in pairs], total)

    @property
    def hits(self) -> list[tuple[str, float]]:
        return list(zip(self.ids, self.scores))


def printable(text: str, limit: int = 200) -> str:
    """``text`` on one line, without control characters, cut to about ``limit`` characters."""
    text = "".join(c if c.isprintable() else " " for c in str(text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_answer(answer: Answer, depth: int) -> None:
    """An answer's own consistency (before it is kept): no id twice, finite scores, not a page cut
    short (fewer hits than asked while the engine counts more matches)."""
    import math

    ids, scores = answer.ids, answer.scores
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i, doc in enumerate(ids):
            if doc in seen:
                raise EngineError(f"it ranks document {short(doc)} twice (hits {ids.index(doc) + 1} and {i + 1})")
            seen.add(doc)
    if not all(map(math.isfinite, scores)):
        i = next(i for i, x in enumerate(scores) if not math.isfinite(x))
        raise EngineError(f"hit {i + 1} ({short(ids[i])}) has score {scores[i]}, not a finite number")
    n, total = len(ids), answer.total
    if total is not None and n < depth and total > n:
        raise EngineError(f"it returned {n:,} hits of the {depth:,} asked while it counts {total:,} matches: a page cut "
                          "short (a cap on the page size? Elasticsearch's index.max_result_window, a proxy's limit)")


# -- the answer cache ---------------------------------------------------------------------------

def answers_root(index_dir: Path) -> Path:
    """Where answer caches live: beside the other engine caches (``NTEVAL_ENGINE_CACHE`` moves them)."""
    root = Path(os.environ["NTEVAL_ENGINE_CACHE"]) if os.environ.get("NTEVAL_ENGINE_CACHE") else Path(index_dir) / "engines"
    return root / "answers"


class AnswerCache:
    """The answers one system's engine gave (one SQLite file, written by the thread that made it)."""

    def __init__(self, path: Path, key: str):
        self.path, self.key = Path(path), key
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=60)
            self.db.executescript(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                "CREATE TABLE IF NOT EXISTS answers (key TEXT NOT NULL, engine_version TEXT NOT NULL, query TEXT NOT NULL,"
                " depth INTEGER NOT NULL, ids TEXT NOT NULL, scores BLOB NOT NULL, total INTEGER, at REAL NOT NULL,"
                " PRIMARY KEY (key, engine_version, query, depth));"
                f"PRAGMA user_version={ANSWERS_FORMAT};")
        except (OSError, sqlite3.Error) as err:
            where = os.environ.get("NTEVAL_ENGINE_CACHE")
            raise InputError(None if where else self.path, (f"NTEVAL_ENGINE_CACHE={short(where)}: " if where else "")
                             + f"cannot keep the engine's answers ({err}): set NTEVAL_ENGINE_CACHE to a directory you "
                               "can write") from None
        self._rows: list[tuple] = []
        self._last = time.monotonic()

    def get(self, queries: Iterable[str], depth: int, version: str) -> dict[str, Answer]:
        out: dict[str, Answer] = {}
        qs = list(dict.fromkeys(queries))
        for i in range(0, len(qs), 500):
            chunk = qs[i:i + 500]
            rows = self.db.execute(f"SELECT query, ids, scores, total FROM answers WHERE key = ? AND engine_version = ? AND depth = ? "
                                   f"AND query IN ({','.join('?' * len(chunk))})", [self.key, version, depth, *chunk])
            for q, ids, scores, total in rows:
                values = array("d")
                values.frombytes(scores)
                out[q] = Answer(ids.split("\n") if ids else [], values.tolist(), total)
        return out

    def put(self, query: str, depth: int, version: str, answer: Answer) -> None:
        # ids one a line (an id holds no whitespace: the answer was checked), scores as float64s; written
        # 50 at a time, and at least every second (a killed run loses a second of answers at most)
        self._rows.append((self.key, version, query, depth, "\n".join(answer.ids), array("d", answer.scores).tobytes(),
                           answer.total, time.time()))
        if len(self._rows) >= 50 or time.monotonic() - self._last > 1.0:
            self.commit()

    def drop(self, queries: Iterable[str], depth: int, version: str) -> None:
        self.commit()
        for q in queries:
            self.db.execute("DELETE FROM answers WHERE key = ? AND engine_version = ? AND query = ? AND depth = ?",
                            (self.key, version, q, depth))
        self.commit()

    def commit(self) -> None:
        if self._rows:
            self.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._rows)
            self._rows = []
        self.db.commit()
        self._last = time.monotonic()

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self.db.close()


def cache_file(index_dir: Path, system: str, identity: Mapping[str, Any]) -> tuple[Path, str]:
    """The answer cache of ``system`` and the key of its answers (the sha256 of ``identity``)."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in system)
    return answers_root(index_dir) / f"{safe}-{key[:16]}.sqlite", key


# -- asking ------------------------------------------------------------------------------------

class RateLimit:
    """At most ``rate`` calls of :meth:`wait` per second over all threads (0: no limit)."""

    def __init__(self, rate: float):
        self.gap = 1.0 / rate if rate > 0 else 0.0
        self.next = time.monotonic()
        self.lock = threading.Lock()

    def wait(self, stop: threading.Event) -> None:
        if not self.gap:
            return
        with self.lock:
            now = time.monotonic()
            at = max(now, self.next)
            self.next = at + self.gap
        if at > now:
            stop.wait(at - now)


@dataclass
class Job:
    """One system's queries to a remote engine: who asks (``system``), how (``params``: the
    :data:`HOW` parameters), the depth, the engine's version, its cache and its secrets."""

    system: str
    params: Mapping[str, Any]
    depth: int
    version: str
    cache: AnswerCache
    secrets: Secrets
    progress: bool | None = None
    errors: int = 0
    asked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, qid: str, said: str) -> InputError:
        return InputError(None, f"system {short(self.system)}: topic {short(qid)}: {printable(self.secrets.redact(said), 300)}")


def ask_all(job: Job, topics: Mapping[str, str], ask: Callable[[str], Answer],
            tick: Callable[[int], None] = lambda n: None) -> tuple[dict[str, Answer], dict[str, Any]]:
    """Every topic's answer: from the cache, or asked (``ask(text)`` raises :class:`EngineError`),
    ``concurrency`` at a time, each answer kept as it comes. The first failure (after its retries)
    stops the run: the queries in flight finish, the rest are not asked, and one line naming the
    system, the topic and what the engine said is raised. Returns the answers by topic id and what
    happened (for the run's notes)."""
    from tqdm import tqdm

    from ..progress import shown

    p = job.params
    texts = {q: topics[q] for q in topics}
    got = job.cache.get(texts.values(), job.depth, job.version)
    todo: dict[str, str] = {}  # query text → the first topic asking it (a text is asked once)
    for q, text in texts.items():
        if text not in got and text not in todo:
            todo[text] = q
    tick(sum(1 for t in texts.values() if t in got))
    stop = threading.Event()
    limit = RateLimit(float(p["rate"]))
    retries, backoff = int(p["retries"]), float(p["backoff"])
    bar = tqdm(total=len(todo), unit=" q", desc=f"{job.system}", disable=not shown(job.progress) or not todo,
               file=sys.stderr, leave=False, mininterval=0.5)
    bar.set_postfix(errors=0)

    def one(text: str) -> Answer:
        for attempt in range(retries + 1):
            if stop.is_set():
                raise EngineError("stopped (another query failed)")
            limit.wait(stop)
            try:
                with job.lock:
                    job.asked += 1
                answer = ask(text)
                check_answer(answer, job.depth)
                return answer
            except EngineError as err:
                if not err.retry or attempt == retries:
                    tries = f" (after {attempt + 1} tries)" if attempt else ""
                    raise EngineError(err.said + tries) from None
                with job.lock:
                    job.errors += 1
                delay = err.retry_after if err.retry_after is not None else backoff * 2 ** attempt
                if delay > MAX_RETRY_AFTER:
                    raise EngineError(f"{err.said}; it asks to wait {delay:.0f} s before trying again (nteval waits at most "
                                      f"{MAX_RETRY_AFTER:.0f} s)") from None
                stop.wait(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    t0 = time.perf_counter()
    width = int(p["concurrency"])
    pending = iter(todo.items())
    running: dict[Future, tuple[str, str]] = {}
    state: dict[str, Any] = {"fresh": 0, "failure": None}

    def failed(qid: str, said: str) -> None:
        if state["failure"] is None:
            state["failure"] = job.fail(qid, said)
            stop.set()

    def collect(pool: ThreadPoolExecutor) -> None:
        """Keep ``2 × concurrency`` queries submitted; each answer kept as it comes (the workers hand
        them over through a queue: cheaper than waiting on every future in flight)."""
        came: queue.SimpleQueue = queue.SimpleQueue()

        def submit() -> bool:
            item = next(pending, None)
            if item is None:
                return False
            fut = pool.submit(one, item[0])
            running[fut] = item
            fut.add_done_callback(came.put)
            return True

        while len(running) < 2 * width and submit():
            pass
        while running:
            try:
                fut = came.get(timeout=0.5)
            except queue.Empty:
                continue
            text, qid = running.pop(fut)
            try:
                answer = fut.result()
            except EngineError as err:
                failed(qid, err.said)
                continue
            except Exception as err:  # noqa: BLE001  (a client library's own failure: one line too)
                failed(qid, f"{type(err).__name__}: {err}")
                continue
            job.cache.put(text, job.depth, job.version, answer)
            got[text] = answer
            state["fresh"] += 1
            bar.update(1)
            tick(1)
            if state["failure"] is None:
                submit()
            if bar.postfix != f"errors={job.errors}":
                bar.set_postfix(errors=job.errors, refresh=False)

    try:
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"nteval-{job.system}") as pool:
            try:
                collect(pool)
            finally:  # (Ctrl-C too: before the pool waits for its workers, the queued queries go, sleeps end)
                stop.set()
                for fut in running:
                    fut.cancel()
    finally:
        bar.close()
        job.cache.close()
    failure, fresh = state["failure"], state["fresh"]
    if failure is not None:
        raise failure
    secs = time.perf_counter() - t0
    notes = {"queries": len(texts), "asked": fresh,
             "from_cache": len(texts) - sum(1 for t in texts.values() if t in todo), "requests": job.asked,
             "retried_errors": job.errors, "seconds_asking": round(secs, 3),
             "queries_per_s": round(fresh / secs, 1) if fresh and secs > 0 else None}
    return {q: got[t] for q, t in texts.items()}, notes


_KNOWN: dict[tuple[str, str, str], frozenset[str]] = {}


def collection_docids(target: Any) -> frozenset[str]:
    """The docids of the index ``target`` searches, read once per process and index version."""
    from ..corpus.store import index_docids

    key = (str(target.index_dir), target.index_name, target.fingerprint)
    if key not in _KNOWN:
        _KNOWN.clear()  # (one index at a time: a process does not keep millions of ids it no longer needs)
        _KNOWN[key] = frozenset(index_docids(target.index_dir, target.index_name))
    return _KNOWN[key]


def finish(job: Job, answers: Mapping[str, Answer], topics: Mapping[str, str], known: frozenset[str],
           id_map: Mapping[str, str] | None = None, how: str = "") -> tuple[dict[str, list[tuple[str, float]]], dict[str, Any]]:
    """The run made of the answers: the engine's ids turned into the collection's docids
    (``id_map``: engine id → docid; an id it lacks stays as it is), checked against the collection
    (``known``: its docids). Two engine ids of one topic mapped to one docid is one line naming the
    topic. Documents outside the collection are refused (one line naming the first topic that has
    some) when more than :data:`nteval.systems.external.MAX_FOREIGN_SHARE` of all hits are — an engine
    over another corpus, or ids that are not the collection's docids; those answers leave the cache,
    so a fixed engine is asked again. Below that share they are reported and count as not relevant.
    Returns the run (best first; :func:`nteval.runs.run_all` puts it in trec_eval's order) and notes."""
    from .external import MAX_FOREIGN_SHARE

    run: dict[str, list[tuple[str, float]]] = {}
    bad: dict[str, list[str]] = {}
    for q, a in answers.items():
        ids = [id_map.get(d, d) for d in a.ids] if id_map else a.ids
        if id_map and len(set(ids)) < len(ids):
            seen: set[str] = set()
            twice = next(d for d in ids if d in seen or seen.add(d))  # type: ignore[func-returns-value]
            raise InputError(None, f"system {short(job.system)}: topic {short(q)}: two of the engine's ids map to "
                                   f"document {short(twice)}{how}")
        run[q] = list(zip(ids, a.scores))
        outside = set(ids).difference(known)
        if outside:
            bad[q] = [d for d in ids if d in outside]
    hits_n = sum(len(r) for r in run.values())
    foreign_docs = {d for v in bad.values() for d in v}
    foreign = sum(len(v) for v in bad.values())
    if hits_n and foreign / hits_n > MAX_FOREIGN_SHARE:
        forget = [topics[q] for q in bad]
        cache = AnswerCache(job.cache.path, job.cache.key)
        try:
            cache.drop(forget, job.depth, job.version)
        finally:
            cache.close()
        first = next(q for q in run if q in bad)
        raise InputError(None, f"system {short(job.system)}: topic {short(first)}: {len(bad[first]):,} of its "
                               f"{len(run[first]):,} hits are not documents of this collection (e.g. {short(bad[first][0])}); "
                               f"in all {foreign:,} of {hits_n:,} hits ({foreign / hits_n * 100:.0f} %){how}: does the "
                               "engine search another corpus, or name documents by another id? (map them with id / id_map; "
                               "`nteval export` writes this collection)")
    notes: dict[str, Any] = {"topics_without_results": sum(1 for q in topics if not run.get(q)),
                             "foreign_documents": len(foreign_docs), "foreign_hits": foreign, "hits": hits_n}
    if foreign_docs:
        notes["foreign_example"] = sorted(foreign_docs)[0]
    return run, notes


def load_id_map(path: str, system: str) -> dict[str, str]:
    """An id map file: one ``engine_id<TAB>docid`` per line (one line naming the file and the line
    when a line is not that, or an engine id appears twice)."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                line = line.rstrip("\r\n")
                if not line.strip() or line.startswith("#"):
                    continue
                cols = line.split("\t")
                if len(cols) != 2 or not cols[0] or not cols[1].strip() or any(c.isspace() for c in cols[1]):
                    raise InputError(path, f"system {short(system)}: id_map lines are engine_id<TAB>docid, got "
                                           f"{short(line)}", place=f"line {n}")
                if cols[0] in out:
                    raise InputError(path, f"system {short(system)}: engine id {short(cols[0])} is mapped twice",
                                     place=f"line {n}")
                out[cols[0]] = cols[1]
    except OSError as err:
        raise InputError(path, f"system {short(system)}: cannot read the id_map ({err.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(path, f"system {short(system)}: the id_map is not UTF-8 text") from None
    return out


def file_digest(path: str) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def resolve_path(params: dict[str, Any], key: str, where: Any) -> None:
    """``params[key]``, a file path, made absolute against the systems YAML's directory (in place)."""
    value = params.get(key)
    if value:
        p = Path(str(value)).expanduser()
        if not p.is_absolute() and where is not None:
            p = Path(where).parent / p
        params[key] = str(p.resolve())
