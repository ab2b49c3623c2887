"""The engines teams run in production as system kinds, against real engines: ``http`` in front of
a real HTTP server on 127.0.0.1 answering from nteval's Lucene runner in Elasticsearch's, Solr's
and a custom service's response shapes (tests/engine_server.py); ``postgres`` on a real PostgreSQL
server (tests/servers.py); ``sqlite_fts5`` embedded. The faults of a live engine each give one line
naming the system and the topic; a failed run caches no run, and a rerun asks only what is missing;
secrets given as ${ENV} reach no file and no log line."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TESTS, cli, quick
from engine_server import EngineServer, Faults, LuceneBackend, RecordedBackend, start_process

from nteval.errors import InputError
from nteval.runs import Searched, run_all
from nteval.settings import Execution
from nteval.systems.base import load_systems

N_TOPICS = 30


def _titles(index_dir: Path) -> dict[str, str]:
    """Every title of the slice that can be a focused topic, by docid (what any run here may ask)."""
    from nteval.corpus.store import FILENAME, DocStore
    from nteval.topics.focused import focused_topics

    db = sqlite3.connect(index_dir / FILENAME)
    ids = [r[0] for r in db.execute("SELECT docid FROM docs WHERE title != '' AND abstract != '' ORDER BY seq")]
    db.close()
    store = DocStore(index_dir / FILENAME)
    try:
        return focused_topics(store, ids)[0]
    finally:
        store.close()


@pytest.fixture(scope="module")
def lucene(first200_index):
    backend = LuceneBackend(first200_index)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def topics(first200_index) -> dict[str, str]:
    titles = _titles(first200_index)
    return dict(list(titles.items())[:N_TOPICS])


@pytest.fixture(scope="module")
def answers(lucene, first200_index, tmp_path_factory) -> Path:
    """Lucene BM25's answers to every title of the slice, recorded (a server process serves them)."""
    p = tmp_path_factory.mktemp("answers") / "answers.json"
    p.write_text(json.dumps(RecordedBackend.record(lucene, list(_titles(first200_index).values()), 1000).answers))
    return p


@pytest.fixture(autouse=True)
def engine_cache(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "engine-cache"
    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(d))
    return d


@pytest.fixture
def server(lucene):
    srv = EngineServer(lucene).start()
    yield srv
    srv.stop()


def _systems(tmp_path: Path, text: str) -> list:
    p = tmp_path / f"systems-{time.monotonic_ns()}.yaml"
    p.write_text(text)
    return load_systems(p)


def _run(first200_index, topics, systems, runs_dir, depth=100):
    return run_all(Searched.of(first200_index, "nt"), topics, systems, runs_dir, depth, Execution(progress=False, threads=1))


def _es(url: str, name: str = "es", **extra) -> str:
    params = {"preset": "elasticsearch", "url": url + "/pubmed", "field": "abstract", "retries": 2, "backoff": 0.05,
              **extra}
    return f"- {{name: {name}, algorithm: http, params: {json.dumps(params)}}}\n"


# -- http: the presets reproduce the engine behind them ---------------------------------------------

def test_http_presets_reproduce_the_engine_behind_them(first200_index, topics, server, tmp_path):
    """Elasticsearch's and Solr's presets, a custom service read through JMESPath paths with an id map,
    and Elasticsearch's ids read from _source: all four give Lucene BM25's run exactly, and the
    engine's reported version lands in the run's metadata."""
    idmap = tmp_path / "ids.tsv"
    idmap.write_text("".join(f"doc-{d}\t{d}\n" for d in _titles(first200_index)))
    server.faults.id_prefix = ""
    systems = _systems(tmp_path, f"""
- {{name: bm25, algorithm: bm25}}
{_es(server.url).strip()}
- {{name: solr, algorithm: http, params: {{preset: solr, url: "{server.url}/solr/pubmed", field: abstract}}}}
- name: mine
  algorithm: http
  params: {{url: "{server.url}/search?q={{query}}&n={{k}}", hits: results, id: doc, score: relevance}}
""")
    runs, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    assert runs["es"] == runs["bm25"] and runs["solr"] == runs["bm25"] and runs["mine"] == runs["bm25"]
    notes = {i.system.name: i.notes for i in infos}
    assert notes["es"]["engine_version"] == "8.15.0" and notes["solr"]["engine_version"] == "9.6.1"
    assert notes["mine"]["engine_version"] is None and notes["es"]["asked"] == len(set(topics.values()))
    meta = json.loads((tmp_path / "runs" / "es.meta.json").read_text())
    assert meta["notes"]["engine_version"] == "8.15.0"
    # ids the engine names its own way: an id map, or the field that holds the docid
    server.faults.id_prefix = "doc-"
    systems = _systems(tmp_path, f"""
- {{name: bm25, algorithm: bm25}}
{_es(server.url, "mapped", id_map=str(idmap)).strip()}
{_es(server.url, "sourced", id="_source.pmid").strip()}
""")
    runs, _ = _run(first200_index, topics, systems, tmp_path / "runs2")
    assert runs["mapped"] == runs["bm25"] and runs["sourced"] == runs["bm25"]


def test_a_rerun_asks_the_engine_nothing_it_answered(first200_index, topics, server, tmp_path):
    systems = _systems(tmp_path, _es(server.url))
    _run(first200_index, topics, systems, tmp_path / "a")
    asked = server.searches
    assert asked == len(set(topics.values()))
    _, infos = _run(first200_index, topics, systems, tmp_path / "b")  # another OUT: no run cached there
    assert server.searches == asked and infos[0].notes["from_cache"] == len(topics) and infos[0].notes["asked"] == 0


