"""The release history: SQLite and a real PostgreSQL server, schema migration, foreign and damaged
files refused, two writers at once, kill -9 mid-write, the alert rules, and the trend page."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import HANG, cli, one_line_error

from nteval.effects import MMD
from nteval.gate.alerts import below_best, fresh_drift
from nteval.gate.history import APP_ID, MIGRATIONS, SCHEMA_VERSION, Record, open_history, opened, redact

QIDS = [f"q{i:03d}" for i in range(200)]


def record(label: str, scores: np.ndarray, role: str = "candidate", kind: str = "pinned", **kw) -> Record:
    return Record(system=f"sys-{label}", label=label, role=role, task="known-item", measure="RR", pin_id="pin-x",
                  topic_set="ts", topics_kind=kind, index_fingerprint="f" * 64, utc="2026-11-27T00:00:00+00:00",
                  scores={q: float(v) for q, v in zip(QIDS, scores)}, **kw)


def _scores(seed: int, mean: float = 0.8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(mean, 0.2, len(QIDS)), 0, 1)


def _roundtrip(where) -> None:
    with opened(where) as h:
        ids = h.append([record("v1", _scores(1), role="baseline"), record("v2", _scores(2), decision="non-inferior",
                                                                          baseline="sys-v1", margin=0.04)])
        assert len(ids) == 2
        recs = h.records(task="known-item", scores=True)
        assert [r.label for r in recs] == ["v1", "v2"] and recs[1].decision == "non-inferior"
        assert recs[1].scores == pytest.approx(dict(zip(QIDS, _scores(2))))
        assert recs[0].ci[0] < recs[0].mean < recs[0].ci[1]
        assert h.meta()["schema_version"] == str(SCHEMA_VERSION)


def test_sqlite_history_roundtrip(tmp_path):
    _roundtrip(tmp_path / "h.sqlite")
    with opened(tmp_path / "h.sqlite") as h:  # reopened: the same history, appended to
        h.append([record("v3", _scores(3))])
        assert len(h.records()) == 3


def test_postgres_history_roundtrip_and_secret(pg_url, pg_server):
    """A real PostgreSQL server: the same schema, the password from PGPASSWORD, never in outputs."""
    import servers

    pg_server.psql("DROP SCHEMA IF EXISTS nteval_history CASCADE", db="nteval")
    _roundtrip(pg_url)
    assert servers.PASSWORD not in redact(pg_server.url(with_password=True))
    with_password = pg_server.url(with_password=True)
    with opened(with_password) as h:
        assert servers.PASSWORD not in h.where and len(h.records()) == 2
    os.environ.pop("PGPASSWORD")
    with pytest.raises(Exception, match="cannot connect") as err:
        open_history(pg_url)
    assert servers.PASSWORD not in str(err.value)


def _v1(conn, serial: str) -> None:
    """A history as schema version 1 wrote it."""
    cur = conn.cursor()
    for stmt in MIGRATIONS[1]:
        cur.execute(stmt.format(serial=serial))
    ph = "%s" if serial.startswith("BIG") else "?"
    cur.execute(f"INSERT INTO meta (key, value) VALUES ({ph}, {ph})", ("app", "nteval-history"))
    cur.execute(f"INSERT INTO meta (key, value) VALUES ({ph}, {ph})", ("schema_version", "1"))
    cols = ("utc, kind, role, system, label, task, measure, pin_id, topic_set, index_fingerprint, n_topics, mean, "
            "ci_low, ci_high, details, nteval_version")
    cur.execute(f"INSERT INTO records ({cols}) VALUES ({', '.join([ph] * 16)})",
                ("2026-01-01T00:00:00+00:00", "gate", "candidate", "bm25", "v0", "known-item", "RR", "pin-x", "ts",
                 "f" * 64, 2, 0.5, 0.1, 0.9, "{}", "0.0.9"))
    conn.commit()


def test_sqlite_old_schema_is_migrated_with_a_backup(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {APP_ID}")
    _v1(conn, "INTEGER PRIMARY KEY AUTOINCREMENT")
    conn.close()
    with opened(path) as h:
        recs = h.records()
        assert recs[0].label == "v0" and recs[0].topics_kind == "pinned" and recs[0].engine is None
        assert h.meta()["schema_version"] == str(SCHEMA_VERSION) and "migrated_from_1" in h.meta()
        h.append([record("v1", _scores(1))])
    backup = tmp_path / "old.sqlite.schema-v1.bak"
    assert backup.is_file()
    old = sqlite3.connect(backup)
    assert old.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "1"
    old.close()


def test_postgres_old_schema_is_migrated(pg_url, pg_server):
    import psycopg

    pg_server.psql("DROP SCHEMA IF EXISTS nteval_history CASCADE", db="nteval")
    pg_server.psql("CREATE SCHEMA nteval_history AUTHORIZATION nteval", db="nteval")
    with psycopg.connect(pg_url, options="-c search_path=nteval_history") as conn:
        _v1(conn, "BIGSERIAL PRIMARY KEY")
    with opened(pg_url) as h:
        assert h.records()[0].label == "v0" and h.meta()["schema_version"] == str(SCHEMA_VERSION)


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_bytes(os.urandom(4096)), "not a usable SQLite history"),
    (lambda p: _foreign(p), "not an nteval history"),
    (lambda p: _newer(p), "newer nteval"),
    (lambda p: _truncated(p), "not a usable SQLite history"),
])
def test_foreign_damaged_or_newer_files_are_refused(tmp_path, make, words, sample_index):
    path = tmp_path / "h.sqlite"
    make(path)
    before = path.read_bytes()
    with pytest.raises(Exception, match=words):
        open_history(path)
    assert path.read_bytes() == before  # untouched
    r = cli("history", path)
    one_line_error(r, str(path))


def _execute(p: Path, sql: str) -> None:
    """``sql`` run on the SQLite file ``p`` by hand, as a person or another program would."""
    c = sqlite3.connect(p)
    c.execute(sql)
    c.commit()
    c.close()


def _foreign(p: Path) -> None:
    _execute(p, "CREATE TABLE people (name TEXT)")


def _newer(p: Path) -> None:
    with opened(p) as h:
        h.append([record("v1", _scores(1))])
    _execute(p, "UPDATE meta SET value = '99' WHERE key = 'schema_version'")


def _truncated(p: Path) -> None:
    with opened(p) as h:
        h.append([record(f"v{i}", _scores(i)) for i in range(30)])
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 3])


def test_passwords_are_redacted_in_every_form_of_url(tmp_path):
    for url in ("postgresql://alice:s3cr3t@h:5/db", "postgresql://alice@h:5/db?password=s3cr3t",
                "postgresql:///db?host=x&password=s3cr3t&sslmode=require"):
        assert "s3cr3t" not in redact(url) and "***" in redact(url)
    # a URL of another database is one line, not a missing directory
    one_line_error(cli("history", "mysql://x:pw@y/z"), "give a SQLite file or a postgresql:// URL")


def _edited(sql: str):
    def make(p: Path) -> None:
        with opened(p) as h:
            h.append([record("v1", _scores(1), role="baseline"), record("v2", _scores(2), decision="non-inferior")])
        _execute(p, sql)
    return make


@pytest.mark.parametrize("sql, words", [
    ("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'", "its schema version is 'abc'"),
    ("UPDATE records SET details = '{not json' WHERE id = 2", "record 2"),
    ("UPDATE scores SET value = 7.5 WHERE record_id = 2 AND qid = 'q007'", "record 2, topic q007: score 7.5 is not in"),
    ("UPDATE records SET mean = 7.5 WHERE id = 1", "record 1: score 7.5"),
])
def test_damaged_contents_are_refused_in_one_line(tmp_path, sql, words):
    """A history whose contents were edited by hand (a schema version, a record's details, a score
    out of [0, 1]) is refused in one line naming the file, and left as it is."""
    path = tmp_path / "h.sqlite"
    _edited(sql)(path)
    before = path.read_bytes()
    r = cli("history", path, "--out", tmp_path / "t")
    one_line_error(r, str(path), words)
    assert path.read_bytes() == before and not (tmp_path / "t").exists()


_WRITER = """
import sys, numpy as np
sys.path.insert(0, {tests!r})
from test_history import record
from nteval.gate.history import opened
n = int(sys.argv[2])
with opened(sys.argv[1]) as h:
    for i in range(int(sys.argv[3])):
        recs = [record(f"w{{sys.argv[4]}}-{{i}}", np.random.default_rng(i).random(200))]
        recs[0].scores = {{f"q{{k}}": 0.5 for k in range(n)}}
        h.append(recs)
        print(i, flush=True)
