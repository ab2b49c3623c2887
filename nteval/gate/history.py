"""The history of a team's releases: every gate (and every ``nteval check``) appended to a database,
so a person sees whether the live search gets worse as the corpus grows and releases pile up.

**Where.** A SQLite file (the embedded default: ``--history releases.sqlite``) or a PostgreSQL
database a team shares (``--history postgresql://user@host/db``; the password from the
environment, ``PGPASSWORD`` or ``~/.pgpass`` as libpq reads them, never from the URL in outputs).
The same schema in both (PostgreSQL: in the schema ``nteval_history``).

**What.** One record per system and topic set of a gate (the baseline and each candidate, on the
pinned and on the fresh topics) or of a check: system name, version label, the engine's reported
version, the index fingerprint and size, the pin and topic-set ids, the task and measure, the mean
with its 95 % interval, the decision and margin, the time, nteval's version, and every per-topic
score. A gate's records are written in one transaction: a gate killed mid-write leaves none of
them, and two gates writing one history at once are both recorded (SQLite: ``BEGIN IMMEDIATE``
with a wait; PostgreSQL: transactions).

**Schema versions** (:data:`SCHEMA_VERSION`). A history of an older schema is migrated in place
when it is opened (SQLite: a copy of the file is kept beside it first, ``FILE.schema-vN.bak``); one
made by a newer nteval, a SQLite database that is not a history, and a damaged file are refused in
one line naming the file.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import AMBIGUOUS_PASSWORD, InputError, ambiguous_password, redact_url
from .alerts import check_alerts
from .decide import bounds, topic_order

#: the schema this nteval writes
SCHEMA_VERSION = 2
#: SQLite's application_id of an nteval history ("ntvh")
APP_ID = 0x6E747668
APP = "nteval-history"
PG_SCHEMA = "nteval_history"

#: schema version → the statements that bring the previous version to it (1: from nothing).
#: Version 1 recorded releases without the engine's version, the kind of topic set (pinned or
#: fresh) or which records one gate made; version 2 adds them.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS records (id {serial}, utc TEXT NOT NULL, kind TEXT NOT NULL, role TEXT NOT NULL, "
        "system TEXT NOT NULL, label TEXT NOT NULL, task TEXT NOT NULL, measure TEXT NOT NULL, pin_id TEXT NOT NULL, "
        "topic_set TEXT NOT NULL, index_fingerprint TEXT NOT NULL, index_documents INTEGER, n_topics INTEGER NOT NULL, "
        "mean REAL NOT NULL, ci_low REAL, ci_high REAL, decision TEXT, baseline TEXT, margin REAL, details TEXT, "
        "nteval_version TEXT)",
        "CREATE TABLE IF NOT EXISTS scores (record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE, "
        "qid TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (record_id, qid))",
        "CREATE INDEX IF NOT EXISTS records_by_set ON records (task, pin_id, topic_set)",
    ],
    2: [
        "ALTER TABLE records ADD COLUMN engine TEXT",
        "ALTER TABLE records ADD COLUMN topics_kind TEXT NOT NULL DEFAULT 'pinned'",
        "ALTER TABLE records ADD COLUMN gate_id TEXT",
    ],
}

COLUMNS = ("utc", "kind", "role", "system", "label", "engine", "task", "measure", "pin_id", "topic_set", "topics_kind",
           "index_fingerprint", "index_documents", "n_topics", "mean", "ci_low", "ci_high", "decision", "baseline",
           "margin", "gate_id", "details", "nteval_version")


@dataclass
class Record:
    """One system on one topic set at one time."""

    system: str
    label: str
    role: str                    # baseline | candidate | checked
    task: str
    measure: str
    pin_id: str
    topic_set: str
    topics_kind: str             # pinned | fresh
    index_fingerprint: str
    scores: dict[str, float]
    kind: str = "gate"           # gate | check
    engine: str | None = None
    index_documents: int | None = None
    decision: str | None = None
    baseline: str | None = None
    margin: float | None = None
    gate_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    utc: str = ""
    ci: tuple[float, float] | None = None
    id: int | None = None

    @property
    def depth(self) -> int:
        """The depth the runs were cut to (records before nteval wrote it: the default, 1,000)."""
        return int(self.details.get("depth") or 1000)

    @property
    def mean(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else 0.0

    def row(self) -> tuple:
        lo, hi = self.ci if self.ci is not None else mean_ci(self.scores)
        return (self.utc, self.kind, self.role, self.system, self.label, self.engine, self.task, self.measure, self.pin_id,
                self.topic_set, self.topics_kind, self.index_fingerprint, self.index_documents, len(self.scores),
                self.mean, lo, hi, self.decision, self.baseline, self.margin, self.gate_id,
                json.dumps(self.details, default=str), __version__)


def _score(value: Any) -> float:
    """A score read back: a finite number in [0, 1] (every measure nteval records), or ValueError."""
    v = float(value)
    if not 0.0 <= v <= 1.0:  # (NaN fails too)
        raise ValueError(f"score {value!r} is not in [0, 1]")
    return v


def mean_ci(scores: dict[str, float], level: float = 0.95) -> tuple[float, float]:
    """A ``level`` interval of a mean of per-topic scores in [0, 1]: the betting bounds of the gate
    (:func:`nteval.gate.decide.bounds`, (1 − level)/2 each side, topics in the bets' fixed order),
    valid at any number of topics."""
    import numpy as np

    if not scores:
        return (0.0, 0.0)
    qids = list(scores)
    x = np.array([scores[q] for q in qids], float)[topic_order(qids)]
    b = bounds(x, 0.0, 1.0, (1 - level) / 2)
    return (round(b.lower, 6), round(b.upper, 6))


def redact(url: str) -> str:
    """A history's place as outputs show it: a URL without its password (``user:***@``, ``password=***``)."""
    return redact_url(url)


#: a libpq keyword/value connection string ("host=db dbname=search user=ci"), as psql takes it
_CONNINFO = re.compile(r"^\s*(host|hostaddr|port|dbname|user|password|passfile|service|sslmode|options)\s*=")


def is_postgres(where: str | Path) -> bool:
    """A postgresql:// URL, or a libpq keyword/value string (never a SQLite file's name: one was
    created in the current directory with the password in its name)."""
    return str(where).startswith(("postgresql://", "postgres://")) or bool(_CONNINFO.match(str(where)))


class History:
    """A history database (SQLite or PostgreSQL): append records, read them back."""

    where: str
    ph = "?"

    def __init__(self) -> None:
        self.conn: Any = None

    # -- the backend's parts ---------------------------------------------------------------------
    def _begin_write(self) -> None:
        raise NotImplementedError

    def _serial(self) -> str:
        raise NotImplementedError

    def _version(self) -> int | None:
        raise NotImplementedError

    def _insert_id(self, cur: Any, sql: str, row: tuple) -> int:
        raise NotImplementedError

    def _backup(self, version: int) -> None:
        """Keep a copy before a migration (SQLite); a shared server's backups are its own."""

    # -- shared ----------------------------------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.ph)

    def _prepare(self) -> None:
        """Create or migrate the schema to :data:`SCHEMA_VERSION`, one writer at a time (an old
        history is copied first, outside the write: SQLite cannot copy a file it holds locked)."""
        try:
            seen = self._version()
        finally:
            self.conn.rollback()
        if seen is not None and 0 < seen < SCHEMA_VERSION:
            self._backup(seen)
        self._begin_write()
        try:
            version = self._version()
            if version is None:
                start = 0
            elif version > SCHEMA_VERSION:
                raise InputError(self.where, f"--history: made by a newer nteval (history schema {version}, this nteval "
                                             f"writes {SCHEMA_VERSION}): upgrade nteval to add to it")
            else:
                start = version
            if start < SCHEMA_VERSION:
                cur = self.conn.cursor()
                for v in range(start + 1, SCHEMA_VERSION + 1):
                    for stmt in MIGRATIONS[v]:
                        cur.execute(stmt.format(serial=self._serial()))
                self._set_meta(cur, "app", APP)
                self._set_meta(cur, "schema_version", str(SCHEMA_VERSION))
                if start == 0:
                    self._set_meta(cur, "created_by", f"nteval {__version__}")
                else:
                    self._set_meta(cur, f"migrated_from_{start}", f"nteval {__version__}")
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise

    def _set_meta(self, cur: Any, key: str, value: str) -> None:
        cur.execute(self._sql("DELETE FROM meta WHERE key = ?"), (key,))
        cur.execute(self._sql("INSERT INTO meta (key, value) VALUES (?, ?)"), (key, value))

    def append(self, records: list[Record]) -> list[int]:
        """Write ``records`` (and their per-topic scores) in one transaction; their ids."""
        sql = self._sql(f"INSERT INTO records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})")
        score_sql = self._sql("INSERT INTO scores (record_id, qid, value) VALUES (?, ?, ?)")
        self._begin_write()
        try:
            cur = self.conn.cursor()
            ids = []
            for r in records:
                rid = self._insert_id(cur, sql, r.row())
                cur.executemany(score_sql, [(rid, q, float(v)) for q, v in r.scores.items()])
                r.id = rid
                ids.append(rid)
            self.conn.commit()
            return ids
        except BaseException as err:
            self.conn.rollback()
            if isinstance(err, self._errors()) and is_postgres(self.where):
                raise InputError(None, f"--history {self.where}: cannot append to it ({_pg_error(err)}); nothing was "
                                       "recorded") from None
            raise

    def records(self, task: str | None = None, pin_id: str | None = None, topics_kind: str | None = None,
                scores: bool = False) -> list[Record]:
        """Every record (oldest first), filtered; with ``scores``, their per-topic scores too."""
        where, args = [], []
        for col, val in (("task", task), ("pin_id", pin_id), ("topics_kind", topics_kind)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = (f"SELECT id, {', '.join(COLUMNS)} FROM records" + (f" WHERE {' AND '.join(where)}" if where else "")
               + " ORDER BY id")
        out = []
        for row in self._read(sql, args):
            d = dict(zip(("id", *COLUMNS), row))
            try:
                details = json.loads(d["details"] or "{}")
                if not isinstance(details, dict):
                    raise ValueError("details are not a JSON object")
                for col in ("mean", "ci_low", "ci_high"):
                    _score(d[col])
            except (ValueError, TypeError) as err:
                raise self._damaged(f"record {d['id']}: {err}") from None
            rec = Record(d["system"], d["label"], d["role"], d["task"], d["measure"], d["pin_id"], d["topic_set"],
                         d["topics_kind"], d["index_fingerprint"], {}, kind=d["kind"], engine=d["engine"],
                         index_documents=d["index_documents"], decision=d["decision"], baseline=d["baseline"],
                         margin=d["margin"], gate_id=d["gate_id"], details=details,
                         utc=d["utc"], ci=(d["ci_low"], d["ci_high"]), id=d["id"])
            rec.details["_mean"], rec.details["_n"] = d["mean"], d["n_topics"]
            out.append(rec)
        if scores and out:
            self._fill_scores(out)
        return out

    def _fill_scores(self, recs: list[Record]) -> None:
        by_id = {r.id: r for r in recs}
        for rid, qid, value in self._read("SELECT record_id, qid, value FROM scores ORDER BY record_id, qid"):
            if rid in by_id:
                try:
                    by_id[rid].scores[qid] = _score(value)
                except (ValueError, TypeError) as err:
                    raise self._damaged(f"record {rid}, topic {qid}: {err}") from None

    def _damaged(self, what: str) -> InputError:
        return InputError(self.where, f"--history: a damaged history ({what}): restore a copy; nteval left it as it is")

    def _schema_version(self, value: Any) -> int:
        try:
            return int(value)
        except (ValueError, TypeError):
            raise self._damaged(f"its schema version is {value!r}") from None

    def meta(self) -> dict[str, str]:
        return dict(self._read("SELECT key, value FROM meta"))

    def _read(self, sql: str, args: Any = ()) -> list[tuple]:
        """The rows of a query; the database's own error (a table or column dropped by hand, a
        privilege missing) as one line naming the history, not as a traceback or as the index's
        document store."""
        try:
            cur = self.conn.cursor()
            cur.execute(self._sql(sql), args)
            rows = cur.fetchall()
            self.conn.commit()
            return rows
        except self._errors() as err:
            with contextlib.suppress(Exception):
                self.conn.rollback()
            raise self._db_error(err) from None

    def _errors(self) -> tuple[type[BaseException], ...]:
        raise NotImplementedError

    def _db_error(self, err: BaseException) -> InputError:
        engine = {"sqlite3": "sqlite", "psycopg": "postgresql"}.get(type(err).__module__.split(".")[0], "database")
        return self._damaged(f"{engine}: {' '.join(str(err).split())}")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class SQLiteHistory(History):
    def __init__(self, path: str | Path, create: bool = True):
        import sqlite3

        super().__init__()
        self.path = Path(path)
        self.where = str(self.path)
        if self.path.is_dir():
            raise InputError(self.path, "--history: is a directory; give a file (SQLite) or a postgresql:// URL")
        if not self.path.exists():
            if not create:
                raise InputError(self.path, "--history: no such history")
            if not self.path.parent.is_dir():
                raise InputError(self.path, "--history: its directory does not exist")
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=120, isolation_level=None)
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._check_file()
            self._prepare()
        except sqlite3.DatabaseError as err:
            self.close()
            raise InputError(self.path, f"--history: not a usable SQLite history ({err}): restore a copy or give a new "
                                        "file") from None

    def _check_file(self) -> None:
        app = self.conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app == APP_ID:
            return
        if app == 0 and not tables:
            self.conn.execute(f"PRAGMA application_id = {APP_ID}")
            return
        if app == 0 and "meta" in tables and "records" in tables:
            meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("app") == APP:
                return
        raise InputError(self.path, "--history: a SQLite database that is not an nteval history (it holds "
                                    f"{', '.join(sorted(tables)) or 'no table'}); give another file")

    def _errors(self) -> tuple[type[BaseException], ...]:
        import sqlite3

        return (sqlite3.DatabaseError,)

    def _begin_write(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")  # (waits up to the connection's timeout for another writer)

    def _serial(self) -> str:
        return "INTEGER PRIMARY KEY AUTOINCREMENT"

    def _version(self) -> int | None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return self._schema_version(row[0]) if row else None

    def _insert_id(self, cur: Any, sql: str, row: tuple) -> int:
        cur.execute(sql, row)
        return int(cur.lastrowid)

    def _backup(self, version: int) -> None:
        import sqlite3

        dest = self.path.with_name(f"{self.path.name}.schema-v{version}.bak")
        if not dest.exists():
            tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
            copy = sqlite3.connect(str(tmp))
            try:
                self.conn.backup(copy)
            finally:
                copy.close()
            os.replace(tmp, dest)


class PostgresHistory(History):
    ph = "%s"

    def __init__(self, url: str):
        super().__init__()
        self.where = redact(url)
        try:
            import psycopg
        except ImportError:
            raise InputError(None, "--history postgresql://…: needs psycopg (pip install 'nteval[postgres]')") from None

        if ambiguous_password(url):
            raise InputError(None, f"--history postgresql://…: {AMBIGUOUS_PASSWORD}")
        try:
            self.conn = psycopg.connect(url, connect_timeout=15, options=f"-c search_path={PG_SCHEMA}")
        except psycopg.Error as err:
            raise InputError(None, f"--history {self.where}: cannot connect ({_pg_error(err)})") from None
        try:
            self._prepare()
        except psycopg.Error as err:
            self.close()
            raise InputError(None, f"--history {self.where}: {_pg_error(err)}") from None

    def _errors(self) -> tuple[type[BaseException], ...]:
        import psycopg

        return (psycopg.Error,)

    def _db_error(self, err: BaseException) -> InputError:
        import psycopg

        if isinstance(err, psycopg.errors.InsufficientPrivilege):
            return InputError(None, f"--history {self.where}: {_pg_error(err)}")
        return super()._db_error(err)

    def _begin_write(self) -> None:
        cur = self.conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (APP_ID,))  # one schema change or append at a time
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")

    def _serial(self) -> str:
        return "BIGSERIAL PRIMARY KEY"

    def _version(self) -> int | None:
        cur = self.conn.cursor()
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (PG_SCHEMA,))
        tables = {r[0] for r in cur.fetchall()}
        if not tables:
            return None
        if "meta" not in tables:
            raise InputError(None, f"--history {self.where}: its schema {PG_SCHEMA} holds tables that are not an nteval "
                                   f"history ({', '.join(sorted(tables))})")
        cur.execute("SELECT key, value FROM meta")
        meta = dict(cur.fetchall())
        if meta.get("app") != APP:
            raise InputError(None, f"--history {self.where}: its schema {PG_SCHEMA} is not an nteval history")
        return self._schema_version(meta.get("schema_version"))

    def _insert_id(self, cur: Any, sql: str, row: tuple) -> int:
        cur.execute(sql + " RETURNING id", row)
        return int(cur.fetchone()[0])


