"""Any search engine behind an HTTP JSON API as a system kind: Elasticsearch, OpenSearch, Solr,
or a team's own service (``algorithm: http``; docs/live-engines.md).

A request template (``method``, ``url``, ``headers``, ``query_string``, ``body``) carries the query:
``{query}`` is the topic's text and ``{k}`` the depth asked (a string that is exactly ``"{k}"``
becomes the number), ``{field}`` the field to search; ``${NAME}`` is environment variable
``NAME`` (secrets: see :mod:`nteval.systems.remote`). The answer is read with JMESPath
expressions (https://jmespath.org): ``hits`` selects the list of hits, ``id`` and ``score`` are
read from each hit, ``total`` (optional) is the number of matches the engine counts. The engine's
ids become the collection's docids through the ``id`` field itself or an ``id_map`` file. A
``preset`` fills in what Elasticsearch/OpenSearch (``_search``, a ``match`` on ``field``,
``search_type=dfs_query_then_fetch``) and Solr (``/select``, edismax on ``field``) need; every
parameter given overrides it.

The engine must search **the field without titles** (the abstract alone): NT topics are titles,
and an engine that indexes them finds each topic's own document by its title. ``nteval export``
writes the collection in that shape for an engine that has no such field.

Transport: urllib3 (pooled keep-alive connections, one pool per host sized to ``concurrency``;
the library requests and pip are built on, kept current), with its own retries off: the retries,
backoff, Retry-After, rate limit and answer cache are nteval's (:mod:`nteval.systems.remote`), the
same for every remote engine.
"""
from __future__ import annotations

import copy
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from ..errors import InputError, short
from ..params import Param
from .kind import FAMILY, RunContext, SystemKind
from .remote import (
    HOW,
    VERSION,
    Answer,
    AnswerCache,
    EngineError,
    Job,
    Secrets,
    ask_all,
    cache_file,
    collection_docids,
    file_digest,
    finish,
    hide_password,
    load_id_map,
    printable,
    resolve_path,
    uses_env,
)

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

#: bump when a preset changes what it asks (part of the cache keys; 2: custom asks with POST when it has a body)
PRESETS_VERSION = 2
_ES = {
    "method": "POST", "path": "/_search", "query_string": {"search_type": "dfs_query_then_fetch"},
    "body": {"query": {"match": {"{field}": {"query": "{query}", "operator": "or"}}}, "size": "{k}", "_source": False,
             "track_total_hits": True},
    "headers": {"Content-Type": "application/json"},
    "hits": "hits.hits", "id": "_id", "score": "_score", "total": "hits.total.value",
    "version_url": "{root}/", "version_path": "version.number",
}
#: what each preset fills in (``path`` is appended to ``url``; ``{root}`` is the URL's scheme and host)
PRESETS: dict[str, dict[str, Any]] = {
    "elasticsearch": _ES,
    "opensearch": _ES,
    "solr": {
        "method": "GET", "path": "/select",
        "query_string": {"q": "{query}", "defType": "edismax", "qf": "{field}", "q.op": "OR", "fl": "id,score",
                         "rows": "{k}", "wt": "json"},
        "hits": "response.docs", "id": "id", "score": "score", "total": "response.numFound",
        "version_url": "{url}/admin/system?wt=json", "version_path": 'lucene."solr-spec-version"',
    },
    "custom": {},  # (GET, or POST when a body is given: the Client's choice when no method is given)
}

PRESET = Param("preset", "custom", "what the engine is: elasticsearch, opensearch, solr, or custom (say everything)",
               choices=tuple(PRESETS))
URL = Param("url", "", "the engine's URL: the index (Elasticsearch/OpenSearch), the core (Solr), or the search "
                       "endpoint itself (custom; {query} and {k} are URL-encoded into it)")
FIELD = Param("field", "", "the field the presets search: the one holding the abstract WITHOUT the title")
METHOD = Param("method", "", "GET or POST (empty: the preset's; custom: POST when a body is given, else GET)",
               choices=("GET", "POST"))
HEADERS = Param("headers", None, "HTTP headers (values may use ${ENV})", items="mapping")
QUERY_STRING = Param("query_string", None, "URL query parameters (replace the preset's)", items="mapping")
BODY = Param("body", None, "the JSON body (replaces the preset's): {query}, {k}, {field} and ${ENV} in its strings",
             items="mapping")
