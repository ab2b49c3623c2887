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
  answer that failed its checks (not JSON, a hit without an id, an id twice) is never kept. A gate
  or check asks the engine now (:data:`nteval.settings.ANSWERS`): it takes only the answers of a
  run that did not finish (each run that got all its answers is marked ``finished``), and says
  how many it took and when they were kept (:func:`answers_used`).
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

from ..corpus.store import index_docids
from ..errors import InputError, redact_url, short, url_passwords
from ..params import Param
from ..progress import shown, tqdm
from .external import MAX_FOREIGN_SHARE

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
#: the layout of an answer cache (2: the ``finished`` table)
ANSWERS_FORMAT = 2

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


#: What a URL's parts keep unencoded (RFC 3986): a value sent as it is is encoded by the HTTP library
#: only where it must be (urllib3 and httpx keep ``+ / = @`` and encode a space), so each of these
#: partly encoded forms of a secret is one a message may echo.
_URL_SAFE = ("!$&'()*+,;=:@/?", "!$&'()*+,;=:@/", "!$&'()*+,;=:@/?%", "!$&'()*+,;=:@/?[]%")


def _host_span(url: str) -> tuple[int, int]:
    """Where a URL's host (and port) is: after its scheme and its user/password, before its path,
    query or fragment."""
    start = url.find("://")
    start = start + 3 if start >= 0 else 0
    ends = [i for i in (url.find("/", start), url.find("?", start), url.find("#", start)) if i >= 0]
    end = min(ends) if ends else len(url)
    at = url.rfind("@", start, end)
    return (at + 1 if at >= 0 else start, end)