def test_an_engine_upgraded_in_place_is_asked_again(first200_index, topics, server, tmp_path, monkeypatch):
    from nteval.systems import http

    systems = _systems(tmp_path, _es(server.url))
    _run(first200_index, topics, systems, tmp_path / "runs")
    _, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    assert infos[0].reused and server.searches == len(set(topics.values()))
    server.version = "8.16.0"
    monkeypatch.setattr(http, "_REPORTED", {})  # (a new process: it asks the engine its version again)
    _, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    assert not infos[0].reused and infos[0].notes["engine_version"] == "8.16.0"
    assert server.searches == 2 * len(set(topics.values()))


# -- faults: one line naming the system and the topic; nothing cached from a failed run ---------------

def _fails(first200_index, topics, systems, runs_dir, *needles) -> str:
    with pytest.raises(InputError) as err:
        _run(first200_index, topics, systems, runs_dir)
    line = str(err.value)
    assert "\n" not in line
    for n in ("system 'es': topic '", *needles):
        assert n in line, line
    assert not (runs_dir / "es.run").exists() and not (runs_dir / "es.meta.json").exists()
    return line


def test_server_killed_mid_run_then_a_rerun_asks_only_the_rest(first200_index, topics, answers, tmp_path):
    proc, url = start_process(answers, tmp_path / "port", Faults(die_after=12))
    port = int(url.rsplit(":", 1)[1])
    try:
        systems = _systems(tmp_path, _es(url, concurrency=1, retries=1))
        line = _fails(first200_index, topics, systems, tmp_path / "runs")
        assert "cannot connect" in line or "broke" in line, line
        assert proc.wait(timeout=10) != 0  # it died after 12 answers
        proc2, url2 = start_process(answers, tmp_path / "port2", Faults(), port=port)
        assert url2 == url
        try:
            runs, infos = _run(first200_index, topics, systems, tmp_path / "runs")
            stats = json.loads(__import__("urllib.request").request.urlopen(url + "/_nteval/stats").read())
            assert stats["searches"] == len(set(topics.values())) - 12  # only the missing ones
            assert infos[0].notes["from_cache"] == 12
            bm25 = _run(first200_index, topics, _systems(tmp_path, "- {name: bm25, algorithm: bm25}\n"), tmp_path / "l")[0]
            assert runs["es"] == bm25["bm25"]
        finally:
            proc2.kill()
            proc2.wait()
    finally:
        proc.kill()
        proc.wait()


def test_a_slow_server_times_out(first200_index, topics, server, tmp_path):
    server.faults.slow = 1.0
    systems = _systems(tmp_path, _es(server.url, timeout=0.2, retries=1, concurrency=2))
    _fails(first200_index, topics, systems, tmp_path / "runs", "no answer from http://127.0.0.1:",
           "within 0.2 s (timeout) (after 2 tries)")


def test_429_and_500_are_retried_honouring_retry_after(first200_index, topics, server, tmp_path):
    server.faults.fail_first, server.faults.fail_status, server.faults.retry_after = 2, 429, "1"
    systems = _systems(tmp_path, _es(server.url, concurrency=1, retries=3, backoff=0.01))
    runs, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    assert infos[0].notes["retried_errors"] == 2 and len(runs["es"]) == len(topics)
    t = server.times
    assert t[1] - t[0] >= 0.95 and t[2] - t[1] >= 0.95  # Retry-After: 1, not the 0.01 s backoff
    server.faults.fail_first, server.faults.retry_after = 0, None
    server.faults.fail_query, server.faults.fail_status = topics[list(topics)[3]], 500
    systems = _systems(tmp_path, _es(server.url, name="es", version="2", concurrency=1, retries=2, backoff=0.01))
    line = _fails(first200_index, topics, systems, tmp_path / "runs2", f"HTTP 500 for POST {server.url}/pubmed/_search: "
                  "es_rejected_execution_exception: rejected execution (test fault) (after 3 tries)")
    assert f"topic '{list(topics)[3]}':" in line


def test_an_answer_that_never_ends_is_cut_at_max_answer_mb(first200_index, topics, server, tmp_path):
    """A body that never ends, sent as fast as it is read, is read up to max_answer_mb (64 MB by
    default), then the run stops in one line; nothing of it is kept."""
    server.faults.endless = topics[list(topics)[2]]
    for extra, mb in (({"max_answer_mb": 2}, "2"), ({}, "64")):
        t0 = time.monotonic()
        systems = _systems(tmp_path, _es(server.url, concurrency=1, retries=1, **extra))
        _fails(first200_index, topics, systems, tmp_path / "runs", f"topic '{list(topics)[2]}': the answer from "
               f"{server.url}/pubmed/_search is larger than max_answer_mb ({mb} MB; it had not ended there)")
        assert time.monotonic() - t0 < quick(30)


@pytest.mark.parametrize("retry_after, said", [("100000", "100,000 s"), ("Fri, 31 Dec 2100 23:59:59 GMT", "")])
def test_a_retry_after_beyond_the_limit_says_what_the_engine_asked(first200_index, topics, server, tmp_path, retry_after,
                                                                   said):
    """An engine asking to wait longer than nteval waits: one line with the wait the engine asked for
    (urllib3's parser caps it at 21,600 s)."""
    server.faults.fail_first, server.faults.fail_status, server.faults.retry_after = 10_000, 429, retry_after
    systems = _systems(tmp_path, _es(server.url, concurrency=1))
    line = _fails(first200_index, topics, systems, tmp_path / "runs", "HTTP 429 for POST ", "before trying again (nteval waits "
                  "at most 300 s)")
    waited = float(line.split("it asks to wait ")[1].split(" s ")[0].replace(",", ""))
    assert said in line and (waited == 100_000 if said else waited > 2_000_000_000), line