HITS = Param("hits", "", "JMESPath to the list of hits in the answer (empty: the preset's)")
ID = Param("id", "", "JMESPath to a hit's document id, e.g. _id or _source.pmid (empty: the preset's)")
SCORE = Param("score", "", "JMESPath to a hit's score (empty: the preset's; none with custom: the rank order)")
TOTAL = Param("total", "", "JMESPath to the number of matches (empty: the preset's; none with custom); a page with "
                           "fewer hits than asked and than this is refused")
ID_MAP = Param("id_map", "", "a file of engine_id<TAB>docid lines mapping the engine's ids to the collection's")
VERSION_URL = Param("version_url", "", "where the engine reports its version (empty: the preset's)")
VERSION_PATH = Param("version_path", "", "JMESPath to the version in that answer (empty: the preset's)")
MAX_ANSWER = Param("max_answer_mb", 64, "the largest answer read, in MB: a bigger one (an answer that never ends) "
                                        "fails the run in one line", min=1, max=4096)

_SPACE = re.compile(r"\s")
#: statuses tried again (with backoff, or after Retry-After)
RETRY_STATUS = (429, 500, 502, 503, 504)


class Path_:
    """A compiled JMESPath expression, with a fast path for plain ``a.b[0].c`` chains (no library
    call per hit: thousands of hits per answer)."""

    def __init__(self, expr: str, system: str, param: str):
        import jmespath

        self.expr = expr
        try:
            self.compiled = jmespath.compile(expr)
        except jmespath.exceptions.JMESPathError as err:
            raise InputError(None, f"system {short(system)}: {param} {short(expr)} is not a JMESPath expression: "
                                   f"{printable(str(err), 120)}") from None
        self.steps = _steps(self.compiled.parsed)

    def __call__(self, value: Any) -> Any:
        if self.steps is None:
            return self.compiled.search(value)
        for step in self.steps:
            if isinstance(step, str):
                if not isinstance(value, dict):
                    return None
                value = value.get(step)
            else:
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    return None
                value = value[step]
        return value


def _steps(node: dict[str, Any]) -> list[str | int] | None:
    """``a.b[0]`` as ["a", "b", 0]; None for anything else (projections, filters, functions)."""
    kind = node.get("type")
    if kind == "field":
        return [node["value"]]
    if kind == "subexpression":
        parts = [_steps(c) for c in node["children"]]
        return None if any(p is None for p in parts) else [s for p in parts for s in p]  # type: ignore[union-attr]
    if kind == "index_expression":
        left, right = node["children"]
        head = _steps(left) if left.get("type") != "identity" else []
        if head is None or right.get("type") != "index":
            return None
        return [*head, int(right["value"])]
    return None


def resolved(system: System) -> dict[str, Any]:
    """The system's parameters with its preset's filled in where it gives none (``url`` with the
    preset's path; placeholders and ${ENV} not yet replaced)."""
    p = system.params
    preset = PRESETS[p["preset"]]
    out = {k: (copy.deepcopy(p[k]) if p.get(k) not in ("", None) else copy.deepcopy(preset.get(k)))
           for k in ("method", "headers", "query_string", "body", "hits", "id", "score", "total", "version_path")}
    url = getattr(p["url"], "given", p["url"])  # (a password written in it: the URL as given, for the requests)
    parts = urlsplit(url)
    base = parts._replace(path=parts.path.rstrip("/"), query="", fragment="").geturl()
    if preset.get("path"):  # (the preset's path goes before the URL's query string: ?token=…)
        out["url"] = parts._replace(path=parts.path.rstrip("/") + preset["path"]).geturl()
    else:
        out["url"] = url
    root = f"{parts.scheme}://{parts.netloc}"
    vurl = getattr(p.get("version_url"), "given", p.get("version_url")) or preset.get("version_url") or ""
    tail = f"?{parts.query}" if parts.query and vurl.startswith(("{root}", "{url}")) else ""
    vurl = vurl.replace("{root}", root).replace("{url}", base)
    out["version_url"] = vurl + (("&" if "?" in vurl else "?") + tail[1:] if tail else "")
    out["field"] = p.get("field", "")
    return out