def _pg_error(err: BaseException) -> str:
    """PostgreSQL's message in one line (the password redacted), with the privilege a history needs
    when it says "permission denied"."""
    text = redact(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__)
    if "permission denied for database" in text:
        db = text.rsplit(" ", 1)[-1]
        text += (f": the role needs CREATE on database {db} the first time (to create the schema {PG_SCHEMA}: GRANT "
                 f"CREATE ON DATABASE {db} TO the role), or a DBA creates it for the role (CREATE SCHEMA {PG_SCHEMA} "
                 "AUTHORIZATION the role)")
    elif "permission denied for schema" in text:
        text += (f": the role needs USAGE and CREATE on schema {PG_SCHEMA} (GRANT USAGE, CREATE ON SCHEMA {PG_SCHEMA} TO "
                 "the role), or to own it")
    elif "permission denied for table" in text or "permission denied for sequence" in text:
        text += (f": the role needs SELECT and INSERT on the tables of schema {PG_SCHEMA} and USAGE on its sequence "
                 f"(GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA {PG_SCHEMA} …), or to own them")
    return text


def open_history(where: str | Path, create: bool = True) -> History:
    """The history at ``where``: a postgresql:// URL or a SQLite file (created when missing)."""
    if "://" in str(where) and not is_postgres(where):
        raise InputError(None, f"--history {redact(str(where))}: give a SQLite file or a postgresql:// URL")
    return PostgresHistory(str(where)) if is_postgres(where) else SQLiteHistory(where, create=create)