@pytest.mark.parametrize("fault, said", [
    ("nan_total", "its total (the matches it counts, at hits.total.value) is nan, not a number"),
    ("malformed", "an answer that is not JSON"),
    ("empty", "an empty answer (HTTP 200 without a body)"),
    ("truncate", "broke mid-answer"),
    ("duplicate", "it ranks document"),
    ("short_page", "a page cut short"),
])
def test_a_bad_answer_is_one_line_and_never_kept(first200_index, topics, server, tmp_path, fault, said):
    bad_qid = list(topics)[5]
    setattr(server.faults, fault, topics[bad_qid])
    systems = _systems(tmp_path, _es(server.url, retries=1, backoff=0.01))
    line = _fails(first200_index, topics, systems, tmp_path / "runs", f"topic '{bad_qid}': ", said)
    assert "Traceback" not in line
    # the engine is fixed: the rerun asks the bad query again (its answer was not kept), and only what is missing
    setattr(server.faults, fault, "")
    before = list(server.queries)
    runs, _ = _run(first200_index, topics, systems, tmp_path / "runs")
    again = server.queries[len(before):]
    assert topics[bad_qid] in again and len(again) == len(set(topics.values())) - len(set(before) - {topics[bad_qid]})
    assert runs["es"][bad_qid]


def test_ids_not_in_the_collection(first200_index, topics, server, tmp_path):
    server.faults.foreign = "*"
    systems = _systems(tmp_path, _es(server.url))
    _fails(first200_index, topics, systems, tmp_path / "runs", "are not documents of this collection (e.g. "
           "'not-a-doc-0')", "does the engine search another corpus")
    server.faults.foreign = ""
    n = server.searches
    runs, _ = _run(first200_index, topics, systems, tmp_path / "runs")
    assert server.searches - n == len(set(topics.values()))  # (the foreign answers left the cache)


def test_a_wrong_field_and_a_refused_key_say_what_the_engine_said(first200_index, topics, server, tmp_path, monkeypatch):
    systems = _systems(tmp_path, _es(server.url, field="title_abstract"))
    _fails(first200_index, topics, systems, tmp_path / "runs", "HTTP 400 for POST ", "/pubmed/_search: "
           "query_shard_exception: field [title_abstract] holds titles")
    server.faults.api_key = "right-key"
    monkeypatch.setenv("NTEVAL_TEST_ES_KEY", "wrong-key")
    systems = _systems(tmp_path, _es(server.url, headers={"Authorization": "ApiKey ${NTEVAL_TEST_ES_KEY}"}))
    _fails(first200_index, topics, systems, tmp_path / "runs", "HTTP 401 for POST ", ": security_exception: unable to "
           "authenticate")
    monkeypatch.delenv("NTEVAL_TEST_ES_KEY")
    with pytest.raises(InputError, match="system 'es': environment variable NTEVAL_TEST_ES_KEY is not set"):
        _run(first200_index, topics, systems, tmp_path / "runs")


def test_http_declarations_are_checked_before_any_run(tmp_path):
    for params, said in [
        ({"preset": "elasticsearch", "url": "http://127.0.0.1:9/x"}, "field: give the name of the field that holds "
                                                                     "the abstract WITHOUT the title"),
        ({"url": "http://127.0.0.1:9/x"}, "the request never carries the query"),
        ({"url": "http://127.0.0.1:9/s?q={query}"}, "a custom engine needs hits"),
        ({"url": "ftp://x/s?q={query}", "hits": "a"}, "url must be an http:// or https:// address"),
        ({"url": "http://x/s?q={query}", "hits": "a[?"}, "hits 'a[?' is not a JMESPath expression"),
        ({"url": "http://x/s?q={query}", "hits": "a", "headers": {"X": object()}}, "headers must be a mapping"),
        ({"url": "http://x/s?q={query}", "hits": "a", "id_map": "nope.tsv"}, "no such id_map file"),
    ]:
        from nteval.systems.system import make_system

        with pytest.raises(InputError, match=None) as err:
            make_system("h", "http", params, where=tmp_path / "s.yaml")
        assert said in str(err.value), (params, str(err.value))


# -- secrets ------------------------------------------------------------------------------------