def _fill(value: Any, query: str, k: int, field: str) -> Any:
    """The template ``value`` with {query}, {k} and {field} put in (``"{k}"`` alone: the number)."""
    if isinstance(value, str):
        if value == "{k}":
            return k
        return value.replace("{field}", field).replace("{k}", str(k)).replace("{query}", query)
    if isinstance(value, list):
        return [_fill(v, query, k, field) for v in value]
    if isinstance(value, dict):
        return {_fill(key, query, k, field): _fill(v, query, k, field) for key, v in value.items()}
    return value


#: the request a thread is making (its connection is recorded on it when the request is sent)
_CURRENT = threading.local()


class Ticket:
    """One request in flight: its deadline, the connection it is sent on, whether its answer
    ``began`` (the status line and headers came), and whether its deadline passed (``expired``) or
    it was ``aborted``."""

    __slots__ = ("deadline", "conn", "began", "expired", "aborted")

    def __init__(self, deadline: float):
        self.deadline, self.conn, self.began, self.expired, self.aborted = deadline, None, False, False, False

    def cut(self) -> None:
        """Shut its connection down: the read blocked on it returns at once (from any thread)."""
        sock = getattr(self.conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class InFlight:
    """The requests of one client in flight. A watchdog thread cuts each one whose deadline passed
    (a total deadline: urllib3's read timeout is per read, and an answer trickled one byte at a time
    never ends); :meth:`abort` cuts them all (an interrupt)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tickets: set[Ticket] = set()
        self.aborted = self.closed = False
        self.watchdog: threading.Thread | None = None

    def start(self, seconds: float) -> Ticket:
        ticket = Ticket(time.monotonic() + seconds)
        with self.lock:
            if self.aborted:
                raise EngineError("stopped (interrupted)")
            self.tickets.add(ticket)
            if self.watchdog is None:
                self.watchdog = threading.Thread(target=self._watch, name="nteval-http-deadlines", daemon=True)
                self.watchdog.start()
        _CURRENT.ticket = ticket
        return ticket

    def end(self, ticket: Ticket) -> None:
        _CURRENT.ticket = None
        with self.lock:
            self.tickets.discard(ticket)

    def abort(self) -> None:
        with self.lock:
            self.aborted = True
            for t in self.tickets:
                t.aborted = True
                t.cut()

    def close(self) -> None:
        self.closed = True

    def _watch(self) -> None:
        while not self.closed:
            time.sleep(0.1)
            now = time.monotonic()
            with self.lock:
                for t in self.tickets:
                    if now > t.deadline and not t.expired:
                        t.expired = True
                        t.cut()


_POOLS: dict[str, type] = {}


def _pool_classes() -> dict[str, type]:
    """urllib3's connection pools, whose connections record themselves on the request a thread is
    making (so that its deadline can cut it)."""
    if not _POOLS:
        import urllib3
        from urllib3.connection import HTTPConnection, HTTPSConnection

        def tracked(base: type) -> type:
            class Tracked(base):
                def request(self, *args: Any, **kwargs: Any) -> Any:
                    ticket = getattr(_CURRENT, "ticket", None)
                    if ticket is not None:
                        ticket.conn = self
                    return super().request(*args, **kwargs)

            return Tracked

        _POOLS["http"] = type("HTTPPool", (urllib3.HTTPConnectionPool,), {"ConnectionCls": tracked(HTTPConnection)})
        _POOLS["https"] = type("HTTPSPool", (urllib3.HTTPSConnectionPool,), {"ConnectionCls": tracked(HTTPSConnection)})
    return dict(_POOLS)


class Client:
    """The requests of one run: the template expanded (${ENV}) once, a pool of connections."""

    def __init__(self, system: System, spec: dict[str, Any], secrets: Secrets, depth: int):
        import urllib3

        p = system.params
        self.system, self.spec, self.secrets, self.depth = system.name, spec, secrets, depth
        secrets.given(spec["version_url"])  # (a password written in a URL: redacted from every message)
        self.url = secrets.expand(secrets.given(spec["url"]), url=True)
        self.headers = {str(k): str(v) for k, v in (secrets.expand_all(spec["headers"] or {})).items()}
        self.query_string = secrets.expand_all(spec["query_string"] or {})
        self.body = secrets.expand_all(spec["body"]) if spec["body"] is not None else None
        if self.body is not None and not any(k.lower() == "content-type" for k in self.headers):
            self.headers["Content-Type"] = "application/json"
        self.method = spec["method"] or ("POST" if self.body is not None else "GET")
        # what does not change from query to query, made once: the URL (when the query is not in it),
        # the body's JSON text with {k} and {field} put in
        templated = "{" in self.url or "{query}" in json.dumps(self.query_string)
        self._static_url: str | None = None
        if not templated:
            qs = {key: str(v) for key, v in _fill(self.query_string, "", depth, spec["field"]).items()}
            self._static_url = self.url + (("&" if "?" in self.url else "?") + urlencode(qs) if qs else "")
        self._body = json.dumps(_fill(self.body, "{query}", depth, spec["field"])) if self.body is not None else None
        self.hits = Path_(spec["hits"], system.name, "hits") if spec["hits"] else None
        self.id = Path_(spec["id"], system.name, "id") if spec["id"] else None
        self.score = Path_(spec["score"], system.name, "score") if spec["score"] else None
        self.total = Path_(spec["total"], system.name, "total") if spec["total"] else None
        self.timeout = float(p["timeout"])
        self.max_bytes = int(float(p.get("max_answer_mb") or MAX_ANSWER.default) * 1_000_000)
        self.pool = urllib3.PoolManager(num_pools=4, maxsize=int(p["concurrency"]), block=True, retries=False,
                                        timeout=urllib3.Timeout(connect=min(self.timeout, 10.0), read=self.timeout))
        self.pool.pool_classes_by_scheme = _pool_classes()
        self.flight = InFlight()

    def close(self) -> None:
        self.flight.close()
        self.pool.clear()

    def abort(self) -> None:
        """End every request in flight now, and any made after (an interrupt: no worker stays blocked)."""
        self.flight.abort()

    def request(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, dict, bytes]:
        """(status, headers, body) of one request, in :attr:`timeout` seconds in all (connecting,
        the headers and the whole body: an engine that trickles its answer is cut), its body read up
        to :attr:`max_bytes`."""
        import urllib3

        ticket = self.flight.start(self.timeout)
        try:
            r = self.pool.request(method, url, body=body, headers=headers, redirect=False, preload_content=False)
            ticket.began = True
            try:
                return r.status, dict(r.headers), self._read_body(r, url, ticket)
            except BaseException:
                r.close()  # (the rest of the answer unread: its connection is not reused as it is)
                raise
            finally:
                self.flight.end(ticket)
                r.release_conn()
        except urllib3.exceptions.HTTPError as err:
            raise self._failed(err, url, ticket) from None
        finally:
            self.flight.end(ticket)

    def _read_body(self, r: Any, url: str, ticket: Ticket) -> bytes:
        length = r.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise self._too_big(url, f"it announces {int(length) / 1e6:,.0f} MB")
        data = bytearray()
        for chunk in r.stream(1 << 16):
            data += chunk
            if len(data) > self.max_bytes:
                raise self._too_big(url, "it had not ended there")
        return bytes(data)

    def _too_big(self, url: str, why: str) -> EngineError:
        return EngineError(f"the answer from {_where(url)} is larger than max_answer_mb ({self.max_bytes / 1e6:g} MB; "
                           f"{why}): an answer that never ends? (a bigger answer: raise max_answer_mb)")

    def _failed(self, err: Exception, url: str, ticket: Ticket) -> EngineError:
        """What a failed request says, and whether trying again may help."""
        import urllib3

        if ticket.aborted:
            return EngineError("stopped (interrupted)")
        if isinstance(err, urllib3.exceptions.NewConnectionError):  # (a ConnectTimeoutError to urllib3)
            return EngineError(f"cannot connect to {_where(url)} ({_reason(err, self.secrets.redact)})", retry=True)
        if ticket.expired or isinstance(err, (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError)):
            if ticket.began:
                return EngineError(f"no complete answer from {_where(url)} within {self.timeout:g} s (timeout: the answer "
                                   "began, then did not end)", retry=True)
            return EngineError(f"no answer from {_where(url)} within {self.timeout:g} s (timeout)", retry=True)
        if isinstance(err, urllib3.exceptions.ProtocolError):
            return EngineError(f"the connection to {_where(url)} broke mid-answer ({_reason(err, self.secrets.redact)})", retry=True)
        return EngineError(f"{type(err).__name__} from {_where(url)}: {_reason(err, self.secrets.redact)}", retry=False)

    def search(self, query: str) -> Answer:
        k, field = self.depth, self.spec["field"]
        url = self._static_url
        if url is None:
            url = _fill_url(self.url, query, k, field)
            if self.query_string:
                qs = {key: str(v) for key, v in _fill(self.query_string, query, k, field).items()}
                url += ("&" if "?" in url else "?") + urlencode(qs)
        body = None
        if self._body is not None:  # (the template's JSON text, the query put in as a JSON string's content)
            body = self._body.replace("{query}", json.dumps(query)[1:-1]).encode("utf-8")
        status, headers, data = self.request(self.method, url, body, self.headers)
        if not 200 <= status < 300:
            raise _status_error(status, headers, data, f"{self.method} {_where(url)}", self.secrets.redact)
        return self.parse(data)

    def parse(self, data: bytes) -> Answer:
        if not data.strip():
            raise EngineError("an empty answer (HTTP 200 without a body)")
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError) as err:
            raise EngineError(f"an answer that is not JSON ({printable(str(err), 80)}): "
                              f"{printable(data[:120].decode('utf-8', 'replace'), 120)}") from None
        hits = self.hits(doc) if self.hits is not None else doc
        if not isinstance(hits, list):
            raise EngineError(f"no list of hits at {self.hits.expr if self.hits else 'the top'} of its answer (found "
                              f"{_shape(hits)}; the answer's keys: {_keys(doc)})")
        out = self._fast(hits) or self._careful(hits)
        total = None
        if self.total is not None:
            t = self.total(doc)
            if isinstance(t, float) and not math.isfinite(t):
                raise EngineError(f"its total (the matches it counts, at {self.total.expr}) is {t}, not a number")
            total = int(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
        return Answer(out[0], out[1], total)

    def _fast(self, hits: list) -> tuple[list[str], list[float]] | None:
        """The hits when the id and the score are plain keys of each hit holding a string and a float (what
        Elasticsearch and Solr answer): read in one pass, checked in bulk; None when anything is
        otherwise (:meth:`_careful` then reads them one by one and names what is wrong)."""
        ik = self.id.steps if self.id is not None else None
        sk = self.score.steps if self.score is not None else None
        if not (ik and sk and len(ik) == 1 and len(sk) == 1 and isinstance(ik[0], str) and isinstance(sk[0], str)):
            return None
        i, k = ik[0], sk[0]
        try:
            ids = list(map(itemgetter(i), hits))
            scores = list(map(itemgetter(k), hits))
        except (KeyError, TypeError, IndexError):
            return None
        types = set(map(type, scores))
        try:
            joined = "".join(ids)  # (TypeError: an id that is not a string)
        except TypeError:
            return None
        if not hits or not types <= {float, int} or _SPACE.search(joined) or not all(ids):
            return None
        return ids, scores if float in types and len(types) == 1 else list(map(float, scores))

    def _careful(self, hits: list) -> tuple[list[str], list[float]]:
        ids: list[str] = []
        scores: list[float] = []
        n = len(hits)
        id_path, score_path = self.id, self.score
        for i, hit in enumerate(hits):
            raw = id_path(hit) if id_path is not None else hit
            if isinstance(raw, list) and len(raw) == 1:  # (a stored field as Solr or ES "fields" give it)
                raw = raw[0]
            if not isinstance(raw, (str, int)) or isinstance(raw, bool) or not str(raw).strip():
                what = id_path.expr if id_path is not None else "an id"
                raise EngineError(f"hit {i + 1} has no document id at {what} (found {_shape(raw)}; the hit's keys: "
                                  f"{_keys(hit)})")
            doc_id = str(raw)
            if _SPACE.search(doc_id):
                raise EngineError(f"hit {i + 1}: document id {short(doc_id)} contains whitespace")
            if score_path is None:
                score = float(n - i)
            else:
                s = score_path(hit)
                if not isinstance(s, (int, float)) or isinstance(s, bool):
                    raise EngineError(f"hit {i + 1} ({short(doc_id)}) has no score at {score_path.expr} (found "
                                      f"{_shape(s)})")
                score = float(s)
            ids.append(doc_id)
            scores.append(score)
        return ids, scores

    def engine_version(self) -> tuple[str, str | None]:
        """(the version the engine reports, or "", why not)."""
        url, path = self.spec["version_url"], self.spec["version_path"]
        if not url or not path:
            return "", None
        try:
            status, _h, data = self.request("GET", self.secrets.expand(url, url=True), None,
                                            {k: v for k, v in self.headers.items() if k.lower() != "content-type"})
            if status != 200:
                return "", f"HTTP {status} for GET {_where(url)}"
            v = Path_(path, self.system, "version_path")(json.loads(data))
        except (EngineError, ValueError) as err:
            return "", printable(self.secrets.redact(str(err)), 120)
        return (str(v), None) if isinstance(v, (str, int, float)) and str(v).strip() else ("", f"nothing at {path}")


def _fill_url(url: str, query: str, k: int, field: str) -> str:
    if "{" not in url:
        return url
    return url.replace("{query}", quote(query, safe="")).replace("{k}", str(k)).replace("{field}", quote(field, safe=""))


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def _reason(err: Exception, redact: Callable[[str], str] = str) -> str:
    text = redact(str(getattr(err, "reason", None) or err))
    for marker in ("[Errno 111] ", "[Errno 104] "):
        text = text.replace(marker, "")
    return printable(text.rsplit(": ", 1)[-1] if "Failed to establish" in text else text, 120)


def _shape(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return short(value, 40)


def _keys(value: Any) -> str:
    return ", ".join(map(str, list(value)[:8])) if isinstance(value, dict) and value else "none"


def _status_error(status: int, headers: dict, data: bytes, request: str = "",
                  redact: Callable[[str], str] = str) -> EngineError:
    """``HTTP 404 for GET http://host/search: what the engine said`` (``request``: the method and
    the URL without its query string), the secrets in what it said redacted before it is cut short
    (a cut would leave part of one)."""
    said = _engine_said(data, redact)
    retry_after = None
    if status in RETRY_STATUS:
        value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
        if value is not None:
            retry_after = _retry_after(str(value))
    return EngineError(f"HTTP {status}" + (f" for {request}" if request else "") + (f": {said}" if said else ""),
                       retry=status in RETRY_STATUS,
                       retry_after=retry_after)


def _retry_after(value: str) -> float | None:
    """The seconds a ``Retry-After`` header asks for, as the engine said them (seconds, or an HTTP
    date; not capped as urllib3's parser caps them); None when it is neither."""
    import email.utils

    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time()) if when.tzinfo is not None else None