"""


def _writer(tmp_path: Path, where: str, n: int, count: int, tag: str) -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(_WRITER.format(tests=str(Path(__file__).parent)))
    return subprocess.Popen([sys.executable, str(script), where, str(n), str(count), tag], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def _complete(where: str) -> list[Record]:
    with opened(where) as h:
        recs = h.records(scores=True)
    for r in recs:
        assert len(r.scores) == r.details["_n"], (r.id, len(r.scores), r.details["_n"])  # every record whole
    return recs


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_writers_at_once_are_both_recorded(tmp_path, backend, request):
    where = str(tmp_path / "h.sqlite") if backend == "sqlite" else request.getfixturevalue("pg_url")
    if backend == "postgres":
        request.getfixturevalue("pg_server").psql("DROP SCHEMA IF EXISTS nteval_history CASCADE", db="nteval")
    procs = [_writer(tmp_path, where, 2000, 15, tag) for tag in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=HANG)
        assert p.returncode == 0, err
    recs = _complete(where)
    assert sorted(r.label for r in recs) == sorted(f"w{t}-{i}" for t in "ab" for i in range(15))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kill_9_mid_write_leaves_no_half_record(tmp_path, backend, request):
    """Records of 200,000 scores take a while to write; a writer killed at once (SIGKILL) at
    several moments leaves only whole records, and the history stays usable."""
    where = str(tmp_path / "h.sqlite") if backend == "sqlite" else request.getfixturevalue("pg_url")
    if backend == "postgres":
        request.getfixturevalue("pg_server").psql("DROP SCHEMA IF EXISTS nteval_history CASCADE", db="nteval")
    with opened(where) as h:
        h.append([record("v0", _scores(0))])
    for delay in (0.6, 1.1, 1.7):
        p = _writer(tmp_path, where, 200_000, 50, f"k{delay}")
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        _complete(where)
    with opened(where) as h:
        h.append([record("after", _scores(9))])
    assert _complete(where)[-1].label == "after"


# -- alert rules ----------------------------------------------------------------------------------


def _with_ids(recs: list[Record]) -> list[Record]:
    for i, r in enumerate(recs, 1):
        r.id = i
    return recs


def test_below_best_hand_cases():
    base = _scores(1, 0.8)
    line = _with_ids([record("v1", base, role="baseline"), record("v2", np.clip(base - 0.005, 0, 1)),
                      record("v3", np.clip(base - 0.3, 0, 1)), record("v4", np.clip(base - 0.03, 0, 1))])
    m = MMD.parse("5%")
    assert not below_best(line[1], line[:1], m)["fired"]           # within the margin
    a = below_best(line[2], line[:2], m)
    assert a["fired"] and a["best"] == "v1" and a["looks"] == 2     # far below: Bonferroni over 2 earlier releases
    assert not below_best(line[3], line[:3], m)["fired"]           # below, but not shown beyond the margin


def test_fresh_drift_hand_cases():
    m = MMD.parse("5%")
    flat = _with_ids([record(f"v{i}", _scores(i, 0.7), kind="fresh") for i in range(5)])
    assert not fresh_drift(flat, m)["fired"]
    falling = _with_ids([record(f"v{i}", _scores(10 + i, 0.8 - 0.05 * i), kind="fresh") for i in range(5)])
    d = fresh_drift(falling, m)
    assert d["fired"] and d["slope"] < -0.03 and d["loss_over_window"] > d["margin"]
    assert fresh_drift(falling[:3], m) is None  # fewer records than the window: no rule yet


def test_history_command_plot_and_alert_exit(tmp_path):
    where = tmp_path / "h.sqlite"
    base = _scores(1, 0.8)
    with opened(where) as h:  # a slow slide: each release passes its gate, the last is below the best by > the margin
        h.append([record("v1", base, role="baseline"), record("v2", np.clip(base + 0.01, 0, 1), decision="better")])
        h.append([record("v2", np.clip(base + 0.01, 0, 1), role="baseline"),
                  record("v3", np.clip(base - 0.025, 0, 1), decision="non-inferior")])
        h.append([record("v3", np.clip(base - 0.025, 0, 1), role="baseline"),
                  record("v4", np.clip(base - 0.3, 0, 1), decision="worse"),   # failed: shown, not compared with
                  record("v5", np.clip(base - 0.12, 0, 1), decision="non-inferior")])
    r = cli("history", where, "--out", tmp_path / "trend")
    assert r.exit_code == 5, r.output
    assert "ALERT: release v5" in r.output and r.output.splitlines()[0].startswith("HISTORY (known-item search, RR")
    assert "ALERT: release v4" not in r.output and "ALERT: release v3" not in r.output
    rep = json.loads((tmp_path / "trend" / "history.json").read_text())
    assert [p["label"] for p in rep["releases"]] == ["v1", "v2", "v3", "v4", "v5"]  # a gate's baseline: not again
    assert [p["released"] for p in rep["releases"]] == [True, True, True, False, True]
    assert rep["releases"][4]["best_label"] == "v2" and rep["releases"][4]["alert"]
    assert (tmp_path / "trend" / "history.png").stat().st_size > 20_000
    html = (tmp_path / "trend" / "history.html").read_text()
    assert "<img src='data:image/png;base64," in html and "ALERT" in html
    one_line_error(cli("history", tmp_path / "none.sqlite"), "no such history")


def test_history_page_reads_well_in_a_real_browser(tmp_path):
    """history.html with 12 releases in headless Chromium: the trend image decoded and shown wide,
    the table fits the page, the alert is on the page; on a phone nothing overflows."""
    from report.test_report_page import _browse, _layout

    where = tmp_path / "h.sqlite"
    base = _scores(1, 0.8)
    with opened(where) as h:
        prev = "v1"
        h.append([record("v1", base, role="baseline")])
        for i in range(2, 13):
            drop = 0.2 if i == 12 else 0.004 * (i % 3)
            h.append([record(prev, base, role="baseline"),
                      record(f"v{i}", np.clip(base - drop, 0, 1), decision="non-inferior")])
            prev = f"v{i}"
    assert cli("history", where, "--out", tmp_path / "t").exit_code == 5
    page = tmp_path / "t" / "history.html"
    wide = _layout(page, tmp_path, 1280)
    assert wide["bodyFont"] >= 16 and len(wide["images"]) == 1
    img = wide["images"][0]
    assert img["natural"] >= 900 and img["shown"] >= 600  # the trend, readable
    assert all(wide["tablesFit"]) and "ALERT" in wide["text"] and "v12" in wide["text"]
    assert wide["headings"][:2] == ["Alerts", "Releases"]
    narrow = _layout(page, tmp_path, 420)
    assert narrow["pageWidth"] <= narrow["viewport"] and narrow["images"][0]["shown"] <= narrow["viewport"]
    shot = tmp_path / "page.png"
    _browse(page, 1280, 1600, f"--screenshot={shot}")
    assert shot.stat().st_size > 30_000


def test_a_release_failing_another_task_does_not_ship(tmp_path):
    """v2 is better for topical search but fails its known-item gate: it did not go live, so the
    topical line does not hold later releases to it (no alert for v3, which is as good as v1)."""
    where = tmp_path / "h.sqlite"
    base = _scores(1, 0.5)
    with opened(where) as h:
        recs = [record("v1", base, role="baseline"), record("v2", np.clip(base + 0.3, 0, 1), decision="better"),
                record("v2", np.clip(base - 0.3, 0, 1), decision="worse"),
                record("v3", base, decision="non-inferior")]
        for r in (recs[0], recs[1], recs[3]):
            r.task, r.measure = "topical", "AP"
        h.append(recs)
    r = cli("history", where, "--task", "topical")
    assert r.exit_code == 0 and "no alert" in r.output, r.output
    assert "better (not released)" in r.output


# -- what counts as a release (turn-5 H1, H2, L13, F6) ---------------------------------------------

def _check(h, new: list[Record]) -> tuple[list, list]:
    from nteval.gate.alerts import check_alerts

    h.append(new)
    return check_alerts(h, new, {"spec": {"mmd": "5%"}, "task": "known-item", "pin": {"id": "pin-x"}})


@pytest.mark.parametrize("fresh, shipped", [
    (dict(decision=None, details={"decided": False, "shown_decision": "worse"}, n=3), True),   # too few: shown only
    (dict(decision="inconclusive", n=40), True),                                                # decided, inconclusive
    (dict(decision="non-inferior", n=40), True),
    (dict(decision="worse", n=40), False),                                                      # a fresh regression
])
def test_only_a_fresh_regression_keeps_a_passed_release_from_shipping(tmp_path, fresh, shipped):
    """A candidate that passed on the pinned topics went live unless its fresh topics showed it
    worse: fresh topics too few to decide on, or inconclusive, fail nothing. The regression after
    a shipped release then alerts against it."""
    base = _scores(1, 0.6)
    n = fresh.pop("n")
    fresh_rec = record("v2", np.clip(base + 0.3, 0, 1), kind="fresh", **fresh)
    fresh_rec.scores = dict(list(fresh_rec.scores.items())[:n])
    with opened(tmp_path / "h.sqlite") as h:
        h.append([record("v1", base, role="baseline"), record("v2", np.clip(base + 0.3, 0, 1), decision="better"),
                  fresh_rec])
        alerts, _ = _check(h, [record("v3", base, role="checked")])
    assert bool(alerts) == shipped and (not alerts or alerts[0]["best"] == "v2")


def test_a_check_is_a_new_observation(tmp_path):
    """The same system checked again on the same index (a live engine changes while nteval's index
    does not) is compared with the earlier checks: a drop alerts. A gate's baseline recorded again
    with the same scores is one release, not a second one."""
    base = _scores(1, 0.8)
    with opened(tmp_path / "h.sqlite") as h:
        alerts, notes = _check(h, [record("live", base, role="checked")])  # a new history: said (F2)
        assert not alerts and len(notes) == 1 and "held no earlier record of pin pin-x" in notes[0]
        assert "must outlive the CI job" in notes[0]
        assert _check(h, [record("live", base, role="checked")]) == ([], [])
        alerts, _ = _check(h, [record("live", np.clip(base - 0.3, 0, 1), role="checked")])
        assert len(alerts) == 1 and alerts[0]["label"] == "live" and alerts[0]["looks"] == 2
    with opened(tmp_path / "g.sqlite") as h:
        h.append([record("v1", base, role="baseline"), record("v2", base, decision="non-inferior")])
        assert _check(h, [record("v2", base, role="baseline"), record("v3", base, decision="non-inferior")]) == ([], [])
        from nteval.gate.alerts import timeline

        assert [(r.label, r.role) for r in timeline(h.records(scores=True))] == [
            ("v1", "baseline"), ("v2", "candidate"), ("v3", "candidate")]
        # the live v3 measured again by a later gate, now far worse: a new observation, and an alert
        alerts, _ = _check(h, [record("v3", np.clip(base - 0.3, 0, 1), role="baseline"),
                               record("v4", base, decision="non-inferior")])
        assert [a["label"] for a in alerts] == ["v3"]


def test_notes_for_a_reused_label_and_a_rollback_within_the_margin(tmp_path):
    """A label recorded before for another system is said; a release shown below the best earlier
    one by less than the margin (a rollback) gets a note, not an alert (1,000 topics: enough to show
    a loss of 0.03 where the margin is 0.045)."""
    rng = np.random.default_rng(1)
    base = np.clip(rng.normal(0.9, 0.2, 1000), 0, 1)

    def wide(label: str, scores: np.ndarray, **kw) -> Record:
        r = record(label, scores[:200], **kw)
        r.scores = {f"w{i:04d}": float(v) for i, v in enumerate(scores)}
        return r

    with opened(tmp_path / "h.sqlite") as h:
        h.append([wide("v1", np.clip(base - 0.03, 0, 1), role="baseline"), wide("v2", base, decision="better")])
        other = wide("v1", np.clip(base - 0.2, 0, 1), role="baseline")
        other.system = "another"
        alerts, notes = _check(h, [other])
        assert [a["label"] for a in alerts] == ["v1"]
        assert notes == ["label v1 was recorded before for sys-v1, now for another: the history shows both as release "
                         "v1 (give each release its own label)"]
        alerts, notes = _check(h, [wide("v5", np.clip(base - 0.03, 0, 1), role="checked")])  # a rollback to v1
        assert not alerts and len(notes) == 1, notes
        assert notes[0].startswith("release v5 (RR 0.8") and "below the best earlier release v2" in notes[0]
        assert "by less than the margin" in notes[0]


def test_undecided_fresh_topics_are_recorded_without_a_decision():
    from nteval.gate.history import gate_records

    dec = {"decision": "worse", "margin": 0.04, "changed": {}}
    per = {"pinned": {"b": {"q1": 0.5}, "c": {"q1": 0.6}}, "fresh": {"b": {"f1": 0.5}, "c": {"f1": 0.1}}}
    result = {"utc": "2026-01-01T00:00:00+00:00", "out": "o", "task": "known-item", "measure": "RR",
              "pin": {"id": "pin-x", "topic_set": "ts"}, "index_fingerprint": "f" * 64, "index_documents": 10,
              "baseline": "b", "labels": {"b": "v1", "c": "v2"}, "engines": {}, "per_topic": per,
              "sets": {"pinned": {"decided": True, "candidates": {"c": {**dec, "decision": "better"}}},
                       "fresh": {"decided": False, "candidates": {"c": dec}}}}
    recs = {(r.label, r.topics_kind): r for r in gate_records(result)}
    assert recs[("v2", "pinned")].decision == "better"
    assert recs[("v2", "fresh")].decision is None and recs[("v2", "fresh")].details["shown_decision"] == "worse"


def test_a_check_at_another_depth_is_not_compared_with_releases_at_1000(tmp_path):
    """A nightly check cut to depth 50 scores lower AP than releases at 1,000 for the same system:
    another measure, so it is recorded with its depth and compared only with releases of its depth."""
    from nteval.gate.history import gate_records

    base = _scores(1, 0.8)
    with opened(tmp_path / "h.sqlite") as h:
        h.append([record("v1", base, role="baseline"), record("v2", base, decision="non-inferior")])
        shallow = record("nightly", np.clip(base - 0.3, 0, 1), role="checked", details={"depth": 50})
        assert _check(h, [shallow]) == ([], [])
        alerts, _ = _check(h, [record("nightly2", np.clip(base - 0.6, 0, 1), role="checked", details={"depth": 50})])
        assert [a["best"] for a in alerts] == ["nightly"]  # (its own depth's releases only)
        assert [r.depth for r in h.records()] == [1000, 1000, 50, 50]
    per = {"pinned": {"s": {"q1": 0.5}}}
    result = {"utc": "2026-01-01T00:00:00+00:00", "out": "o", "task": "known-item", "measure": "RR", "kind": "check",
              "pin": {"id": "pin-x", "topic_set": "ts"}, "index_fingerprint": "f" * 64, "index_documents": 10,
              "baseline": None, "labels": {"s": "s"}, "engines": {}, "per_topic": per, "spec": {"depth": 50},
              "sets": {"pinned": {"candidates": {"s": {}}}}}
    assert gate_records(result)[0].depth == 50


@pytest.mark.parametrize("sql, words", [
    ("ALTER TABLE records DROP COLUMN engine", "sqlite: no such column: engine"),
    ("DROP TABLE scores", "no such table: scores"),
])
def test_a_history_damaged_by_hand_is_named_as_the_history(tmp_path, sql, words):
    """A dropped column or table is the history's damage, said of the history (it named the index's
    document store and advised rebuilding the index)."""
    path = tmp_path / "h.sqlite"
    _edited(sql)(path)
    r = cli("history", path)
    line = one_line_error(r, str(path), "a damaged history", words)
    assert "document store" not in line and "index" not in line


def test_postgres_permission_denied_names_the_privilege(pg_server, tmp_path):
    """A role that may not create the history's schema is told which privilege it needs."""
    pg_server.psql("DROP SCHEMA IF EXISTS nteval_history CASCADE", db="nteval")
    pg_server.psql("DROP ROLE IF EXISTS weak", db="nteval")
    pg_server.psql("CREATE ROLE weak LOGIN PASSWORD 'weakpw'", db="nteval")
    pg_server.psql("REVOKE CREATE ON DATABASE nteval FROM PUBLIC", db="nteval")
    url = pg_server.url().replace("nteval@", "weak:weakpw@", 1) if "nteval@" in pg_server.url() else None
    if url is None:
        pytest.skip(f"unexpected server URL {pg_server.url()}")
    with pytest.raises(Exception) as err:
        open_history(url)
    text = str(err.value)
    assert "permission denied for database nteval" in text and "needs CREATE on database nteval" in text
    assert "weakpw" not in text