def test_a_secret_reaches_no_file_and_no_log_line(first200_index, server, tmp_path, monkeypatch):
    """An API key in a header and a token in the URL, given as ${ENV}: after a run with retries,
    a failed run and a successful one through the CLI, neither value is in any file under OUT,
    in the engine caches, in a crash file or in the output."""
    key, token = "sEcReT-KeY-4f9a1c", "tOkEn-77b2e0"
    monkeypatch.setenv("NTEVAL_TEST_KEY", key)
    monkeypatch.setenv("NTEVAL_TEST_TOKEN", token)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    server.faults.api_key = key
    url = server.url + "/pubmed?token=${NTEVAL_TEST_TOKEN}"
    yaml = tmp_path / "s.yaml"
    yaml.write_text("- {name: bm25, algorithm: bm25}\n" + _es(server.url, headers={"Authorization": "ApiKey ${NTEVAL_TEST_KEY}"}
                                                              ).replace(server.url + "/pubmed", url))
    out = tmp_path / "out"
    logs = []
    server.faults.fail_first, server.faults.fail_status = 3, 503
    server.faults.fail_query = ""
    r = cli("focused", "--index", first200_index, "--topics", N_TOPICS, "--min-topics", 10, "--systems", yaml, "--out",
            out)
    logs.append(r.output)
    assert r.exit_code == 0, r.output
    server.faults.api_key = key + "-rotated"  # now the engine refuses it: a failed run
    yaml.write_text(yaml.read_text().replace('"backoff"', '"version": "2", "backoff"'))
    r = cli("focused", "--index", first200_index, "--topics", N_TOPICS, "--min-topics", 10, "--systems", yaml, "--out",
            tmp_path / "out2")
    logs.append(r.output)
    assert r.exit_code == 2 and "HTTP 401" in r.output
    files = [p for root in (out, tmp_path / "out2", tmp_path / "engine-cache", tmp_path / "tmp") if root.exists()
             for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "es.meta.json" for p in files) and len(files) > 10
    for p in files:
        data = p.read_bytes()
        assert key.encode() not in data and token.encode() not in data, p
    for text in logs:
        assert key not in text and token not in text
    assert "${NTEVAL_TEST_TOKEN}" in (out / "runs" / "es.meta.json").read_text()


def test_a_secret_with_a_line_break_is_never_shown(first200_index, topics, server, tmp_path, monkeypatch):
    """A trailing line break (a secret read from a file, pasted into a CI store) is dropped; a line
    break inside, or another control character, is one line naming the variable, never its value.
    Every form a message may show a secret in is put back as its ${NAME}."""
    from nteval.systems.remote import Secrets

    key = "sEcReT-7f3a9"
    server.faults.api_key = key
    systems = _systems(tmp_path, _es(server.url, headers={"Authorization": "ApiKey ${NTEVAL_TEST_KEY}"}))
    for given in (key + "\n", key + "\r\n", key + "\n\n"):
        monkeypatch.setenv("NTEVAL_TEST_KEY", given)
        runs, _ = _run(first200_index, topics, systems, tmp_path / f"runs{len(given)}")
        assert len(runs["es"]) == len(topics)
    for given in (key + "\r\nX-Injected: yes", "\t" + key, key[:4] + "\x1b" + key[4:]):
        monkeypatch.setenv("NTEVAL_TEST_KEY", given)
        with pytest.raises(InputError) as err:
            _run(first200_index, topics, systems, tmp_path / "bad")
        line = str(err.value)
        assert line == ("system 'es': environment variable NTEVAL_TEST_KEY holds a control character (a line break or a "
                        "tab inside it?): a value sent in a request is one line of printable characters (its value is "
                        "not shown)"), line
    monkeypatch.setenv("NTEVAL_TEST_KEY", "k'e\\y é&=/ " + key + "\n")
    secrets = Secrets("s")
    secrets.expand("${NTEVAL_TEST_KEY}")
    v = os.environ["NTEVAL_TEST_KEY"]
    from urllib.parse import quote, quote_plus

    for form in (v, v.rstrip("\n"), repr(v), repr(v.encode()), json.dumps(v), json.dumps(v, ensure_ascii=False),
                 quote(v), quote_plus(v.rstrip("\n")), repr(v.rstrip("\n").encode())):
        shown = secrets.redact(f"said: {form}!")
        assert key not in shown and "${NTEVAL_TEST_KEY}" in shown, (form, shown)


def test_a_secret_that_is_not_utf8_text_is_one_line_naming_the_variable(monkeypatch):
    """A value holding bytes that are not UTF-8 (a binary file read into the variable) was an
    internal error (UnicodeEncodeError, exit 1): one line naming the variable, never its value."""
    from nteval.systems.remote import Secrets

    monkeypatch.setenv("NTEVAL_TEST_KEY", "sEcReT-7f3a9\udce9")
    with pytest.raises(InputError) as err:
        Secrets("es").expand("ApiKey ${NTEVAL_TEST_KEY}")
    line = str(err.value)
    assert "NTEVAL_TEST_KEY" in line and "not UTF-8" in line and "sEcReT" not in line, line


#: A key holding every character a URL gives a meaning to, and a space (kit6's G6).
HOSTILE_KEY = "s3cr+t/K3y=v@l ue&x=1#f"


def test_a_url_secret_is_sent_encoded_and_never_echoed_back(first200_index, topics, server, tmp_path, monkeypatch):
    """G6: a ${NAME} in an http system's URL is sent percent-encoded as one value (the engine reads
    back the key as it is: ``+`` is no space, ``&`` splits nothing); an engine whose error page
    echoes the request line (HTTP 400) shows no form of it in the error line, nor in any file."""
    from urllib.parse import parse_qs, quote, quote_plus, urlsplit

    monkeypatch.setenv("NT_API_KEY", HOSTILE_KEY)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    server.faults.echo400 = True
    yaml = tmp_path / "s.yaml"
    yaml.write_text(f"""- name: live
  algorithm: http
  params: {{url: "{server.url}/search?api_key=${{NT_API_KEY}}&q={{query}}&n={{k}}", hits: results, id: doc,
           score: relevance, retries: 0}}
""")
    out = tmp_path / "out"
    r = cli("focused", "--index", first200_index, "--topics", N_TOPICS, "--min-topics", 10, "--systems", yaml, "--out", out)
    assert r.exit_code == 2, r.output
    line = r.output.strip().splitlines()[-1]
    assert "HTTP 400 for GET " + server.url + "/search: bad request: GET /search?api_key=${NT_API_KEY}&q=" in line, line
    method, path = server.requests[-1]
    assert parse_qs(urlsplit(path).query)["api_key"] == [HOSTILE_KEY]  # (sent encoded: read back as it is)
    partly = quote(HOSTILE_KEY, safe="!$&'()*+,;=:@/?")  # (what urllib3 sends of a value put in as it is)
    files = [p for root in (out, tmp_path / "engine-cache", tmp_path / "tmp") if root.exists()
             for p in root.rglob("*") if p.is_file()]
    for form in (HOSTILE_KEY, quote(HOSTILE_KEY, safe=""), quote_plus(HOSTILE_KEY), quote(HOSTILE_KEY), partly,
                 "s3cr+t", "s3cr%2Bt", "K3y"):
        assert form not in r.output, (form, r.output)
        for p in files:
            assert form.encode() not in p.read_bytes(), (form, p)


