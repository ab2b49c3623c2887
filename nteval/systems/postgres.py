"""PostgreSQL full-text search as a system kind (``algorithm: postgres``; docs/live-engines.md):
``to_tsvector`` documents, ``websearch_to_tsquery`` queries, ranked by ``ts_rank`` or
``ts_rank_cd``, in the text search configuration you name (``config``). ``pip install
'nteval[postgres]'`` (psycopg 3).

Two ways to point it at documents:

- **nteval's table** (no ``table``): nteval loads the documents of the index the protocol
  searches (exactly the texts Lucene indexed, :func:`nteval.corpus.store.index_texts`) into a table
  of its own, ``nteval_<index>_<config>_<fingerprint>``, with a stored ``tsvector`` column and a
  GIN index. The load is one transaction under an advisory lock (a killed load leaves nothing; two
  processes never load at once); the table's comment records the documents it holds (their count
  and the sha256 of their ids), checked before each run: a table that does not check out is loaded
  again, and said so.
- **your table** (``table``, ``id_column``, and ``text_column`` or ``tsvector_column``): the column
  searched must hold the abstract WITHOUT the title; its ids must be the collection's docids.

Connection by URL (``url: postgresql://user@host:port/db``): the password comes from the
environment, libpq's ``PGPASSWORD`` (or ``~/.pgpass``), or ``${NAME}`` in the URL; it never reaches
outputs. Asking shares the machinery of every remote engine (:mod:`nteval.systems.remote`:
answer cache, concurrency, timeouts as ``statement_timeout``, retries, one line on failure).

**How it differs from Lucene BM25**: ``ts_rank`` counts how often the query's lexemes occur (with
``normalization`` options for the document's length), with no inverse document frequency: a
common word weighs as much as a rare one. The ``english`` configuration stems with Snowball's
English stemmer (Porter2; Lucene: Porter) and drops a longer stop list (127 words; Lucene's: 33).
``websearch_to_tsquery`` requires every word (``operator: and``, what a search box built on it
does); ``operator: or`` asks the same query with its words joined by OR (a bag of words, as
Lucene's).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import TYPE_CHECKING, Any

from ..corpus.store import index_docids, index_texts
from ..errors import AMBIGUOUS_PASSWORD, InputError, ambiguous_password, short
from ..params import Param
from .engines import docids_digest, require
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
    finish,
    hide_password,
    printable,
)

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

URL = Param("url", "", "postgresql://user@host:port/db (the password from PGPASSWORD, ~/.pgpass or ${ENV} in it)")
CONFIG = Param("config", "english", "the text search configuration (to_tsvector, websearch_to_tsquery)")
RANK = Param("rank", "ts_rank", "the ranking function", choices=("ts_rank", "ts_rank_cd"))
NORMALIZATION = Param("normalization", 0, "the rank's normalization bitmask (0: none; 1: ÷ 1 + log length; 2: ÷ "
                                          "length; 32: rank/(rank + 1))", min=0, max=63)
OPERATOR = Param("operator", "or", "how a query's words combine (and: websearch_to_tsquery as is; or: its words "
                                   "joined by OR, a bag of words)", choices=("or", "and"))
TABLE = Param("table", "", "a table of yours to search (empty: nteval loads the index's documents into one)")
ID_COLUMN = Param("id_column", "id", "your table's column of document ids (the collection's docids)")
TEXT_COLUMN = Param("text_column", "", "your table's column holding the abstract WITHOUT the title")
TSVECTOR_COLUMN = Param("tsvector_column", "", "your table's tsvector column of that text, if it has one (with a GIN "
                                               "index: fast)")
#: the layout of nteval's own tables (their comment's "format")
TABLE_FORMAT = 1
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


def _qualified(name: str, system: str, what: str, where: Any = None) -> list[str]:
    parts = name.split(".")
    if not 1 <= len(parts) <= 2 or not all(_IDENT.match(p) for p in parts):
        raise InputError(where, f"system {short(system)}: {what} must be a name (letters, digits, _; schema.table for a "
                                f"table), got {short(name)}", place=f"params.{what}")
    return parts


def own_table(index_name: str, config: str, fingerprint: str) -> str:
    tag = "".join(c if c.isalnum() else "_" for c in config.lower())[:20]
    return f"nteval_{index_name}_{tag}_{fingerprint[:12]}"


#: seconds an interrupt waits for the server to cancel a connection's statement (all connections at once)
CANCEL_WAIT = 3


class Connections:
    """One connection per worker thread, made on first use and again after a lost one."""

    def __init__(self, psycopg: Any, conninfo: str, timeout: float, secrets: Secrets, system: str):
        self.pg, self.conninfo, self.timeout, self.secrets, self.system = psycopg, conninfo, timeout, secrets, system
        self.local = threading.local()
        self.all: list[Any] = []
        self.lock = threading.Lock()

    def get(self) -> Any:
        conn = getattr(self.local, "conn", None)
        if conn is None or conn.closed:
            try:
                conn = self.pg.connect(self.conninfo, autocommit=True, connect_timeout=max(1, int(min(self.timeout, 30))),
                                       options=f"-c statement_timeout={int(self.timeout * 1000)}",
                                       application_name="nteval")
            except self.pg.Error as err:
                raise _error(err, connecting=True) from None
            self.local.conn = conn
            with self.lock:
                self.all.append(conn)
        return conn

    def drop(self) -> None:
        conn = getattr(self.local, "conn", None)
        self.local.conn = None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001,S110  (already broken)
                pass

    def cancel(self) -> None:
        """Cancel the statement running on every connection (an interrupt: no worker waits for its
        statement_timeout)."""
        with self.lock:
            conns = list(self.all)

        def one(conn: Any) -> None:
            try:
                conn.cancel_safe(timeout=CANCEL_WAIT)
            except Exception:  # noqa: BLE001,S110  (closed, or the server is gone: nothing runs there)
                pass

        # all at once, each waiting at most CANCEL_WAIT: one after another, four stalled connections
        # kept an interrupted run alive for 20 s and more (a CI runner kills about 10 s after SIGTERM)
        threads = [threading.Thread(target=one, args=(c,), daemon=True, name="nteval-pg-cancel") for c in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CANCEL_WAIT + 1)

    def close(self) -> None:
        with self.lock:
            for conn in self.all:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001,S110
                    pass


def _error(err: Exception, connecting: bool = False) -> EngineError:
    """A psycopg error as what the server said, and whether trying again may help (a lost or refused
    connection, a statement cancelled by its timeout, a server shutting down; not a refused
    password, an unknown database, a table or column that does not exist)."""
    text = printable(str(err).replace("\n", " "), 240)
    state = getattr(err, "sqlstate", None) or ""
    said = text.replace("connection failed: ", "")
    if state == "57014":  # query_canceled: statement_timeout
        return EngineError(f"no answer within the timeout ({said})", retry=True)
    permanent = ("password", "authentication", "does not exist", "permission denied", "no pg_hba.conf", "role ")
    if connecting and any(w in said for w in permanent):
        return EngineError(f"cannot connect: {said}", retry=False)
    if connecting or state.startswith("08") or state in ("57P01", "57P02", "57P03") or "server closed" in said \
            or "consuming input failed" in said or "terminating connection" in said:
        return EngineError(("cannot connect: " if connecting else "the connection broke: ") + said, retry=True)
    return EngineError(said, retry=False)


class PostgresFts(SystemKind):
    name = "postgres"
    params = (URL, CONFIG, RANK, NORMALIZATION, OPERATOR, TABLE, ID_COLUMN, TEXT_COLUMN, TSVECTOR_COLUMN, VERSION, *HOW)
    summary = "PostgreSQL full-text search (websearch_to_tsquery, ts_rank): nteval's table or yours, by URL"
    extra = "postgres"
    needs_lucene = False
    live = True

    def may_see_titles(self, system: System) -> bool:
        return bool(system.params.get("table"))  # (a table of yours; nteval's own holds the nt texts)

    def check(self, name: str, params: dict[str, Any], where: Any) -> None:
        params["url"] = hide_password(params["url"])  # (a password written in it reaches no output)
        if not str(params["url"]).startswith(("postgresql://", "postgres://")):
            raise InputError(where, f"system {short(name)}: postgres needs url: postgresql://user@host:port/database "
                                    f"(got {short(params['url'])})", place="params.url")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", params["config"]):
            raise InputError(where, f"system {short(name)}: config must name a text search configuration (e.g. english, "
                                    f"simple), got {short(params['config'])}", place="params.config")
        if params["table"]:
            _qualified(params["table"], name, "table", where)
            _qualified(params["id_column"], name, "id_column", where)
            if not (params["text_column"] or params["tsvector_column"]):
                raise InputError(where, f"system {short(name)}: with table, give text_column (the column holding the "
                                        "abstract WITHOUT the title) or tsvector_column", place="params.text_column")
            for key in ("text_column", "tsvector_column"):
                if params[key]:
                    _qualified(params[key], name, key, where)

    def _asks(self, system: System) -> dict[str, Any]:
        how = {p.name for p in HOW} | {FAMILY}
        return {"kind": "postgres", "format": TABLE_FORMAT,
                "params": {k: v for k, v in system.params.items() if k not in how}}

    def identity(self, system: System) -> dict[str, Any]:
        return {**self._asks(system), "algorithm": system.algorithm}

    def describe(self, system: System) -> str:
        p = system.params
        where = p["table"] or "nteval's table"
        return f"postgres {p['rank']}({p['config']}, {p['operator']}) over {where}"

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        pg = require("psycopg", "postgres", "postgres")
        p = system.params
        secrets = Secrets(system.name)
        url = secrets.expand(secrets.given(p["url"]))
        if ambiguous_password(url):
            raise InputError(None, f"system {short(system.name)}: url: {AMBIGUOUS_PASSWORD}")
        conns = Connections(pg, url, float(p["timeout"]), secrets, system.name)
        try:
            version, table, sql = self._prepare(pg, conns, target, system)
            label = p.get("version") or ""
            path, key = cache_file(target.index_dir, system.name, {**self._asks(system), "index": target.index_name,
                                                                  "fingerprint": target.fingerprint})
            cache = AnswerCache(path, key)
            job = Job(system.name, p, depth, f"{label}|{version}", cache, secrets, target.progress, target.answers,
                      conns.cancel)
            config, rank_norm = p["config"], int(p["normalization"])

            def ask(text: str) -> Answer:
                try:
                    conn = conns.get()
                    rows = conn.execute(sql, {"config": config, "q": text, "norm": rank_norm, "k": depth}).fetchall()
                except pg.Error as err:
                    e = _error(err)
                    if e.retry:
                        conns.drop()
                    raise e from None
                return Answer([str(d) for d, _ in rows], [float(s) for _, s in rows])

            answers, notes = ask_all(job, topics, ask, ctx.tick)
        finally:
            conns.close()
        known = collection_docids(target)
        out, checked = finish(job, answers, topics, known, None, f" (table {table})")
        target.notes[system.name] = {"engine": "postgres", "url": p["url"], "table": table, "config": config,
                                     "rank": p["rank"], "operator": p["operator"], "engine_version": version or None,
                                     "version": label or None, **notes, "answers": str(path), **checked}
        return out

    def _prepare(self, pg: Any, conns: Connections, target: Any, system: System) -> tuple[str, str, Any]:
        """(the server's version, the table searched, the search's SQL): connected, the user's table
        checked or nteval's loaded, tried again like a query on a lost connection (one line naming
        the system and the URL when it cannot be done)."""
        import time

        p = system.params
        for attempt in range(int(p["retries"]) + 1):
            try:
                conn = conns.get()
                version = str(conn.info.parameter_status("server_version") or "")
                if p["table"]:
                    return version, p["table"], self._user_sql(pg, conn, system)
                table = self._own_table(pg, conn, target, system)
                return version, table, self._own_sql(pg, table, system)
            except EngineError as err:
                conns.drop()
                if not err.retry or attempt == int(p["retries"]):
                    tries = f" (after {attempt + 1} tries)" if attempt else ""
                    raise InputError(None, f"system {short(system.name)}: {conns.secrets.redact(p['url'])}: "
                                           f"{printable(conns.secrets.redact(err.said), 300)}{tries}") from None
                time.sleep(float(p["backoff"]) * 2 ** attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- SQL --------------------------------------------------------------------------------------

    def _query(self, pg: Any, system: System) -> Any:
        sql = pg.sql
        web = sql.SQL("websearch_to_tsquery({}::regconfig, {})").format(sql.Placeholder("config"), sql.Placeholder("q"))
        if system.params["operator"] == "and":
            return web
        # the same query, its words joined by OR (websearch_to_tsquery's & → |; a "-word" exclusion kept as a word)
        return sql.SQL("replace(replace({}::text, ' & ', ' | '), '!', '')::tsquery").format(web)

    def _own_sql(self, pg: Any, table: str, system: System) -> Any:
        sql = pg.sql
        rank = sql.SQL(system.params["rank"])
        return sql.SQL("SELECT d.docid, {rank}(d.tsv, q.q, {norm}) AS score FROM {table} d, (SELECT {query} AS q) q "
                       "WHERE d.tsv @@ q.q ORDER BY score DESC, d.docid LIMIT {k}").format(
            rank=rank, norm=sql.SQL("{}::int").format(sql.Placeholder("norm")), table=sql.Identifier(table), query=self._query(pg, system),
            k=sql.Placeholder("k"))

    def _user_sql(self, pg: Any, conn: Any, system: System) -> Any:
        """The search over the user's table, after checking it has the mapped columns (one line
        naming the table and the column otherwise)."""
        sql, p = pg.sql, system.params
        parts = _qualified(p["table"], system.name, "table")
        try:
            cols = {r[0]: r[1] for r in conn.execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = "
                "to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped", (p["table"],)).fetchall()}
            exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (p["table"],)).fetchone()[0]
        except pg.Error as err:
            raise _error(err) from None
        if not exists:
            raise EngineError(f"no table {p['table']} in this database (or no right to see it)")
        for key in ("id_column", "text_column", "tsvector_column"):
            col = p[key]
            if col and col not in cols:
                raise EngineError(f"table {p['table']} has no column {col} ({key}; its columns: "
                                  f"{', '.join(sorted(cols)) or 'none'})")
        if p["tsvector_column"] and cols[p["tsvector_column"]] != "tsvector":
            raise EngineError(f"column {p['tsvector_column']} of table {p['table']} is {cols[p['tsvector_column']]}, not "
                              "tsvector (tsvector_column)")
        table = sql.Identifier(*parts)
        ident = sql.Identifier(p["id_column"])
        tsv = sql.Identifier(p["tsvector_column"]) if p["tsvector_column"] else \
            sql.SQL("to_tsvector({}::regconfig, coalesce({}, ''))").format(sql.Placeholder("config"),
                                                                          sql.Identifier(p["text_column"]))
        return sql.SQL("SELECT d.{id}::text AS docid, {rank}({tsv}, q.q, {norm}) AS score FROM {table} d, "
                       "(SELECT {query} AS q) q WHERE {tsv} @@ q.q ORDER BY score DESC, 1 LIMIT {k}").format(
            id=ident, rank=sql.SQL(p["rank"]), tsv=tsv, norm=sql.SQL("{}::int").format(sql.Placeholder("norm")), table=table,
            query=self._query(pg, system), k=sql.Placeholder("k"))

    def _own_table(self, pg: Any, conn: Any, target: Any, system: System) -> str:
        """nteval's table of the target's documents, loaded first when missing or not matching them."""
        import sys

        sql, config = pg.sql, system.params["config"]
        docids = index_docids(target.index_dir, target.index_name)
        want = {"format": TABLE_FORMAT, "index": target.index_name, "fingerprint": target.fingerprint, "config": config,
                "documents": len(docids), "docids_sha256": docids_digest(docids)}
        name = own_table(target.index_name, config, target.fingerprint)

        def comment() -> dict[str, Any] | None:
            row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (name,)).fetchone()
            try:
                return json.loads(row[0]) if row and row[0] else None
            except ValueError:
                return None

        try:
            if comment() == want:
                return name
            try:
                conn.execute("SELECT to_tsvector(%s::regconfig, 'a')", (config,))
            except pg.Error as err:
                raise EngineError(f"config {config}: {printable(str(err), 160)}") from None
            lock = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
                found = comment()
                if found == want:  # (another process loaded it while this one waited)
                    return name
                if found is not None or conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]:
                    print(f"note: system {system.name}: table {name} holds other documents than the index: loading it "
                          "again", file=sys.stderr)
                t = sql.Identifier(name)
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(t))
                conn.execute(sql.SQL("CREATE TABLE {} (docid text PRIMARY KEY, body text NOT NULL, tsv tsvector GENERATED "
                                     "ALWAYS AS (to_tsvector({}::regconfig, body)) STORED)").format(t, sql.Literal(config)))
                with conn.cursor().copy(sql.SQL("COPY {} (docid, body) FROM STDIN").format(t)) as copy:
                    for docid, text in index_texts(target.index_dir, target.index_name):
                        copy.write_row((docid, text))
                conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(sql.Identifier(name + "_tsv"), t))
                conn.execute(sql.SQL("ANALYZE {}").format(t))
                conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(t, sql.Literal(json.dumps(want, sort_keys=True))))
        except pg.Error as err:
            raise _error(err) from None
        if comment() != want:  # pragma: no cover - the transaction just wrote it
            raise EngineError(f"table {name} cannot be made right; drop it")
        return name