def test_a_libpq_keyword_string_is_a_postgres_history(pg_server, tmp_path, monkeypatch):
    """`--history "host=… port=… dbname=… user=… password=…"` (psql's form) reaches the server; no
    SQLite file named after it (the password in its name) is made, and the password is not shown."""
    import servers

    monkeypatch.chdir(tmp_path)
    pg_server.psql("DROP SCHEMA IF EXISTS nteval_history CASCADE", db="nteval")
    conninfo = (f"host=127.0.0.1 port={pg_server.port} dbname={servers.DATABASE} user={servers.ROLE} "
                f"password={servers.PASSWORD}")
    with opened(conninfo) as h:
        h.append([record("v1", _scores(1))])
        assert servers.PASSWORD not in h.where and "password=***" in h.where
    with opened(pg_server.url(with_password=True)) as h:
        assert [r.label for r in h.records()] == ["v1"]
    assert list(tmp_path.iterdir()) == []


def test_reading_an_empty_history_leaves_the_file_as_it_was(tmp_path):
    """N5: `nteval history` of an empty (0-byte) file, or of a SQLite database without a table,
    says there is no record yet (exit 2) and writes nothing into it (it wrote its schema: 32 KB)."""
    empty, blank = tmp_path / "e.sqlite", tmp_path / "blank.sqlite"
    empty.touch()
    conn = sqlite3.connect(blank)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.commit()
    conn.close()
    for p in (empty, blank):
        before, stat = p.read_bytes(), p.stat()
        one_line_error(cli("history", p), str(p), "--history: no record yet")
        assert p.read_bytes() == before and p.stat().st_mtime_ns == stat.st_mtime_ns, p
        assert sorted(os.listdir(tmp_path)) == ["blank.sqlite", "e.sqlite"]  # (no journal, no copy left beside it)