def test_a_custom_engine_with_a_body_is_asked_with_post(first200_index, topics, server, tmp_path):
    """F4: ``preset: custom`` with a ``body`` and no ``method`` sends POST (docs/live-engines.md's
    preset table); ``method: GET`` still says otherwise; an HTTP error line names the method and
    the URL it was sent to."""
    body = 'body: {q: "{query}", n: "{k}"}, hits: results, id: doc, score: relevance'
    systems = _systems(tmp_path, f"""
- {{name: bm25, algorithm: bm25}}
- {{name: posted, algorithm: http, params: {{url: "{server.url}/search", {body}}}}}
""")
    runs, _ = _run(first200_index, topics, systems, tmp_path / "runs")
    assert runs["posted"] == runs["bm25"]
    assert {m for m, p in server.requests if p.startswith("/search")} == {"POST"}
    systems = _systems(tmp_path, f"""
- {{name: es, algorithm: http, params: {{url: "{server.url}/nowhere", method: GET, {body}, retries: 0}}}}
""")
    line = _fails(first200_index, topics, systems, tmp_path / "runs2", f"HTTP 404 for GET {server.url}/nowhere: no handler")
    assert server.requests[-1][0] == "GET", line


def test_a_postgres_password_holding_an_at_never_shows_its_tail(first200_index, topics, tmp_path, monkeypatch):
    """libpq reads a URL's password up to the first '@' and names the rest as the host in its error
    ("failed to resolve host 'Xk39secret@127.0.0.1'"); redaction knows the password as written, up to
    the last '@'. A password holding an '@' (written, or from ${NAME}) is one line before connecting,
    naming none of it; the same for a postgresql:// history."""
    from nteval.gate.history import open_history

    pytest.importorskip("psycopg")
    monkeypatch.setenv("NTEVAL_TEST_PGPW", "pg@Xk39secret")
    for url in ("postgresql://postgres:${NTEVAL_TEST_PGPW}@127.0.0.1:1/postgres",
                "postgresql://postgres:pg@Xk39secret@127.0.0.1:1/postgres"):
        systems = _systems(tmp_path, f'- {{name: pg, algorithm: postgres, params: {{url: "{url}", retries: 0}}}}\n')
        with pytest.raises(InputError) as err:
            _run(first200_index, topics, systems, tmp_path / "runs")
        assert "Xk39" not in str(err.value) and "holds an '@'" in str(err.value), str(err.value)
    with pytest.raises(InputError) as err:
        open_history("postgresql://postgres:pg@Xk39secret@127.0.0.1:1/postgres")
    assert "Xk39" not in str(err.value) and "holds an '@'" in str(err.value), str(err.value)


# -- postgres -------------------------------------------------------------------------------------

def _pg_direct(url: str, table: str, topics: dict[str, str], depth: int) -> dict[str, list[tuple[str, float]]]:
    """The same search through psycopg directly (words ORed, ts_rank)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return {q: [(d, float(s)) for d, s in conn.execute(
            f"SELECT docid, ts_rank(tsv, x.q) s FROM {table}, (SELECT replace(websearch_to_tsquery('english', %s)::text, "
            "' & ', ' | ')::tsquery AS q) x WHERE tsv @@ x.q ORDER BY s DESC, docid LIMIT %s", (t, depth)).fetchall()]
                for q, t in topics.items()}


def test_postgres_over_its_own_table_and_yours(first200_index, topics, pg_url, pg_server, tmp_path, capsys):
    from nteval.formats.trec import canonical
    from nteval.index import read_manifest
    from nteval.systems.postgres import own_table

    systems = _systems(tmp_path, f"""