class Secrets:
    """``${NAME}`` placeholders of one system's parameters: expanded from the environment at request
    time, and the values put back as placeholders in anything shown or written.

    A value's trailing line breaks are dropped (a secret read from a file, or pasted into a CI
    secret store, often ends with one; no request may carry it); any other control character is
    refused in one line naming the variable, never showing its value. What is put back is every
    form a message may show a value in: as given and without its line breaks, escaped as Python
    and JSON write it, as bytes, and URL-encoded."""

    def __init__(self, system: str):
        self.system = system
        self._forms: dict[str, str] = {}  # a form of a value as a message may show it → its ${NAME}

    def expand(self, text: str, url: bool = False) -> str:
        """``text`` with each ``${NAME}`` replaced by the variable's value. ``url``: ``text`` is a
        URL, and a value put anywhere but its host (its user and password, its path, its query
        string) is percent-encoded as one value (``quote(value, safe="")``): a key holding ``+ / =
        @ &`` or a space arrives as it is, never split or turned into a space."""
        host = _host_span(text) if url else None

        def value(m: re.Match) -> str:
            name = m.group(1)
            v = os.environ.get(name)
            if v is None:
                raise InputError(None, f"system {short(self.system)}: environment variable {name} is not set (its "
                                       f"parameters use ${{{name}}})")
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(None, f"system {short(self.system)}: environment variable {name} holds bytes that "
                                       "are not UTF-8 text (a binary file read into it?): a value sent in a request is "
                                       "one line of printable characters (its value is not shown)") from None
            if v.rstrip("\r\n"):
                self._remember(f"${{{name}}}", v)
            v = v.rstrip("\r\n")
            if any(c < " " or c == "\x7f" for c in v):
                raise InputError(None, f"system {short(self.system)}: environment variable {name} holds a control "
                                       "character (a line break or a tab inside it?): a value sent in a request is one "
                                       "line of printable characters (its value is not shown)")
            if host is not None and not host[0] <= m.start() < host[1]:
                from urllib.parse import quote

                return quote(v, safe="")
            return v

        return _ENV.sub(value, text)

    def _remember(self, placeholder: str, given: str) -> None:
        from urllib.parse import quote, quote_plus, unquote

        for v in {given, given.rstrip("\r\n"), unquote(given)}:
            forms = {v, repr(v)[1:-1], repr(v.encode("utf-8", "surrogateescape"))[2:-1], json.dumps(v)[1:-1],
                     json.dumps(v, ensure_ascii=False)[1:-1], quote(v, safe=""), quote_plus(v), quote(v),
                     *(quote(v, safe=safe) for safe in _URL_SAFE)}
            forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), f) for f in forms}  # (%2f as some echo it)
            for f in forms:
                if f:
                    self._forms[f] = placeholder

    def given(self, url: str) -> str:
        """The URL a connection uses: as written in the systems file (:func:`hide_password`), its
        password then redacted (``***``) from every message, as a secret's value is."""
        url = getattr(url, "given", url)
        for pw in url_passwords(url):
            self._remember("***", pw)
        return url

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
        """``text`` with every form of every expanded secret replaced by its ``${NAME}`` (longest
        forms first)."""
        for form, placeholder in sorted(self._forms.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(form, placeholder)
        return text


class HiddenPassword(str):
    """A URL with a password written in it, as every output shows it: the password replaced by
    ``***`` (:func:`nteval.errors.redact_url`). ``given`` is the URL as written, for the connection
    only (:meth:`Secrets.given`). A ``str``, so whatever writes a system's parameters (its run's
    metadata, results.json, gate.json and check.json, reports, cache keys) writes the redacted URL
    without knowing it held one."""

    given: str


def hide_password(url: Any) -> Any:
    """``url`` as a :class:`HiddenPassword` when a password is written in it (``user:pw@``,
    ``password=``), else as it is."""
    if not isinstance(url, str) or isinstance(url, HiddenPassword) or redact_url(url) == url:
        return url
    out = HiddenPassword(redact_url(url))
    out.given = url
    return out


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
    #: when it was kept (time.time()), for an answer read from the cache
    at: float | None = None

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
                "CREATE TABLE IF NOT EXISTS finished (key TEXT NOT NULL, engine_version TEXT NOT NULL, depth INTEGER NOT"
                " NULL, at REAL NOT NULL, PRIMARY KEY (key, engine_version, depth));")
            if self.db.execute("PRAGMA user_version").fetchone()[0] < 2:  # (answers kept before runs were marked
                self.db.execute("INSERT OR IGNORE INTO finished SELECT key, engine_version, depth, max(at) FROM answers "
                                "GROUP BY key, engine_version, depth")  # finished: they count as a finished run's)
                self.db.commit()
            self.db.execute(f"PRAGMA user_version={ANSWERS_FORMAT}")
        except (OSError, sqlite3.Error) as err:
            where = os.environ.get("NTEVAL_ENGINE_CACHE")
            raise InputError(None if where else self.path, (f"NTEVAL_ENGINE_CACHE={short(where)}: " if where else "")
                             + f"cannot keep the engine's answers ({err}): set NTEVAL_ENGINE_CACHE to a directory you "
                               "can write") from None
        self._rows: list[tuple] = []
        self._last = time.monotonic()

    def get(self, queries: Iterable[str], depth: int, version: str, after: float | None = None) -> dict[str, Answer]:
        """The answers kept for ``queries`` (only those kept after time ``after``, when given)."""
        out: dict[str, Answer] = {}
        qs = list(dict.fromkeys(queries))
        for i in range(0, len(qs), 500):
            chunk = qs[i:i + 500]
            rows = self.db.execute(f"SELECT query, ids, scores, total, at FROM answers WHERE key = ? AND engine_version = ? "
                                   f"AND depth = ? AND at > ? AND query IN ({','.join('?' * len(chunk))})",
                                   [self.key, version, depth, -1.0 if after is None else after, *chunk])
            for q, ids, scores, total, at in rows:
                values = array("d")
                values.frombytes(scores)
                out[q] = Answer(ids.split("\n") if ids else [], values.tolist(), total, at)
        return out

    def finished(self, depth: int, version: str) -> float | None:
        """When the last run that got all its answers finished (None: none did)."""
        row = self.db.execute("SELECT at FROM finished WHERE key = ? AND engine_version = ? AND depth = ?",
                              (self.key, version, depth)).fetchone()
        return row[0] if row else None

    def mark_finished(self, depth: int, version: str) -> None:
        """A run got all its answers: the answers kept until now are a finished run's (a gate or check
        asks the engine again instead of resuming them)."""
        self.commit()
        self.db.execute("INSERT OR REPLACE INTO finished VALUES (?, ?, ?, ?)", (self.key, version, depth, time.time()))
        self.db.commit()

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
    :data:`HOW` parameters), the depth, the engine's version, its cache and its secrets;
    ``answers``: whether answers kept by an earlier run are replayed (:data:`nteval.settings.ANSWERS`);
    ``abort``: ends the requests in flight at once (an interrupt: no worker is left blocked on them)."""

    system: str
    params: Mapping[str, Any]
    depth: int
    version: str
    cache: AnswerCache
    secrets: Secrets
    progress: bool | None = None
    answers: str = "replay"
    abort: Callable[[], None] = lambda: None
    errors: int = 0
    asked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, qid: str, said: str) -> InputError:
        return InputError(None, f"system {short(self.system)}: topic {short(qid)}: {printable(self.secrets.redact(said), 300)}")


class _Asker:
    """How one run asks: ``ask(text)`` tried again when that may help (after ``backoff`` doubled,
    or the engine's Retry-After), at most ``rate`` requests a second over all workers, and stopped
    at the first failure (kept in :attr:`failure`) or an interrupt."""

    def __init__(self, job: Job, ask: Callable[[str], Answer]):
        p = job.params
        self.job, self.ask = job, ask
        self.stop = threading.Event()
        self.limit = RateLimit(float(p["rate"]))
        self.retries, self.backoff = int(p["retries"]), float(p["backoff"])
        self.failure: InputError | None = None

    def one(self, text: str) -> Answer:
        job = self.job
        for attempt in range(self.retries + 1):
            if self.stop.is_set():
                raise EngineError("stopped (another query failed)")
            self.limit.wait(self.stop)
            try:
                with job.lock:
                    job.asked += 1
                answer = self.ask(text)
                check_answer(answer, job.depth)
                return answer
            except EngineError as err:
                if not err.retry or attempt == self.retries:
                    tries = f" (after {attempt + 1} tries)" if attempt else ""
                    raise EngineError(err.said + tries) from None
                with job.lock:
                    job.errors += 1
                self.stop.wait(self.delay(err, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def delay(self, err: EngineError, attempt: int) -> float:
        """Seconds before the next try: the engine's Retry-After (one line when it asks for more than
        :data:`MAX_RETRY_AFTER`), else the backoff doubled at each try."""
        if err.retry_after is None:
            return self.backoff * 2 ** attempt
        if err.retry_after > MAX_RETRY_AFTER:
            raise EngineError(f"{err.said}; it asks to wait {err.retry_after:,.0f} s before trying again (nteval waits "
                              f"at most {MAX_RETRY_AFTER:.0f} s)") from None
        return err.retry_after

    def failed(self, qid: str, err: BaseException) -> None:
        if self.failure is None:
            said = err.said if isinstance(err, EngineError) else f"{type(err).__name__}: {err}"  # (a client library's own)
            self.failure = self.job.fail(qid, said)
            self.stop.set()


def _pooled(asker: _Asker, todo: Mapping[str, str], width: int, took: Callable[[str, Answer], None]) -> None:
    """Every query of ``todo`` (text → topic id) asked ``width`` at a time, ``2 × width`` submitted
    (the workers hand answers over through a queue: cheaper than waiting on every future), each
    answer handed to ``took`` as it comes. After a failure the queries in flight finish and no more
    are sent. On an interrupt (Ctrl-C, SIGTERM) the requests in flight are aborted and no worker
    is waited for: nothing blocks the process's exit."""
    pending = iter(todo.items())
    running: dict[Future, tuple[str, str]] = {}
    came: queue.SimpleQueue = queue.SimpleQueue()
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"nteval-{asker.job.system}")

    def submit() -> bool:
        item = next(pending, None)
        if item is None:
            return False
        fut = pool.submit(asker.one, item[0])
        running[fut] = item
        fut.add_done_callback(came.put)
        return True

    try:
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
            except Exception as err:  # noqa: BLE001  (EngineError, or a client library's own failure: one line too)
                asker.failed(qid, err)
                continue
            took(text, answer)
            if asker.failure is None:
                submit()
    except BaseException:
        asker.stop.set()
        asker.job.abort()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def ask_all(job: Job, topics: Mapping[str, str], ask: Callable[[str], Answer],
            tick: Callable[[int], None] = lambda n: None) -> tuple[dict[str, Answer], dict[str, Any]]:
    """Every topic's answer: from the cache, or asked (``ask(text)`` raises :class:`EngineError`),
    ``concurrency`` at a time, each answer kept as it comes. ``job.answers``: ``ask`` takes from the
    cache only the answers of a run that did not finish (it resumes); the other modes all it holds.
    The first failure (after its retries) stops the run: the queries in flight finish, the rest are
    not asked, and one line naming the system, the topic and what the engine said is raised. Returns
    the answers by topic id and what happened (for the run's notes)."""
    texts = dict(topics)
    after = job.cache.finished(job.depth, job.version) if job.answers == "ask" else None
    got = job.cache.get(texts.values(), job.depth, job.version, after)
    cached = [got[t].at for t in dict.fromkeys(texts.values()) if t in got]
    todo: dict[str, str] = {}  # query text → the first topic asking it (a text is asked once)
    for q, text in texts.items():
        if text not in got and text not in todo:
            todo[text] = q
    tick(sum(1 for t in texts.values() if t in got))
    asker = _Asker(job, ask)
    bar = tqdm(total=len(todo), unit=" q", desc=f"{job.system}", disable=not shown(job.progress) or not todo,
               file=sys.stderr, leave=False, mininterval=0.5)
    bar.set_postfix(errors=0)

    def took(text: str, answer: Answer) -> None:
        job.cache.put(text, job.depth, job.version, answer)
        got[text] = answer
        bar.update(1)
        tick(1)
        if bar.postfix != f"errors={job.errors}":
            bar.set_postfix(errors=job.errors, refresh=False)

    t0 = time.perf_counter()
    try:
        _pooled(asker, todo, int(job.params["concurrency"]), took)
        if asker.failure is None:
            job.cache.mark_finished(job.depth, job.version)
    finally:
        bar.close()
        job.cache.close()
    if asker.failure is not None:
        raise asker.failure
    return {q: got[t] for q, t in texts.items()}, _notes(job, texts, todo, cached, time.perf_counter() - t0)


