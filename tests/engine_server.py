"""A search engine behind HTTP on 127.0.0.1, for the tests and benchmarks of the ``http`` kind.

It answers from a real engine — nteval's Lucene runner over an index, PostgreSQL full-text search,
or the recorded answers of one of them (a JSON file ``{query text: [[docid, score], ...]}`` made by
the engine beforehand, so a server process needs no JVM) — in the documented response shapes of
Elasticsearch (``POST /INDEX/_search`` → ``hits.hits[]._id/_score``, ``hits.total.value``;
``GET /`` → ``version.number``), Solr (``GET /solr/CORE/select`` with edismax →
``response.docs[]``, ``response.numFound``; ``/solr/CORE/admin/system`` → ``lucene.solr-spec-version``)
and a plain service of one's own (``GET /search?q=&n=`` → ``{"results": [{"doc", "relevance"}]}``).

Fault modes (:class:`Faults`, changed at run time with ``POST /_nteval/faults``): slow answers,
HTTP 500/429 (with ``Retry-After``), malformed JSON, an empty body, a body cut short, ids not in the
collection, an id twice, a short page, an API key required, death after N requests, an answer
trickled one byte at a time, an answer that never ends, a NaN total.
``GET /_nteval/stats`` says how many searches it answered, for which queries.

Run as a program (``python tests/engine_server.py --backend recorded --answers F --port-file P``),
it dies with the process that started it (``PR_SET_PDEATHSIG``): a test killed with ``kill -9``
leaves no server behind.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ES_VERSION = "8.15.0"
SOLR_VERSION = "9.6.1"
#: the field that holds the abstract without the title (the one the NT protocols must search)
FIELD = "abstract"


@dataclass
class Faults:
    slow: float = 0.0                 # seconds before each search answer
    fail_first: int = 0               # the first N search requests answer fail_status
    fail_status: int = 500
    retry_after: str | None = None    # Retry-After header of those answers
    fail_query: str = ""              # a query text always answered fail_status
    malformed: str = ""               # a query text ("*": all) answered with broken JSON
    empty: str = ""                   # ... with an empty body
    truncate: str = ""                # ... with a body cut short (Content-Length says more)
    foreign: str = ""                 # ... with ids not in the collection
    duplicate: str = ""               # ... with its first hit twice
    short_page: str = ""              # ... with 5 hits while it counts all of them
    die_after: int = 0                # the process ends (os._exit) at search request N + 1
    api_key: str = ""                 # required as "Authorization: ApiKey KEY" when set
    id_prefix: str = ""               # the engine's ids: prefix + docid (an id map turns them back)
    trickle: str = ""                 # ... answered with its headers, then one byte every 0.2 s: each read is on
                                      # time, the answer never ends
    endless: str = ""                 # ... with a chunked body that never ends, sent as fast as it is read
    nan_total: str = ""               # ... with its total (the matches it counts) NaN
    echo400: bool = False             # every request answered HTTP 400 echoing its request line (as many search
                                      # servers' error pages do: kit6/srv/echo400.py)

    def hits(self, name: str, text: str) -> bool:
        v = getattr(self, name)
        return bool(v) and (v == "*" or v == text)


class LuceneBackend:
    """nteval's Lucene runner (BM25) over an index's ``nt`` documents (one search at a time: pyjnius)."""

    def __init__(self, index_dir: Path, k1: float = 0.9, b: float = 0.4, index_name: str = "nt"):
        from nteval.lucene.searcher import Index

        self.index = Index(Path(index_dir) / index_name)
        self.index.configure("bm25", k1=k1, b=b)
        self.lock = threading.Lock()

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        with self.lock:
            return [(d, float(s)) for d, s in self.index.search(text, k)]

    def close(self) -> None:
        self.index.close()


class PostgresBackend:
    """PostgreSQL full-text search over a table (docid, tsv), its words ORed, ranked by ts_rank."""

    def __init__(self, conninfo: str, table: str, config: str = "english"):
        self.conninfo, self.table, self.config = conninfo, table, config
        self.local = threading.local()

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        import psycopg

        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = psycopg.connect(self.conninfo, autocommit=True)
        rows = conn.execute(
            f"SELECT docid, ts_rank(tsv, x.q) AS s FROM {self.table}, (SELECT replace(websearch_to_tsquery("
            "%s::regconfig, %s)::text, ' & ', ' | ')::tsquery AS q) x WHERE tsv @@ x.q ORDER BY s DESC, docid LIMIT %s",
            (self.config, text, k)).fetchall()
        return [(d, float(s)) for d, s in rows]

    def close(self) -> None:
        pass


class RecordedBackend:
    """The answers a real engine gave, recorded: ``{query text: [[docid, score], ...]}`` at some depth."""

    def __init__(self, answers: dict[str, list]):
        self.answers = answers

    @classmethod
    def record(cls, backend: Any, texts: list[str], k: int) -> RecordedBackend:
        return cls({t: [[d, s] for d, s in backend.search(t, k)] for t in dict.fromkeys(texts)})

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        if text not in self.answers:
            raise KeyError(text)
        return [(d, s) for d, s in self.answers[text][:k]]

    def close(self) -> None:
        pass


class EngineServer:
    """A ThreadingHTTPServer on 127.0.0.1 answering from ``backend``; ``start()`` serves in a thread."""

    def __init__(self, backend: Any, faults: Faults | None = None, port: int = 0):
        self.backend = backend
        self.faults = faults or Faults()
        self.version = ES_VERSION
        self.searches = 0
        self.queries: list[str] = []
        self.requests: list[tuple[str, str]] = []  # (method, path with its query string) of each request
        self.times: list[float] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                server.handle(self, "GET")

            def do_POST(self) -> None:
                server.handle(self, "POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread: threading.Thread | None = None
        self.stopping = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> EngineServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping = True
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- answering ----------------------------------------------------------------------------

    def send(self, h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None,
             length: int | None = None) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)
        if length is not None and length != len(body):
            h.close_connection = True

    def json(self, h: BaseHTTPRequestHandler, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        self.send(h, status, json.dumps(doc).encode(), headers)

    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        qs = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        n = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(n) if n else b""
        path = parts.path.rstrip("/") or "/"
        f = self.faults
        with self.lock:
            self.requests.append((method, h.path))
        if f.echo400 and path != "/_nteval/faults":
            return self.json(h, 400, {"error": f"bad request: {method} {h.path}"})
        if path == "/_nteval/stats":
            with self.lock:
                return self.json(h, 200, {"searches": self.searches, "queries": list(self.queries)})
        if path == "/_nteval/faults" and method == "POST":
            self.faults = Faults(**json.loads(raw))
            return self.json(h, 200, asdict(self.faults))
        if f.api_key and h.headers.get("Authorization") != f"ApiKey {f.api_key}":
            return self.json(h, 401, {"error": {"root_cause": [{"type": "security_exception", "reason": "unable to "
                                                "authenticate with provided credentials"}], "type": "security_exception",
                                                "reason": "unable to authenticate with provided credentials"},
                                      "status": 401})
        if path == "/" and method == "GET":
            return self.json(h, 200, {"name": "nteval-test", "cluster_name": "nteval", "version": {
                "number": self.version, "build_flavor": "default", "lucene_version": "9.11.1"},
                "tagline": "You Know, for Search"})
        if path.endswith("/admin/system"):
            return self.json(h, 200, {"responseHeader": {"status": 0}, "lucene": {"solr-spec-version": SOLR_VERSION,
                                                                                  "lucene-spec-version": "9.10.0"}})
        if path.endswith("/_search"):
            try:
                body = json.loads(raw)
                match = body["query"]["match"]
                fld, spec = next(iter(match.items()))
                text = spec["query"] if isinstance(spec, dict) else spec
                k = int(body.get("size", 10))
            except (ValueError, KeyError, TypeError, StopIteration):
                return self.json(h, 400, {"error": {"root_cause": [{"type": "parsing_exception", "reason": "unknown "
                                                    "query"}], "type": "parsing_exception", "reason": "unknown query"},
                                          "status": 400})
            return self.search(h, "es", text, k, fld)
        if path.endswith("/select"):
            if qs.get("defType") != "edismax":
                return self.json(h, 400, {"error": {"msg": "this core answers edismax queries", "code": 400}})
            return self.search(h, "solr", qs.get("q", ""), int(qs.get("rows", 10)), qs.get("qf", ""))
        if path == "/search" and method == "POST":  # a custom service asked with a JSON body {q, n}
            try:
                body = json.loads(raw)
                return self.search(h, "custom", str(body["q"]), int(body.get("n", 10)), FIELD)
            except (ValueError, KeyError, TypeError):
                return self.json(h, 400, {"error": "expected a JSON body {q, n}"})
        if path == "/search":
            return self.search(h, "custom", qs.get("q", ""), int(qs.get("n", 10)), FIELD)
        return self.json(h, 404, {"error": f"no handler for {path}"})

    def search(self, h: BaseHTTPRequestHandler, shape: str, text: str, k: int, fld: str) -> None:
        f = self.faults
        with self.lock:
            self.searches += 1
            n = self.searches
            self.queries.append(text)
            self.times.append(time.monotonic())
        if f.die_after and n > f.die_after:
            os._exit(1)
        if f.slow:
            time.sleep(f.slow)
        if n <= f.fail_first or f.hits("fail_query", text):
            headers = {"Retry-After": f.retry_after} if f.retry_after else {}
            if shape == "solr":
                return self.json(h, f.fail_status, {"error": {"msg": "Server error (test fault)", "code": f.fail_status}},
                                 headers)
            return self.json(h, f.fail_status, {"error": {"root_cause": [{"type": "es_rejected_execution_exception",
                                                "reason": "rejected execution (test fault)"}], "type": "test"},
                                                "status": f.fail_status}, headers)
        if fld != FIELD:
            reason = f"field [{fld}] holds titles: search [{FIELD}]" if fld else "no field"
            return self.json(h, 400, {"error": {"root_cause": [{"type": "query_shard_exception", "reason": reason}],
                                                "type": "query_shard_exception", "reason": reason}, "status": 400})
        if f.hits("trickle", text) or f.hits("endless", text):
            return self.never_ends(h, trickle=f.hits("trickle", text))
        if f.hits("malformed", text):
            return self.send(h, 200, b'{"hits": {"total": {"value": 3}, "hits": [{"_id": "1", "_sc')
        if f.hits("empty", text):
            return self.send(h, 200, b"")
        hits = self.backend.search(text, k)
        total = len(hits)
        if f.hits("foreign", text):
            hits = [(f"not-a-doc-{i}", s) for i, (_d, s) in enumerate(hits)]
        if f.hits("duplicate", text) and hits:
            hits = [hits[0], *hits]
        if f.hits("short_page", text):
            hits = hits[:5]
        ids = [(f.id_prefix + d, s) for d, s in hits]
        if shape == "es":
            doc: Any = {"took": 3, "timed_out": False, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
                        "hits": {"total": {"value": total, "relation": "eq"}, "max_score": ids[0][1] if ids else None,
                                 "hits": [{"_index": "pubmed", "_id": d, "_score": s, "_source": {"pmid": d[len(f.id_prefix):]}}
                                          for d, s in ids]}}
        elif shape == "solr":
            doc = {"responseHeader": {"status": 0, "QTime": 3, "params": {"q": text, "defType": "edismax"}},
                   "response": {"numFound": total, "start": 0, "maxScore": ids[0][1] if ids else 0.0, "numFoundExact": True,
                                "docs": [{"id": d, "score": s} for d, s in ids]}}
        else:
            doc = {"results": [{"doc": d, "relevance": s} for d, s in ids], "count": total}
        if f.hits("nan_total", text) and shape == "es":
            doc["hits"]["total"]["value"] = float("nan")
        body = json.dumps(doc).encode()
        if f.hits("truncate", text):
            return self.send(h, 200, body[: len(body) // 2], length=len(body))
        return self.send(h, 200, body)

    def never_ends(self, h: BaseHTTPRequestHandler, trickle: bool) -> None:
        """An answer that does not end (until the client goes, the server stops, or 10 minutes):
        one byte every 0.2 s of a 1 MB answer, or 1 MB chunks as fast as they are read."""
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header(*(("Content-Length", "1000000") if trickle else ("Transfer-Encoding", "chunked")))
        h.end_headers()
        chunk = b" " * (1 << 20)
        frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        h.close_connection = True
        end = time.monotonic() + 600
        try:
            while not self.stopping and time.monotonic() < end:
                h.wfile.write(b" " if trickle else frame)
                h.wfile.flush()
                if trickle:
                    time.sleep(0.2)
        except OSError:
            pass


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent died before the line above
        os._exit(1)


def start_process(answers: Path, port_file: Path, faults: Faults | None = None, port: int = 0) -> Any:
    """A server process answering from recorded answers; returns (the process, its URL). It dies
    with this process."""
    import subprocess

    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, __file__, "--backend", "recorded", "--answers", str(answers), "--port-file",
                             str(port_file), "--faults", json.dumps(asdict(faults or Faults())), "--port", str(port)],
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_file.is_file() or not port_file.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the engine server did not start")
        time.sleep(0.02)
    return proc, f"http://127.0.0.1:{int(port_file.read_text())}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("recorded", "lucene", "postgres"), default="recorded")
    ap.add_argument("--answers", help="recorded answers (JSON)")
    ap.add_argument("--index", help="an nteval index (lucene)")
    ap.add_argument("--k1", type=float, default=0.9)
    ap.add_argument("--b", type=float, default=0.4)
    ap.add_argument("--conninfo", help="PostgreSQL connection (postgres)")
    ap.add_argument("--table", help="a table (docid, tsv) (postgres)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--faults", default="{}")
    args = ap.parse_args()
    _die_with_parent()
    if args.backend == "recorded":
        backend: Any = RecordedBackend(json.loads(Path(args.answers).read_text()))
    elif args.backend == "lucene":
        backend = LuceneBackend(Path(args.index), args.k1, args.b)
    else:
        backend = PostgresBackend(args.conninfo, args.table)
    server = EngineServer(backend, Faults(**json.loads(args.faults)), port=args.port)
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(server.port))
        os.replace(tmp, args.port_file)
    print(f"engine server on {server.url}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    server.httpd.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
