"""`nteval check` and `gate` of a live engine (the `http` kind in front of a real HTTP server on
127.0.0.1, tests/engine_server.py): each asks the engine now, so a change behind the same engine
version shows in the next check; earlier answers are replayed only with --reuse-answers, and the
first line says how many and from when; a check cut short resumes, and says so. An engine that
trickles its answer meets a total deadline per request, and SIGTERM ends a check at once (a real
signal to a real `nteval check` process)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli, quick
from engine_server import EngineServer, LuceneBackend


class Reversed:
    """The engine after a bad release: the same hits, in the reverse order."""

    def __init__(self, backend):
        self.backend = backend

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        hits = self.backend.search(text, k)
        return [(d, float(len(hits) - i)) for i, (d, _s) in enumerate(reversed(hits))]


@pytest.fixture(scope="module")
def pin(first200_index, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("live-gate") / "pin"
    r = cli("pin", "--index", first200_index, "--topics", 60, "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def lucene(first200_index):
    backend = LuceneBackend(first200_index)
    yield backend
    backend.close()


@pytest.fixture
def server(lucene, tmp_path, monkeypatch):
    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "engine-cache"))
    srv = EngineServer(lucene).start()
    yield srv
    srv.stop()


def _yaml(tmp_path: Path, url: str, **extra) -> Path:
    params = {"preset": "elasticsearch", "url": url + "/pubmed", "field": "abstract", "retries": 0, **extra}
    p = tmp_path / "es.yaml"
    p.write_text(f"- {{name: es, algorithm: http, params: {json.dumps(params)}}}\n")
    return p


def _check(first200_index, pin, tmp_path, yaml, out, *args):
    return cli("check", "--index", first200_index, "--pin", pin, "--task", "known-item", "--system", yaml,
               "--history", tmp_path / "h.sqlite", "--out", tmp_path / out, "--quiet", *args)


def _rr(output: str) -> float:
    line = next(x for x in output.splitlines() if " on " in x and "pinned topics: RR " in x)
    return float(line.split("RR ")[1].split()[0])


def test_a_check_asks_the_live_engine_now_and_replays_only_when_told(first200_index, pin, server, tmp_path):
    yaml = _yaml(tmp_path, server.url)
    r = _check(first200_index, pin, tmp_path, yaml, "c1")
    assert r.exit_code == 0, r.output
    n = server.searches
    good = _rr(r.output)
    assert n > 30 and good > 0.5
    # the engine changes behind the same version (a re-index, a ranking change): the next check sees it
    server.backend = Reversed(server.backend)
    r = _check(first200_index, pin, tmp_path, yaml, "c2")
    # ... and says so: the same release far below its earlier record is an alert (exit 5)
    assert r.exit_code == 5 and "ALERT: release es" in r.output, r.output
    assert server.searches == 2 * n and _rr(r.output) < good - 0.1
    assert not r.output.startswith("Not asked now")
    used = json.loads((tmp_path / "c2" / "check.json").read_text())["answers"]
    assert used["systems"]["es"]["asked"] == n and used["systems"]["es"]["from_earlier"] == 0 and used["note"] is None
    # --reuse-answers: nothing asked, and the first line and check.json say what was replayed, and from when
    r = _check(first200_index, pin, tmp_path, yaml, "c3", "--reuse-answers")
    assert r.exit_code == 5, r.output  # (the replayed answers are c2's: still below the first record)
    assert server.searches == 2 * n
    first = r.output.splitlines()[0]
    assert first.startswith(f"Not asked now: {n} of {n} answers of es replayed, kept ") and "UTC" in first
    assert first.endswith("(--reuse-answers).")
    res = json.loads((tmp_path / "c3" / "check.json").read_text())
    assert res["answers"]["systems"]["es"]["from_earlier"] == n and res["answers"]["systems"]["es"]["as"] == "replayed"
    assert res["answers"]["systems"]["es"]["kept"][0].startswith("20") and res["spec"]["reuse_answers"] is True
    # a gate whose baseline is the live engine asks it too; its headline says nothing of replays
    server.backend = server.backend.backend
    g = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", yaml,
            "--candidate", "bm25", "--out", tmp_path / "g", "--quiet")
    assert g.exit_code in (0, 4), g.output
    assert server.searches == 3 * n and "Not asked now" not in g.output
    # with --reuse-answers the gate's headline (gate.md's too) says so
    g = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", yaml,
            "--candidate", "bm25", "--out", tmp_path / "g2", "--quiet", "--reuse-answers")
    assert server.searches == 3 * n
    head = json.loads((tmp_path / "g2" / "gate.json").read_text())["headline"]["text"]
    assert f"Not asked now: {n} of {n} answers of es replayed" in head and head in g.output.splitlines()[0]
    assert f"Not asked now: {n} of {n} answers of es replayed" in (tmp_path / "g2" / "gate.md").read_text()


def test_a_check_cut_short_resumes_and_says_so(first200_index, pin, server, tmp_path):
    yaml = _yaml(tmp_path, server.url, concurrency=1)
    topics = (pin / "focused" / "topics.tsv").read_text().splitlines()
    server.faults.fail_query = topics[20].split("\t", 1)[1]
    r = _check(first200_index, pin, tmp_path, yaml, "c1")
    assert r.exit_code == 2 and "HTTP 500" in r.output, r.output
    asked = server.searches - 1  # (the failed one is not kept)
    assert asked >= 10
    server.faults.fail_query = ""
    r = _check(first200_index, pin, tmp_path, yaml, "c2")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Not asked now: {asked} of ") and "resumed from a run cut short, kept " in r.output
    n = server.searches - asked - 1
    # that run finished: the next check asks everything again
    r = _check(first200_index, pin, tmp_path, yaml, "c3")
    assert r.exit_code == 0 and not r.output.startswith("Not asked now")
    assert server.searches - asked - 1 - n == n + asked


def test_a_first_check_stopped_before_its_files_can_be_rerun_into_the_same_out(first200_index, pin, server, tmp_path):
    """A first gate or check into a new OUT that stops before writing gate.json/check.json (an
    engine that did not answer, Ctrl-C) leaves OUT/runs/ behind when a run was finished (the gate's
    baseline), and nothing when none was (hostile T8: no OUT holding only its stake); the rerun into
    the same OUT is nteval's own, not "a directory nteval did not write"."""
    yaml = _yaml(tmp_path, server.url, concurrency=1)
    topics = (pin / "focused" / "topics.tsv").read_text().splitlines()
    server.faults.fail_query = topics[20].split("\t", 1)[1]
    r = _check(first200_index, pin, tmp_path, yaml, "c1")
    assert r.exit_code == 2 and "HTTP 500" in r.output, r.output
    assert not (tmp_path / "c1").exists()   # (nothing finished: nothing left)
    g = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", "bm25",
            "--candidate", yaml, "--out", tmp_path / "g1", "--quiet")
    assert g.exit_code == 2 and "HTTP 500" in g.output, g.output
    assert (tmp_path / "g1" / "runs" / "pinned" / "bm25.run").is_file() and not (tmp_path / "g1" / "gate.json").exists()
    server.faults.fail_query = ""
    r = _check(first200_index, pin, tmp_path, yaml, "c1")
    assert r.exit_code == 0 and (tmp_path / "c1" / "check.json").is_file(), r.output
    g = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", "bm25",
            "--candidate", yaml, "--out", tmp_path / "g1", "--quiet")
    assert g.exit_code in (0, 4) and (tmp_path / "g1" / "gate.json").is_file(), g.output
    # a user's folder holding only a runs/ of theirs is still refused
    (tmp_path / "mine" / "runs").mkdir(parents=True)
    r = _check(first200_index, pin, tmp_path, yaml, "mine")
    assert r.exit_code == 2 and "did not write" in r.output, r.output