def _notes(job: Job, texts: Mapping[str, str], todo: Mapping[str, str], cached: list[Any], secs: float) -> dict[str, Any]:
    """What a run of :func:`ask_all` did, for its notes: the answers asked and those taken from the
    cache (resumed from a run that did not finish, or replayed), and when those were kept."""
    fresh = len(todo)
    notes: dict[str, Any] = {
        "queries": len(texts), "asked": fresh, "from_cache": sum(1 for t in texts.values() if t not in todo),
        "requests": job.asked, "retried_errors": job.errors, "seconds_asking": round(secs, 3),
        "queries_per_s": round(fresh / secs, 1) if fresh and secs > 0 else None}
    if cached:
        notes["from_cache_as"] = "resumed" if job.answers == "ask" else "replayed"
        notes["from_cache_kept"] = [_utc(min(cached)), _utc(max(cached))]
    return notes


def _utc(at: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(at, dt.timezone.utc).replace(microsecond=0).isoformat()


_KNOWN: dict[tuple[str, str, str], frozenset[str]] = {}


def collection_docids(target: Any) -> frozenset[str]:
    """The docids of the collection ``target`` searches (``all``: a record without an abstract, which
    the ``nt`` it searches lacks, is the collection's all the same, and an engine that returns one
    searched its title: the title-leak guard's outside rule, :mod:`nteval.leak`), read once per
    process and index version."""
    key = (str(target.index_dir), "all", target.fingerprint)
    if key not in _KNOWN:
        _KNOWN.clear()  # (one index at a time: a process does not keep millions of ids it no longer needs)
        _KNOWN[key] = frozenset(index_docids(target.index_dir, "all"))
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


def answers_used(infos: Iterable[Any]) -> dict[str, Any]:
    """Where the answers of a gate's or a check's live engines came from (``infos``: the
    :class:`nteval.runs.RunInfo` of its runs): per live system, the queries, the answers asked now,
    those taken from earlier (``as``: ``resumed`` from a run that did not finish, or ``replayed``)
    and when those were kept; ``note``: one sentence when any answer was not asked now, else None."""
    systems: dict[str, dict[str, Any]] = {}
    for info in infos:
        notes = info.notes or {}
        if not info.system.kind.live or "queries" not in notes:
            continue
        s = systems.setdefault(info.system.name, {"queries": 0, "asked": 0, "from_earlier": 0, "as": None, "kept": None})
        s["queries"] += notes["queries"]
        s["asked"] += notes["asked"]
        s["from_earlier"] += notes["from_cache"]
        kept = notes.get("from_cache_kept")
        if kept:
            s["as"] = notes["from_cache_as"]
            s["kept"] = kept if s["kept"] is None else [min(s["kept"][0], kept[0]), max(s["kept"][1], kept[1])]
    parts = []
    for name, s in systems.items():
        if s["from_earlier"]:
            how = "replayed" if s["as"] == "replayed" else "resumed from a run cut short"
            parts.append(f"{s['from_earlier']:,} of {s['queries']:,} answers of {name} {how}, kept {_when(s['kept'])}")
    note = None
    if parts:
        why = " (--reuse-answers)" if any(s["as"] == "replayed" for s in systems.values()) else ""
        note = f"Not asked now: {'; '.join(parts)}{why}."
    return {"systems": systems, "note": note}


def _when(kept: list[str]) -> str:
    first, last = (k.replace("T", " ").replace("+00:00", "") for k in kept)
    return f"at {first} UTC" if first == last else f"between {first} and {last} UTC"