- {{name: pg, algorithm: postgres, params: {{url: "{pg_url}"}}}}
- {{name: pg_and, algorithm: postgres, params: {{url: "{pg_url}", operator: and, rank: ts_rank_cd}}}}
""")
    runs, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    table = own_table("nt", "english", read_manifest(first200_index)["fingerprint"])
    direct = _pg_direct(pg_url, table, topics, 100)
    assert runs["pg"] == {q: canonical(r, 100) for q, r in direct.items()}
    assert infos[0].notes["table"] == table and infos[0].notes["engine_version"].startswith("15")
    # AND keeps the documents that hold every word: a subset of OR's
    assert all({d for d, _ in runs["pg_and"][q]} <= {d for d, _ in runs["pg"][q]} for q in topics)
    count = pg_server.psql(f"SELECT count(*) FROM {table}", db="nteval").strip()
    assert int(count) == json.loads((first200_index / "manifest.json").read_text())["indexes"]["nt"]["documents"]
    # a table that does not hold the index's documents is loaded again, and said so
    pg_server.psql(f"DELETE FROM {table} WHERE docid IN (SELECT docid FROM {table} LIMIT 3)", db="nteval")
    pg_server.psql(f"COMMENT ON TABLE {table} IS '{{\"documents\": 3}}'", db="nteval")
    runs2, _ = _run(first200_index, topics, _systems(tmp_path, f"- {{name: pg, algorithm: postgres, params: "
                                                            f"{{url: \"{pg_url}\", version: '2'}}}}\n"), tmp_path / "r2")
    assert "holds other documents than the index: loading it again" in capsys.readouterr().err
    assert runs2["pg"] == runs["pg"]
    # the user's own table, mapped by column names
    pg_server.psql("CREATE TABLE papers (pmid text, title text, abstract text)", db="nteval")
    pg_server.psql(f"INSERT INTO papers SELECT docid, 'a title', body FROM {table}", db="nteval")
    pg_server.psql("GRANT SELECT ON papers TO nteval", db="nteval")
    mine = _systems(tmp_path, f"- {{name: pg, algorithm: postgres, params: {{url: \"{pg_url}\", table: papers, "
                              "id_column: pmid, text_column: abstract}}\n")
    runs3, infos3 = _run(first200_index, topics, mine, tmp_path / "r3")
    assert runs3["pg"] == runs["pg"] and infos3[0].notes["table"] == "papers"


def test_postgres_faults_are_one_line(first200_index, topics, pg_url, pg_server, tmp_path, monkeypatch):
    pg_server.psql("CREATE TABLE IF NOT EXISTS docs_no_text (id text, title text)", db="nteval")
    pg_server.psql("GRANT SELECT ON docs_no_text TO nteval", db="nteval")
    systems = _systems(tmp_path, f"- {{name: pg, algorithm: postgres, params: {{url: \"{pg_url}\", table: docs_no_text, "
                                 "text_column: abstract}}\n")
    with pytest.raises(InputError) as err:
        _run(first200_index, topics, systems, tmp_path / "runs")
    assert str(err.value) == (f"system 'pg': {pg_url}: table docs_no_text has no column abstract (text_column; its "
                              "columns: id, title)")
    monkeypatch.setenv("PGPASSWORD", "not-the-password")
    systems = _systems(tmp_path, f"- {{name: pg, algorithm: postgres, params: {{url: \"{pg_url}\"}}}}\n")
    with pytest.raises(InputError) as err:
        _run(first200_index, topics, systems, tmp_path / "runs")
    line = str(err.value)
    assert line.startswith(f"system 'pg': {pg_url}: cannot connect:") and 'password authentication failed for user "nteval"' \
        in line and "not-the-password" not in line
    assert not (tmp_path / "runs" / "pg.run").exists()


def test_postgres_sessions_cut_are_retried_and_a_server_killed_mid_run_is_one_line(first200_index, topics, pg_server,
                                                                                   tmp_path, monkeypatch):
    """The server ends nteval's sessions mid-run (pg_terminate_backend): they are made again and the
    run goes on. The server dies mid-run: one line naming the topic; a server started again on the
    same port is asked only what the first one did not answer."""
    import threading

    import servers

    monkeypatch.setenv("PGPASSWORD", servers.PASSWORD)
    systems = _systems(tmp_path, f"- {{name: pg, algorithm: postgres, params: {{url: \"{pg_server.url()}\", rate: 15, "
                                 "concurrency: 2, backoff: 0.05}}\n")
    done = threading.Event()

    def cut() -> None:
        while not done.wait(0.4):
            pg_server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'nteval'")

    cutter = threading.Thread(target=cut, daemon=True)
    cutter.start()
    try:
        runs, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    finally:
        done.set()
        cutter.join()
    assert infos[0].notes["retried_errors"] >= 1 and len(runs["pg"]) == len(topics)

    bindir, _ = servers.postgres_binaries()
    own = servers.start_postgres(bindir)
    try:
        systems = _systems(tmp_path, f"- {{name: pg, algorithm: postgres, params: {{url: \"{own.url()}\", rate: 10, "
                                     "concurrency: 1, retries: 1, backoff: 0.05}}\n")
        killer = threading.Timer(2.0, own.stop)
        killer.start()
        with pytest.raises(InputError) as err:
            _run(first200_index, topics, systems, tmp_path / "runs2")
        killer.join()
        line = str(err.value)
        assert line.startswith("system 'pg': topic '") and ("connection broke" in line or "cannot connect" in line), line
        assert not (tmp_path / "runs2" / "pg.run").exists()
        again = servers.start_postgres(bindir, port=own.port)  # (a new, empty server: nteval loads its table again)
        try:
            runs2, infos2 = _run(first200_index, topics, systems, tmp_path / "runs2")
        finally:
            again.stop()
        asked, cached = infos2[0].notes["asked"], infos2[0].notes["from_cache"]
        assert cached >= 5 and asked + cached == len(topics) and runs2["pg"] == runs["pg"]
    finally:
        own.stop()


def test_an_interrupt_cancels_the_statements_running(pg_url):
    """An interrupt's abort of a ``postgres`` run: the statements running on the server are
    cancelled at once (no worker waits for its statement_timeout)."""
    import threading

    import psycopg

    from nteval.systems.postgres import Connections
    from nteval.systems.remote import Secrets

    conns = Connections(psycopg, pg_url, 600.0, Secrets("pg"), "pg")
    said: list[BaseException] = []

    def sleep() -> None:
        try:
            conns.get().execute("SELECT pg_sleep(60)")
        except psycopg.Error as err:
            said.append(err)

    worker = threading.Thread(target=sleep)
    worker.start()
    time.sleep(1.0)
    t0 = time.monotonic()
    conns.cancel()
    worker.join(10)
    conns.close()
    assert not worker.is_alive() and time.monotonic() - t0 < quick(5)
    assert isinstance(said[0], psycopg.errors.QueryCanceled)


def test_an_interrupt_cancels_every_connection_at_once():
    """Four connections whose cancel stalls (a proxy that stopped forwarding): their cancels run side by
    side, not one after another (hostile trial 7, N4: 27 s after SIGTERM). A barrier of four is only
    passed when all four cancels are waiting together."""
    import threading

    from nteval.systems.postgres import CANCEL_WAIT, Connections
    from nteval.systems.remote import Secrets

    barrier = threading.Barrier(4, timeout=CANCEL_WAIT)
    passed: list[int] = []

    class Stalled:
        def __init__(self, i: int) -> None:
            self.i = i

        def cancel_safe(self, timeout: float) -> None:
            assert timeout <= CANCEL_WAIT
            barrier.wait()
            passed.append(self.i)

    conns = Connections(None, "postgresql://x@127.0.0.1:1/db", 600.0, Secrets("pg"), "pg")
    conns.all = [Stalled(i) for i in range(4)]
    conns.cancel()
    assert sorted(passed) == [0, 1, 2, 3]


# -- sqlite_fts5 ----------------------------------------------------------------------------------

def test_sqlite_fts5_is_a_plain_fts5_search_cached_beside_the_index(first200_index, topics, tmp_path, engine_cache, capsys):
    from nteval.corpus.store import index_docids, index_texts
    from nteval.formats.trec import canonical
    from nteval.systems.sqlite_fts5 import fts_query, without_stopwords

    systems = _systems(tmp_path, "- {name: fts, algorithm: sqlite_fts5}\n- {name: fts_and, algorithm: sqlite_fts5, "
                                 "params: {operator: and}}\n")
    runs, infos = _run(first200_index, topics, systems, tmp_path / "runs")
    # a plain sqlite3 loop over an FTS5 table of the same texts gives the same run
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(abstract, tokenize='porter unicode61')")
    db.executemany("INSERT INTO t(rowid, abstract) VALUES (?, ?)",
                   [(i + 1, without_stopwords(text)) for i, (_d, text) in enumerate(index_texts(first200_index, "nt"))])
    docids = index_docids(first200_index, "nt")
    plain = {q: [(docids[r - 1], -s) for r, s in db.execute("SELECT rowid, bm25(t) s FROM t WHERE t MATCH ? ORDER BY s "
                                                             "LIMIT 100", (fts_query(text, "lucene", "or"),))]
             for q, text in topics.items()}
    assert runs["fts"] == {q: canonical(r, 100) for q, r in plain.items()}
    assert all({d for d, _ in runs["fts_and"][q]} <= {d for d, _ in runs["fts"][q]} for q in topics)
    cache = [p for p in engine_cache.iterdir() if p.is_dir() and "-fts5-" in p.name]
    assert len(cache) == 1 and json.loads((cache[0] / "meta.json").read_text())["documents"] == len(docids)
    # damaged: built again, and said so
    meta = json.loads((cache[0] / "meta.json").read_text())
    (cache[0] / "meta.json").write_text(json.dumps({**meta, "docids_sha256": "0" * 64}))
    runs2, _ = _run(first200_index, topics, _systems(tmp_path, "- {name: fts, algorithm: sqlite_fts5, params: "
                                                               "{stops: lucene}}\n"), tmp_path / "r2")
    assert "is damaged (it holds other documents than the index): building it again" in capsys.readouterr().err
    assert runs2["fts"] == runs["fts"]


def test_sqlite_fts5_weighs_the_title_column_of_the_all_index(first200_index, topics):
    from nteval.systems.execute import Target, run_system
    from nteval.systems.system import make_system

    target = Target(first200_index, "all")
    plain = run_system(target, make_system("f", "sqlite_fts5"), topics, 10, threads=1)
    no_title = run_system(target, make_system("f", "sqlite_fts5", {"title_weight": 0.0}), topics, 10, threads=1)
    top_own = sum(1 for q, r in plain.items() if r and r[0][0] == q)
    assert top_own == len(topics)  # a title finds its own record first when titles are searched
    assert plain != no_title


# -- the whole thing from the command line ---------------------------------------------------------

def test_each_kind_from_a_systems_yaml(first200_index, server, pg_url, tmp_path):
    yaml = tmp_path / "my.yaml"
    yaml.write_text("- {name: bm25_k1.2_b0.75, algorithm: bm25, params: {k1: 1.2, b: 0.75}}\n"
                    + _es(server.url, "es_lucene") + f"- {{name: pg, algorithm: postgres, params: {{url: \"{pg_url}\"}}}}\n"
                    "- {name: fts5, algorithm: sqlite_fts5}\n")
    r = cli("focused", "--index", first200_index, "--topics", N_TOPICS, "--min-topics", 10, "--systems", yaml,
            "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "f" / "results.json").read_text())
    rr = {n: s["RR"] for n, s in res["systems"].items()}
    assert set(rr) == {"bm25_k1.2_b0.75", "es_lucene", "pg", "fts5"} and min(rr.values()) > 0.5
    assert abs(rr["fts5"] - rr["bm25_k1.2_b0.75"]) < 0.1
    assert res["system_notes"]["pg"]["engine"] == "postgres"


# -- a kill -9 leaves no server behind ------------------------------------------------------------

KILLED = """
import json, os, sys, time
sys.path[:0] = [{tests!r}, {root!r}]
from engine_server import Faults, start_process
from pathlib import Path
import servers
pids = {{}}
bindir, why = servers.postgres_binaries()
if bindir is not None:
    pg = servers.start_postgres(bindir)
    pids["postgres"] = pg.proc.pid