def test_a_fusion_of_a_live_engine_is_not_reused_when_the_engine_is_asked_again(first200_index, server, tmp_path):
    from nteval.runs import Searched, run_all
    from nteval.settings import Execution
    from nteval.systems.base import load_systems

    p = tmp_path / "s.yaml"
    p.write_text(_yaml(tmp_path, server.url).read_text() + "- {name: bm25, algorithm: bm25}\n"
                 "- {name: fused, algorithm: rrf, params: {systems: [es, bm25]}}\n")
    systems = load_systems(p)
    topics = {f"q{i}": w for i, w in enumerate(["cancer cells", "protein binding", "heart disease", "blood pressure",
                                               "gene expression", "clinical trial", "brain injury", "liver"])}
    where = Searched.of(first200_index, "nt")
    for answers, reused in (("replay", False), ("replay", True), ("ask", False), ("reuse", False)):
        _, infos = run_all(where, topics, systems, tmp_path / "runs", 100, Execution(progress=False, answers=answers))
        got = {i.system.name: i.reused for i in infos if i.system.name != "bm25"}
        assert got == {"es": reused, "fused": reused}, (answers, got)
    assert server.searches == 2 * len(topics)  # (the first run and the one that asked again; reuse replays)


def _check_process(first200_index, pin, tmp_path, yaml, out) -> subprocess.Popen:
    env = {**os.environ, "NTEVAL_ENGINE_CACHE": str(tmp_path / "engine-cache")}
    return subprocess.Popen([sys.executable, "-m", "nteval", "check", "--index", str(first200_index), "--pin", str(pin),
                             "--task", "known-item", "--system", str(yaml), "--history", str(tmp_path / "h.sqlite"),
                             "--out", str(tmp_path / out), "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _ended(proc: subprocess.Popen, seconds: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"nteval was still running {seconds:g} s later: {err[-500:]}") from None


def test_a_trickled_answer_meets_its_deadline_and_sigterm_ends_the_check(first200_index, pin, server, tmp_path):
    """Each read of a trickled answer is on time (one byte every 0.2 s), so only a total deadline
    per request ends it: one line, exit 2, in seconds. With a long timeout, SIGTERM ends the check
    with the usual line and status, the requests in flight cut, no worker left blocking the exit."""
    server.faults.trickle = "*"
    t0 = time.monotonic()
    proc = _check_process(first200_index, pin, tmp_path, _yaml(tmp_path, server.url, timeout=1, retries=1, concurrency=2),
                          "deadline")
    _out, err = _ended(proc, quick(60))
    assert proc.returncode == 2, err
    line = err.strip()
    assert "\n" not in line and "system 'es': topic '" in line and "no complete answer from " in line, line
    assert "within 1 s (timeout: the answer began, then did not end) (after 2 tries)" in line and time.monotonic() - t0 < quick(30)
    base = server.searches
    proc = _check_process(first200_index, pin, tmp_path, _yaml(tmp_path, server.url, timeout=600, concurrency=4),
                          "signal")
    deadline = time.monotonic() + quick(60)
    while server.searches < base + 4 and time.monotonic() < deadline:  # (4 requests of the check in flight)
        time.sleep(0.1)
    assert proc.poll() is None and server.searches == base + 4
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    _out, err = _ended(proc, quick(20))
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "nteval: interrupted", err
    assert time.monotonic() - t0 < quick(10)


def test_a_password_written_in_a_system_url_reaches_no_output(first200_index, pin, server, pg_server, tmp_path,
                                                             monkeypatch):
    """A `postgres` system whose URL holds its password, and an `http` one with user:password@, in
    a gate, a check and a protocol run: the runs work, and neither password is in any file they
    write (gate.json, check.json, results.json, runs/*.meta.json, reports) nor in their output;
    the URLs show `user:***@`."""
    import servers

    monkeypatch.delenv("PGPASSWORD", raising=False)
    http_pw = "h77p-s3cr3t"
    pg = pg_server.url(with_password=True)
    yaml = tmp_path / "sys.yaml"
    yaml.write_text(f"- {{name: pg, algorithm: postgres, params: {{url: \"{pg}\"}}}}\n"
                    + _yaml(tmp_path, server.url.replace("://", f"://reader:{http_pw}@")).read_text())
    out = []
    g = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--systems", yaml,
            "--baseline", "es", "--candidate", "pg", "--out", tmp_path / "g", "--quiet")
    out.append(g.output)
    assert g.exit_code in (0, 3, 4), g.output
    c = cli("check", "--index", first200_index, "--pin", pin, "--task", "known-item", "--systems", yaml, "--system",
            "pg", "--history", tmp_path / "h.sqlite", "--out", tmp_path / "c", "--quiet")
    out.append(c.output)
    assert c.exit_code == 0, c.output
    f = cli("focused", "--index", first200_index, "--topics", 30, "--min-topics", 10, "--systems", yaml, "--out",
            tmp_path / "f", "--quiet")
    out.append(f.output)
    assert f.exit_code == 0, f.output
    files = [p for d in ("g", "c", "f") for p in (tmp_path / d).rglob("*") if p.is_file()]
    assert len(files) > 10 and any(p.name == "pg.meta.json" for p in files)
    for p in files:
        data = p.read_bytes()
        assert servers.PASSWORD.encode() not in data and http_pw.encode() not in data, p
    for text in out:
        assert servers.PASSWORD not in text and http_pw not in text
    gate = json.loads((tmp_path / "g" / "gate.json").read_text())
    assert gate["systems"]["pg"]["params"]["url"] == pg.replace(servers.PASSWORD, "***")
    assert "reader:***@" in gate["systems"]["es"]["params"]["url"]
    meta = json.loads((tmp_path / "f" / "runs" / "pg.meta.json").read_text())
    assert meta["notes"]["url"] == pg.replace(servers.PASSWORD, "***")


def test_reuse_answers_without_a_live_engine_says_it_changed_nothing(first200_index, pin, server, tmp_path):
    """N6: --reuse-answers with no http or postgres system (a Lucene system, a run file) is one note
    on stderr, "--reuse-answers applies to http and postgres systems only", in a check and in a
    gate; with a live engine there is none."""
    note = "nteval: note: --reuse-answers applies to http and postgres systems only"
    r = _check(first200_index, pin, tmp_path, "bm25", "c1", "--reuse-answers")
    assert r.exit_code == 0 and r.stderr.strip().splitlines() == [
        note + "; none of this check's systems is one, so it changed nothing"], r.stderr
    r = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", "bm25",
            "--candidate", "bm25_k1.2_b0.75", "--out", tmp_path / "g", "--quiet", "--reuse-answers")
    assert r.exit_code in (0, 4) and note + "; none of this gate's systems is one" in r.stderr, r.output
    assert note not in r.stdout
    r = _check(first200_index, pin, tmp_path, _yaml(tmp_path, server.url), "c2", "--reuse-answers")
    assert r.exit_code == 0 and note not in r.output, r.output
    r = _check(first200_index, pin, tmp_path, "bm25", "c3")
    assert r.exit_code == 0 and note not in r.output, r.output