def blank_history(where: str | Path) -> bool:
    """A SQLite history that holds nothing yet: an empty (0-byte) file, or a database without a
    table, read without writing to it (a history only read, by ``nteval history``, is left as it was)."""
    import sqlite3

    path = Path(where)
    if "://" in str(where) or is_postgres(where) or not path.is_file():
        return False
    if path.stat().st_size == 0:
        return True
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.DatabaseError:
        return False
    try:
        return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def check_history(where: str | Path) -> None:
    """Refuse a history that a gate could not append to, before anything is searched: a directory,
    a missing directory, a file that is not an nteval history (or a newer one), a server that does
    not answer. A new SQLite file is not created here (only by the gate's append)."""
    path = Path(where)
    if "://" in str(where) or is_postgres(where) or path.exists():
        if path.is_file() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            raise InputError(path, "--history: not writable (the file or its directory): nothing could be recorded")
        with opened(where, create=False):
            return
    if not path.parent.is_dir():
        raise InputError(path, "--history: its directory does not exist")
    if not os.access(path.parent, os.W_OK):
        raise InputError(path, "--history: its directory is not writable")


@contextmanager
def opened(where: str | Path, create: bool = True) -> Iterator[History]:
    h = open_history(where, create)
    try:
        yield h
    finally:
        h.close()