def _engine_said(data: bytes, redact: Callable[[str], str] = str) -> str:
    """What an error answer says: Elasticsearch's error.reason (its root cause's), Solr's error.msg,
    a ``message``, or the start of the body (``redact``: the secrets put back as their ``${NAME}``
    first, in the whole answer)."""
    text = redact(data.decode("utf-8", "replace"))
    try:
        doc = json.loads(text)
    except ValueError:
        return printable(text, 200)
    if isinstance(doc, dict):
        err = doc.get("error")
        if isinstance(err, dict):
            causes = err.get("root_cause")
            cause = causes[0] if isinstance(causes, list) and causes and isinstance(causes[0], dict) else err
            parts = [cause.get("type"), cause.get("reason") or err.get("msg") or err.get("reason")]
            return printable(": ".join(str(x) for x in parts if x), 200)
        for key in ("error", "message", "detail"):
            if isinstance(doc.get(key), str):
                return printable(doc[key], 200)
    return printable(text, 200)


_REPORTED: dict[str, str] = {}


def reported_version(system: System) -> str:
    """The version the engine reports (empty: it reports none, or could not be asked), asked once
    per process and URL."""
    spec = resolved(system)
    if not spec["version_url"] or not spec["version_path"]:
        return ""
    memo = json.dumps([spec["version_url"], spec["version_path"], spec["headers"]], sort_keys=True)
    if memo not in _REPORTED:
        try:
            client = Client(system, spec, Secrets(system.name), 0)
        except InputError:  # (a secret not set: the run says so)
            return ""
        try:
            _REPORTED[memo] = client.engine_version()[0]
        finally:
            client.close()
    return _REPORTED[memo]