proc, url = start_process(Path({answers!r}), Path({port!r}), Faults(slow=0.2))
pids["engine"] = proc.pid
Path({pids!r}).write_text(json.dumps(pids))
from nteval.experiment import run_focused
Path({yaml!r}).write_text("- {{name: es, algorithm: http, params: {{preset: elasticsearch, url: " + json.dumps(url) + ", field: abstract}}}}\\n")
run_focused({index!r}, {out!r}, n_topics=30, systems={yaml!r}, progress=False, min_topics=10)
"""


def test_a_kill_9_mid_run_leaves_no_server_behind(first200_index, answers, tmp_path):
    pids_file = tmp_path / "pids.json"
    script = KILLED.format(tests=str(TESTS), root=str(TESTS.parent), answers=str(answers), port=str(tmp_path / "port"),
                           pids=str(pids_file), yaml=str(tmp_path / "s.yaml"), index=str(first200_index),
                           out=str(tmp_path / "out"))
    env = {**os.environ, "NTEVAL_ENGINE_CACHE": str(tmp_path / "cache")}
    child = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not pids_file.is_file() and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert pids_file.is_file(), child.stderr.read().decode()[-2000:] if child.poll() is not None else "no pids"
    pids = json.loads(pids_file.read_text())
    time.sleep(2.0)  # mid-run: the engine answers 5 queries a second
    assert child.poll() is None
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 15
    alive = dict(pids)
    while alive and time.monotonic() < deadline:
        for name, pid in list(alive.items()):
            try:
                os.kill(pid, 0)
                with open(f"/proc/{pid}/stat") as fh:  # a zombie is gone too (its parent died: init reaps it)
                    if fh.read().split(") ")[1].startswith("Z"):
                        del alive[name]
            except (ProcessLookupError, FileNotFoundError):
                del alive[name]
        time.sleep(0.1)
    assert not alive, f"left behind: {alive}"
    assert not (tmp_path / "out" / "runs" / "es.run").exists()


# -- reading answers, the rate limit, progress -------------------------------------------------------

def test_hits_that_do_not_hold_what_the_paths_say_are_one_line():
    from nteval.systems.http import Client, resolved
    from nteval.systems.remote import EngineError, Secrets
    from nteval.systems.system import make_system

    s = make_system("h", "http", {"url": "http://127.0.0.1:9/s?q={query}", "hits": "data.results", "id": "doc.pmid",
                                  "score": "relevance", "total": "data.count"})
    c = Client(s, resolved(s), Secrets("h"), 10)
    ok = c.parse(b'{"data": {"count": 2, "results": [{"doc": {"pmid": ["31"]}, "relevance": 2}, '
                 b'{"doc": {"pmid": 32}, "relevance": 1.5}]}}')
    assert ok.hits == [("31", 2.0), ("32", 1.5)] and ok.total == 2
    for body, said in [(b'{"data": {"results": [{"doc": {}, "relevance": 1}]}}', "hit 1 has no document id at doc.pmid"),
                       (b'{"data": {"results": [{"doc": {"pmid": "1"}, "relevance": "high"}]}}',
                        "hit 1 ('1') has no score at relevance (found 'high')"),
                       (b'{"data": {"results": [{"doc": {"pmid": "a b"}, "relevance": 1}]}}', "contains whitespace"),
                       (b'{"data": {"hits": []}}', "no list of hits at data.results of its answer (found nothing; the "
                                                   "answer's keys: data)")]:
        with pytest.raises(EngineError) as err:
            c.parse(body)
        assert said in err.value.said, err.value.said
    c.close()


def test_the_rate_limit_and_the_progress_line(first200_index, topics, server, tmp_path, capsys):
    server.faults.fail_first, server.faults.fail_status = 1, 503
    systems = _systems(tmp_path, _es(server.url, rate=25, concurrency=4, backoff=0.01))
    run_all(Searched.of(first200_index, "nt"), topics, systems, tmp_path / "runs", 100, Execution(progress=True, threads=1))
    t = server.times
    assert (t[-1] - t[0]) >= (len(t) - 1) / 25 * 0.9  # at most 25 requests a second, over 4 workers
    err = capsys.readouterr().err
    assert "q/s" in err and "errors=1" in err


def test_ctrl_c_asks_no_more_and_keeps_what_came(first200_index, topics, server, tmp_path):
    """An interrupt (Ctrl-C, SIGTERM) while the engine is asked: the queued queries are not sent, the
    requests in flight end, and the answers that came are kept for the next run."""
    from nteval.systems.execute import Target, run_system

    server.faults.slow = 0.3
    system = _systems(tmp_path, _es(server.url, concurrency=2))[0]
    seen = []

    def tick(n):
        seen.append(n)
        if sum(seen) >= 3:
            raise KeyboardInterrupt

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_system(Target(first200_index, "nt"), system, topics, 100, tick=tick)
    assert time.monotonic() - t0 < quick(3.0) and server.searches <= 6  # (not the 30 topics)
    server.faults.slow = 0
    _, infos = _run(first200_index, topics, [system], tmp_path / "runs")
    assert infos[0].notes["from_cache"] >= 3 and server.searches <= 6 + len(topics) - 3