def gate_records(result: dict[str, Any]) -> list[Record]:
    """The records a gate appends: the baseline and each candidate, on each topic set it scored."""
    import hashlib

    gate_id = hashlib.sha256(json.dumps([result["utc"], result["out"], os.getpid()]).encode()).hexdigest()[:16]
    recs = []
    for kind, per in result["per_topic"].items():
        st = result["sets"][kind]
        topic_set = result["pin"]["topic_set"] if kind == "pinned" else _fresh_id(result, per)
        common = dict(task=result["task"], measure=result["measure"], pin_id=result["pin"]["id"], topic_set=topic_set,
                      topics_kind=kind, index_fingerprint=result["index_fingerprint"],
                      index_documents=result["index_documents"], gate_id=gate_id, utc=result["utc"],
                      kind=result.get("kind", "gate"))
        base = result["baseline"]
        depth = int((result.get("spec") or {}).get("depth") or 1000)
        if base is not None:
            recs.append(Record(base, result["labels"].get(base, base), "baseline", scores=per[base],
                               engine=result["engines"].get(base), details={"depth": depth}, **common))
        decided = st.get("decided", True) is not False
        for name, dec in (st.get("candidates") or {}).items():
            details = {**{k: v for k, v in dec.items() if k not in ("changed",)}, "depth": depth}
            if not decided:  # (fresh topics shown, not decided on: no decision recorded, none fails a label)
                details.update(decided=False, shown_decision=details.pop("decision", None))
            recs.append(Record(name, result["labels"].get(name, name), "candidate" if base is not None else "checked",
                               scores=per[name], engine=result["engines"].get(name),
                               decision=dec.get("decision") if decided else None,
                               baseline=base, margin=dec.get("margin"), details=details, **common))
    return recs


def _fresh_id(result: dict[str, Any], per: dict[str, dict[str, float]]) -> str:
    import hashlib

    qids = sorted(next(iter(per.values())))
    return "fresh-" + hashlib.sha256("\n".join(qids).encode()).hexdigest()[:12]


def record_gate(where: str | Path, result: dict[str, Any]) -> dict[str, Any]:
    """Append a gate's (or check's) records to the history at ``where``; check the alert rules on
    them. Returns where, the new record ids, the alerts raised and notes (:func:`~nteval.gate.alerts.check_alerts`)."""
    import sqlite3

    recs = gate_records(result)
    try:
        with opened(where) as h:
            ids = h.append(recs)
            alerts, notes = check_alerts(h, recs, result)
    except sqlite3.Error as err:  # (a file made read-only, a disk full: the history is left as it was)
        raise InputError(where, f"--history: cannot append to it (sqlite: {' '.join(str(err).split())}); nothing was "
                                "recorded") from None
    return {"where": redact(str(where)), "records": ids, "alerts": alerts, "notes": notes}