class HttpKind(SystemKind):
    name = "http"
    params = (PRESET, URL, FIELD, METHOD, HEADERS, QUERY_STRING, BODY, HITS, ID, SCORE, TOTAL, ID_MAP, VERSION_URL,
              VERSION_PATH, VERSION, *HOW, MAX_ANSWER)
    summary = "any search engine behind an HTTP JSON API: Elasticsearch, OpenSearch, Solr, a service of yours"
    needs_lucene = False
    live = True

    def may_see_titles(self, system: System) -> bool:
        return True  # (an engine nteval did not index: the title-leak rules check its runs)

    def check(self, name: str, params: dict[str, Any], where: Any) -> None:
        for key in ("url", "version_url"):  # (a password written in one reaches no output)
            params[key] = hide_password(params[key])
        url = params["url"]
        if not url:
            raise InputError(where, f"system {short(name)}: http needs url: the engine's address (e.g. "
                                    "http://127.0.0.1:9200/pubmed)", place="params.url")
        parts = urlsplit(url.replace("${", "").replace("}", ""))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InputError(where, f"system {short(name)}: url must be an http:// or https:// address, got {short(url)}",
                             place="params.url")
        preset = PRESETS[params["preset"]]
        uses_field = "{field}" in json.dumps([preset.get("body"), preset.get("query_string"), params.get("body"),
                                              params.get("query_string"), url])
        if uses_field and not params["field"]:
            raise InputError(where, f"system {short(name)}: the {params['preset']} preset searches field: give the name of "
                                    "the field that holds the abstract WITHOUT the title (NT topics are titles; an engine "
                                    "without such a field: index `nteval export`'s collection)", place="params.field")
        template = json.dumps([url, params.get("query_string") or preset.get("query_string"),
                               params.get("body") or preset.get("body")])
        if "{query}" not in template:
            raise InputError(where, f"system {short(name)}: the request never carries the query: put {{query}} in url, "
                                    "query_string or body", place="params")
        if params["preset"] == "custom" and not params["hits"]:
            raise InputError(where, f"system {short(name)}: a custom engine needs hits: the JMESPath to its list of hits "
                                    "(e.g. results, or @ when the answer is the list)", place="params.hits")
        for key in ("hits", "id", "score", "total", "version_path"):
            if params.get(key):
                Path_(params[key], name, key)
        resolve_path(params, "id_map", where)
        if params["id_map"] and file_digest(params["id_map"]) is None:
            raise InputError(params["id_map"], f"system {short(name)}: no such id_map file", place=None)

    def _asks(self, system: System) -> dict[str, Any]:
        """What determines the engine's answers (the answer cache's key): the request and the paths
        into the answer, your version label; not the id map, nor how it is asked."""
        how = {p.name for p in (*HOW, MAX_ANSWER)} | {"id_map", FAMILY}
        return {"kind": "http", "presets": PRESETS_VERSION,
                "params": {k: v for k, v in system.params.items() if k not in how}}

    def identity(self, system: System) -> dict[str, Any]:
        """What the answers depend on, the id map's content, and the version the engine reports
        now (asked once per process): an engine upgraded in place is a new system, its runs are not
        reused."""
        ident = {**self._asks(system), "algorithm": system.algorithm, "engine_version": reported_version(system)}
        if system.params.get("id_map"):
            ident["id_map"] = file_digest(system.params["id_map"])
        return ident

    def describe(self, system: System) -> str:
        p = system.params
        return f"http {p['preset']} {short(p['url'], 60)}" + (f" (version {p['version']})" if p.get("version") else "")

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        secrets = Secrets(system.name)
        spec = resolved(system)
        client = Client(system, spec, secrets, depth)
        try:
            version, version_problem = client.engine_version()
            memo = json.dumps([spec["version_url"], spec["version_path"], spec["headers"]], sort_keys=True)
            _REPORTED[memo] = version
            label = system.params.get("version") or ""
            path, key = cache_file(target.index_dir, system.name, {**self._asks(system), "index": target.index_name,
                                                                  "fingerprint": target.fingerprint})
            cache = AnswerCache(path, key)
            job = Job(system.name, system.params, depth, f"{label}|{version}", cache, secrets, target.progress,
                      target.answers, client.abort)
            answers, notes = ask_all(job, topics, client.search, ctx.tick)
        finally:
            client.close()
        id_map = load_id_map(system.params["id_map"], system.name) if system.params.get("id_map") else None
        known = collection_docids(target)
        out, checked = finish(job, answers, topics, known, id_map, " (mapped through id_map)" if id_map else "")
        problem = {"version_problem": version_problem} if version_problem else {}
        target.notes[system.name] = {"engine": "http", "preset": system.params["preset"], "url": system.params["url"],
                                     "engine_version": version or None, "version": label or None, **notes, **problem,
                                     "answers": str(path), **checked}
        return out

    def secrets_used(self, system: System) -> list[str]:
        p = system.params
        return sorted(set(uses_env([p.get(k) for k in ("url", "headers", "query_string", "body", "version_url")])))
