"""Issue 12 hardening: crashes, data loss and silently wrong numbers on hostile or odd input.

Each test failed (crash, traceback, wrong result) before its fix. Real data only: the bundled
PubMed slices, SciFact lines, tiny files written in tmp_path; Lucene is never mocked.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST200, HANG, quick

from nteval.cli import main

ROOT = Path(__file__).resolve().parents[2]


def nteval(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI in a child process (a crash inside C code then fails the test, not the test run)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "nteval.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def one_line_error(stderr: str, *needles: str) -> str:
    err = stderr.strip()
    assert len(err.splitlines()) == 1, err[:2000]
    assert err.startswith("nteval: error: "), err[:2000]
    for n in needles:
        assert n in err, (n, err)
    return err


def write_qrels_and_run(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    run = tmp_path / "sys.run"
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 d 1 3.0 sys\n2 Q0 c 2 1.5 sys\n")
    return qrels, run


# --- 1. measures -------------------------------------------------------------------------------

@pytest.mark.parametrize("measure", ["P@0", "nDCG@0", "R@0", "Judged@0", "nDCG@1e3", "P@2.5", "P(rel=0)@10"])
def test_bad_measure_cutoff_is_a_one_line_error(tmp_path, measure):
    qrels, run = write_qrels_and_run(tmp_path)
    r = nteval("evaluate", "--qrels", str(qrels), "--measures", f"AP {measure}", str(run))
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    one_line_error(r.stderr, measure, "must be a whole number within [1, ")


def test_measure_no_evaluator_computes_is_refused(tmp_path):
    qrels, run = write_qrels_and_run(tmp_path)
    r = nteval("evaluate", "--qrels", str(qrels), "--measures", "alpha_nDCG@10", str(run))
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "alpha_nDCG@10")


def test_good_measures_still_evaluate(tmp_path):
    qrels, run = write_qrels_and_run(tmp_path)
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), "--measures", "P@1 nDCG@10 Judged@2 R@1000",
                                  "--json", str(run)])
    assert r.exit_code == 0, r.output
    assert '"P@1": 0.5' in r.output


def test_focused_bad_measure_fails_before_any_work(tmp_path, first200_index):
    out = tmp_path / "focused"
    r = nteval("focused", "--index", str(first200_index), "--topics", "5", "--measures", "RR P@0",
               "--out", str(out), "--quiet")
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "P@0")
    assert not out.exists()


# --- 2. index --force only replaces an nteval index ---------------------------------------------

def test_index_force_refuses_a_users_folder(tmp_path):
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "thesis.pdf").write_bytes(b"%PDF precious")
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(papers), "--force", "--quiet"])
    assert r.exit_code == 2, r.output
    one_line_error(r.stderr, str(papers), "--force refused")
    assert (papers / "thesis.pdf").read_bytes() == b"%PDF precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["papers"]  # no temp dir, no lock file


def test_index_force_refuses_a_file(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(f), "--force", "--quiet"])
    assert r.exit_code == 2, r.output
    one_line_error(r.stderr, "--force refused", "a file")
    assert f.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_index_force_replaces_an_empty_dir_and_an_index(tmp_path):
    out = tmp_path / "idx"
    out.mkdir()
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(out), "--force", "--quiet"])
    assert r.exit_code == 0, r.output
    assert (out / "manifest.json").is_file()
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(out), "--force", "--quiet"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_index_out_dot_is_a_one_line_error_and_leaves_nothing(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    r = nteval("index", str(FIRST200), "--out", ".", "--force", "--quiet", cwd=work)
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "current directory")
    assert list(work.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["work"]


# --- 3. concurrent writers of one OUT ---------------------------------------------------------

def test_atomic_dir_checks_again_at_the_rename(tmp_path):
    from nteval.atomic import atomic_dir

    final = tmp_path / "idx"
    with pytest.raises(FileExistsError):
        with atomic_dir(final) as tmp:
            (tmp / "mine").write_text("1")
            final.mkdir()  # another build finished meanwhile
            (final / "theirs").write_text("2")
    assert [p.name for p in final.iterdir()] == ["theirs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_second_index_on_the_same_out_is_refused_while_the_first_runs(tmp_path):
    from nteval.atomic import out_lock

    out = tmp_path / "idx"
    with out_lock(out):  # this process plays the first, still running, `nteval index`
        r = nteval("index", str(FIRST200), "--out", str(out), "--quiet")
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, str(out), "another nteval process", f"pid {os.getpid()}")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # lock file removed on release


@pytest.mark.parametrize("cmd", ["focused", "highrecall", "grid", "correlate", "sref-sensitivity"])
def test_commands_writing_one_out_take_a_lock(tmp_path, cmd):
    from nteval.atomic import out_lock

    out = tmp_path / "out"
    args = {"focused": ["focused", "--index", "X", "--out", str(out)],
            "highrecall": ["highrecall", "--index", "X", "--out", str(out)],
            "grid": ["grid", "--index", "X", "--param", "k1=0.5,1", "--out", str(out)],
            "correlate": ["correlate", "--index", "X", "--queries", "q", "--qrels", "r", "--out", str(out)],
            "sref-sensitivity": ["sref-sensitivity", "--index", "X", "--sref", "bm25", "--sref", "qld", "--out", str(out)],
            }[cmd]
    with out_lock(out):
        r = nteval(*args)
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "another nteval process")


@pytest.mark.parametrize("cmd", ["grid", "correlate", "sref-sensitivity", "focused"])
def test_out_an_existing_file_is_a_one_line_error(tmp_path, first200_index, cmd):
    out = tmp_path / "results.txt"
    out.write_text("keep")
    args = {"focused": ["focused", "--index", str(first200_index), "--topics", "3", "--out", str(out)],
            "grid": ["grid", "--index", str(first200_index), "--param", "k1=0.5,1", "--topics", "3", "--out", str(out)],
            "correlate": ["correlate", "--index", str(first200_index), "--queries", "q", "--qrels", "r", "--out", str(out)],
            "sref-sensitivity": ["sref-sensitivity", "--index", str(first200_index), "--topics", "3", "--sref", "bm25",
                                 "--sref", "qld", "--out", str(out)],
            }[cmd]
    r = CliRunner().invoke(main, [*args, "--quiet"])
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, str(out), "not a directory")
    assert out.read_text() == "keep"


# --- 6 (part). temp dirs of killed runs are swept -----------------------------------------------

def test_stale_temp_dirs_of_dead_owners_are_swept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".idx.tmp-{dead.pid}-abc123"
    (stale / "all").mkdir(parents=True)
    live = tmp_path / f".idx.tmp-{os.getppid()}-def456"  # a live owner: kept
    live.mkdir()
    other = tmp_path / f".other.tmp-{dead.pid}-x"  # another output's: kept
    other.mkdir()
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(tmp_path / "idx"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert not stale.exists() and live.exists() and other.exists()


# --- 5. bombs ---------------------------------------------------------------------------------

def medline_bomb(path: Path, abstract_chars: int) -> Path:
    """The real 100-record slice with one abstract replaced by ``abstract_chars`` characters of text:
    a few KB gzipped, arbitrarily large inflated."""
    import gzip
    import re

    text = gzip.open(FIRST100_PATH()).read().decode()
    m = re.search(r"(<AbstractText[^>]*>)(.*?)(</AbstractText>)", text, re.S)
    filler = "compression bomb text "
    bomb = filler * (abstract_chars // len(filler))
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text[: m.start(2)])
        fh.write(bomb)
        fh.write(text[m.end(2):])
    return path


def FIRST100_PATH() -> Path:
    from conftest import FIRST100

    return FIRST100


def test_oversized_medline_record_is_a_counted_skip(tmp_path):
    from nteval.corpus.document import MAX_RECORD_CHARS
    from nteval.index import parse_file

    bomb = medline_bomb(tmp_path / "bomb.xml.gz", 2 * MAX_RECORD_CHARS)
    assert bomb.stat().st_size < 100_000
    ops = parse_file(bomb)
    skips = [op for op in ops if op[0] == "skip" and op[2] == "too_large"]
    assert len(skips) == 1 and skips[0][1].isdigit()
    assert sum(op[0] == "put" for op in ops) > 20  # the other records are kept


def test_oversized_beir_line_is_a_counted_skip(tmp_path):
    import gzip

    from nteval.corpus.document import MAX_RECORD_CHARS

    lines = gzip.open(SCIFACT300_PATH(), "rt", encoding="utf-8").read().splitlines()[:20]
    big = '{"_id": "huge", "title": "t", "text": "' + "w " * MAX_RECORD_CHARS + '"}'
    src = tmp_path / "corpus.jsonl"
    src.write_text("\n".join(lines[:10] + [big] + lines[10:]) + "\n")
    out = tmp_path / "idx"
    r = CliRunner().invoke(main, ["index", str(src), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    import json

    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["skipped"]["too_large"] == 1 and counts["kept"] == 20


def SCIFACT300_PATH() -> Path:
    from conftest import SCIFACT300

    return SCIFACT300


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
def test_compression_bomb_parses_in_bounded_memory(tmp_path):
    """40 MB of inflated abstract (a 64 KB .gz): parsing stays well under 400 MB RSS."""
    bomb = medline_bomb(tmp_path / "bomb.xml.gz", 40_000_000)
    # VmHWM, not ru_maxrss: the latter keeps the parent's (pytest's, JVM included) RSS across exec
    code = ("import re, sys\nfrom pathlib import Path\nfrom nteval.index import parse_file\nops = parse_file(Path(sys.argv[1]))\n"
            "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
            "print(hwm // 1024, sum(op[0] == 'skip' and op[2] == 'too_large' for op in ops))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, env=env, timeout=HANG)
    assert r.returncode == 0, r.stderr[-2000:]
    mb, skipped = map(int, r.stdout.split())
    assert skipped == 1
    assert mb < 400, f"{mb} MB"


def test_yaml_alias_bomb_is_refused_quickly_with_a_short_message(tmp_path, first200_index):
    import time

    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 7):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    yml = tmp_path / "bomb.yaml"
    yml.write_text("defs:\n" + "\n".join("  " + x for x in levels)
                   + "\nsystems:\n  - name: b\n    algorithm: bm25\n    params: {k1: *a6}\n")
    assert yml.stat().st_size < 1000
    t0 = time.perf_counter()
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--systems", str(yml),
                                  "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2, (r.output[:500], r.exception)
    err = one_line_error(r.stderr, str(yml), "alias")
    assert len(err) < 300 and time.perf_counter() - t0 < quick(10)


def test_huge_parameter_value_is_quoted_short(tmp_path):
    from nteval.errors import InputError
    from nteval.systems.base import load_systems

    yml = tmp_path / "s.yaml"
    yml.write_text("- name: b\n  algorithm: bm25\n  params: {k1: [" + ", ".join(["'" + "x" * 1000 + "'"] * 500) + "]}\n")
    with pytest.raises(InputError) as e:
        load_systems(yml)
    assert len(str(e.value)) < 300 and "k1 must be a number" in str(e.value)


@pytest.mark.parametrize("text, needle", [
    ("- name: b\n  algorithm: bm25\n  params: {k1: .inf}\n", "finite"),
    ("- name: b\n  algorithm: bm25\n  params: {k1: .nan}\n", "finite"),
    ("- name: b\n  algorithm: bm25\n  params: {fb_docs: 1}\n", "unknown parameter"),
    ("- name: b\n  algorithm: bm25_rm3\n  params: {fb_docs: " + "9" * 400 + "}\n", "at most"),
    ("- name: " + "n" * 300 + "\n  algorithm: bm25\n", "at most 100"),
    ("- name: [1, 2]\n  algorithm: bm25\n", "name must be a string"),
    ("- name: b\n  algorithm: [bm25]\n", "algorithm must be a name"),
])
def test_bad_systems_yaml_values(tmp_path, text, needle):
    from nteval.errors import InputError
    from nteval.systems.base import load_systems

    yml = tmp_path / "s.yaml"
    yml.write_text(text)
    with pytest.raises(InputError) as e:
        load_systems(yml)
    assert needle in str(e.value) and len(str(e.value)) < 300, str(e.value)[:500]


def test_non_utf8_systems_yaml_is_a_one_line_error(tmp_path, first200_index):
    yml = tmp_path / "latin1.yaml"
    yml.write_bytes("- name: b\n  algorithm: bm25\n# r\xe9sum\xe9\n".encode("latin-1"))
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--systems", str(yml),
                                  "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, str(yml), "not UTF-8", "line 3")
    assert not (tmp_path / "o").exists()


def test_grid_param_overflowing_to_inf_is_refused(tmp_path, first200_index):
    r = CliRunner().invoke(main, ["grid", "--index", str(first200_index), "--protocol", "focused",
                                  "--param", "k1=0.5,1e400", "--topics", "3", "--out", str(tmp_path / "g"), "--quiet"])
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, "k1", "'1e400' is out of range")
    assert not (tmp_path / "g").exists()


# --- 7. silently wrong inputs -------------------------------------------------------------------

@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_run_score_is_refused(tmp_path, score):
    qrels, run = write_qrels_and_run(tmp_path)
    run.write_text(f"1 Q0 a 1 2.0 sys\n1 Q0 b 2 {score} sys\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), str(run)])
    assert r.exit_code == 2, r.output
    one_line_error(r.stderr, f"{run}:line 2", "finite")


def test_duplicate_docid_in_a_run_topic_is_refused(tmp_path):
    """trec_eval refuses it ("duplicate docs"); nteval used to keep the first line silently."""
    qrels, run = write_qrels_and_run(tmp_path)
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 a 1 1.0 sys\n1 Q0 a 3 0.5 sys\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), str(run)])
    assert r.exit_code == 2, r.output
    one_line_error(r.stderr, f"{run}:line 4", "twice", "line 1")


def test_duplicate_judgment_in_qrels_is_refused(tmp_path):
    qrels, run = write_qrels_and_run(tmp_path)
    qrels.write_text("1 0 a 1\n1 0 a 0\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), str(run)])
    assert r.exit_code == 2, r.output
    one_line_error(r.stderr, f"{qrels}:line 2", "twice")


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_qrels_is_refused(tmp_path, content):
    qrels, run = write_qrels_and_run(tmp_path)
    qrels.write_text(content)
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), str(run)])
    assert r.exit_code == 2, r.output
    one_line_error(r.stderr, str(qrels), "empty")
    from nteval.errors import InputError
    from nteval.formats.topics import load_qrels

    with pytest.raises(InputError, match="empty"):
        load_qrels(qrels)


def test_truncated_cached_run_is_recomputed(tmp_path, first200_index):
    out = tmp_path / "f"
    args = ["focused", "--index", str(first200_index), "--topics", "20", "--min-topics", "5", "--systems", "default", "--out", str(out),
            "--quiet"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    import json

    results = json.loads((out / "results.json").read_text())["systems"]
    run = out / "runs" / "bm25.run"
    full = run.read_text()
    lines = full.splitlines(keepends=True)
    run.write_text("".join(lines[: len(lines) // 2]))  # cut at a line boundary: still a valid run
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert run.read_text() == full
    assert json.loads((out / "results.json").read_text())["systems"] == results


@pytest.mark.parametrize("n", ["-5", "0"])
def test_topics_below_one_is_refused(tmp_path, first200_index, n):
    for cmd in (["focused"], ["highrecall"], ["grid", "--param", "k1=0.5,1"]):
        r = CliRunner().invoke(main, [*cmd, "--index", str(first200_index), "--topics", n,
                                      "--out", str(tmp_path / "o"), "--quiet"])
        assert r.exit_code == 2, (cmd, r.output, r.exception)
        one_line_error(r.stderr, "--topics must be ≥ 1")
        assert not (tmp_path / "o").exists()


def test_depth_zero_is_refused(tmp_path, first200_index):
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--topics", "5", "--depth", "0",
                                  "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, "Invalid value for '--depth': 0 is not in the range 1<=x<=100000")


def test_judged_query_with_empty_text_is_reported(tmp_path, capsys):
    from nteval.formats.topics import load_judged_topics

    q = tmp_path / "queries.jsonl"
    q.write_text('{"_id": "1", "text": "insulin resistance"}\n{"_id": "2", "text": "  "}\n'
                 '{"_id": "3", "text": "glucose uptake in muscle"}\n')
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n3\td3\t1\n")
    topics, _ = load_judged_topics(q, qrels)
    assert sorted(topics) == ["1", "3"]
    err = capsys.readouterr().err
    assert "1 judged topic(s) with empty text left out (2)" in err


@pytest.mark.parametrize("line, needle", [
    ('{"_id": null, "title": "A title here", "text": "Some text."}', '"_id" must be a string or an integer'),
    ('{"_id": true, "title": "A title here", "text": "Some text."}', '"_id" must be a string or an integer'),
    ('{"_id": "d1", "title": ["A", "title"], "text": "Some text."}', '"title" must be a string'),
    ('{"_id": "d1", "title": "A title", "text": {"p": 1}}', '"text" must be a string'),
    ('{"_id": "d1", "title": "A \\ud800 title", "text": "Some text."}', "unpaired surrogate"),
])
def test_bad_beir_corpus_values_name_file_and_line(tmp_path, line, needle):
    import gzip

    good = gzip.open(SCIFACT300_PATH(), "rt", encoding="utf-8").read().splitlines()[:3]
    src = tmp_path / "corpus.jsonl"
    src.write_text("\n".join(good + [line]) + "\n")
    out = tmp_path / "idx"
    r = CliRunner().invoke(main, ["index", str(src), "--out", str(out), "--quiet"])
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, f"{src}:line 4", needle)
    assert not out.exists()


def test_bad_beir_query_id_is_refused(tmp_path):
    from nteval.errors import InputError
    from nteval.formats.topics import read_beir_queries

    q = tmp_path / "queries.jsonl"
    q.write_text('{"_id": "1", "text": "a"}\n{"_id": null, "text": "b"}\n')
    with pytest.raises(InputError, match="line 2"):
        read_beir_queries(q)


# --- 8. queries over Lucene's 1,024-clause limit -----------------------------------------------

def test_long_query_runs_and_is_counted(tmp_path, first200_index):
    """A 3,000-distinct-term query raised TooManyClauses and aborted every system's run."""
    import json

    from nteval.index import read_manifest
    from nteval.runs import Searched, run_all
    from nteval.settings import Execution
    from nteval.systems.base import make_system

    long_q = " ".join(f"term{i}q" for i in range(3000)) + " insulin glucose"
    topics = {"long": long_q, "short": "insulin resistance in obese patients"}
    systems = [make_system(a, a) for a in ("bm25", "bm25_rm3", "bm25_proximity", "qld")]
    fp = read_manifest(first200_index)["fingerprint"]
    runs, infos = run_all(Searched(first200_index, "nt", fp), topics, systems, tmp_path / "runs", 10,
                          Execution(progress=False))
    for s in systems:
        assert runs[s.name]["short"], s.name
        meta = json.loads((tmp_path / "runs" / f"{s.name}.meta.json").read_text())
        assert meta["long_queries"] == 1, (s.name, meta)
    assert any(d for d, _ in runs["bm25"]["long"])  # the long query still ranks documents


# --- 6. children die with their parent -----------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.split(")")[-1].split()[1]) == pid:
                out.append(int(d.name))
    return out


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_kill_9_of_a_parallel_grid_leaves_no_worker(tmp_path, first200_index):
    import json
    import signal
    import time

    out = tmp_path / "g"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "grid", "--index", str(first200_index), "--protocol",
                          "focused", "--param", "k1=0.1:3.0:0.1", "--topics", "60", "--jobs", "2", "--per-cell", "--out", str(out),
                          "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.time() + 120
        cells: list[Path] = []
        while time.time() < deadline and p.poll() is None and len(cells) < 2:
            cells = list((out / "cells").glob("*/*.json")) if (out / "cells").exists() else []
            time.sleep(0.05)
        assert len(cells) >= 2, "the grid must be running"
        workers = {json.loads(c.read_text())["pid"] for c in cells} - {p.pid}
        assert workers
        os.kill(p.pid, signal.SIGKILL)  # the parent only, as a user's kill -9 does
        p.wait(timeout=30)
        time.sleep(3)
        assert not [w for w in workers if _alive(w)], "orphan workers still running"
        n = len(list((out / "cells").glob("*/*.json")))
        time.sleep(2)
        assert len(list((out / "cells").glob("*/*.json"))) == n  # nobody writes cells any more
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(p.pid, 9)


def _loky_workers(pid: int) -> list[int]:
    def cmdline(c: int) -> bytes:
        try:
            return Path(f"/proc/{c}/cmdline").read_bytes()
        except OSError:   # (a child that just exited)
            return b""

    return [c for c in _children(pid) if b"popen_loky_posix" in cmdline(c)] if _alive(pid) else []


@pytest.mark.parametrize("where", ["grid", "index"])
def test_grid_and_index_workers_watch_from_their_start(monkeypatch, tmp_path, where):
    """grid's and index's worker pools run watch_parent as their initializer, with this process's pid
    (what the pool is given, read off joblib.Parallel)."""
    import joblib

    from nteval.grid.run import _parallel
    from nteval.index.build import _parsed
    from nteval.lifecycle import watch_parent

    given: dict = {}

    class Stop(Exception):
        pass

    class Recording:
        def __init__(self, **kw):
            given.update(kw)

        def __call__(self, tasks):
            raise Stop

    monkeypatch.setattr(joblib, "Parallel", Recording)
    with pytest.raises(Stop):
        if where == "grid":
            _parallel([("a", "k1"), ("b", "k2")], 2, None, one_pass=False)
        else:
            next(_parsed([tmp_path / "a.xml", tmp_path / "b.xml"], 2, "title+abstract"))
    assert given["initializer"] is watch_parent and given["initargs"] == (os.getpid(),)


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_a_worker_that_never_gets_a_task_ends_with_nteval(tmp_path):
    """A pool of two with one task: the other worker never gets one. Its parent gone (exited, not yet
    reaped: a zombie), both workers end — the idle one too, which a watch begun at a worker's first
    task never covered (loky keeps an idle worker 300 s)."""
    import textwrap
    import time

    script = textwrap.dedent(f"""
        import os, sys, threading, time
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from joblib import Parallel, delayed
        from nteval.lifecycle import watch_parent

        def task():
            time.sleep(120)

        threading.Thread(target=lambda: list(Parallel(n_jobs=2, initializer=watch_parent, initargs=(os.getpid(),))(
            delayed(task)() for _ in range(1))), daemon=True).start()
        deadline = time.time() + 60
        while time.time() < deadline:
            kids = []
            for d in Path("/proc").iterdir():
                try:   # (this process's own loky workers: their parent is this process)
                    mine = d.name.isdigit() and int((d / "stat").read_text().rsplit(")", 1)[-1].split()[1]) == os.getpid()
                    if mine and b"popen_loky_posix" in (d / "cmdline").read_bytes():
                        kids.append(d.name)
                except OSError:
                    pass
            if len(kids) >= 2:
                break
            time.sleep(0.05)
        time.sleep(2)   # (both started: one runs the task, the other waits for one)
        print(" ".join(kids), flush=True)
        os._exit(0)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        workers = [int(w) for w in p.stdout.readline().split()]
        assert len(workers) >= 2
        deadline = time.time() + 20
        while time.time() < deadline and [w for w in workers if _alive(w)]:
            time.sleep(0.2)
        assert not [w for w in workers if _alive(w)], "a worker outlived its nteval process"
    finally:
        p.wait(timeout=30)   # (reaped only now: until here the parent was a zombie)
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(p.pid, 9)


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_an_exited_parent_not_yet_reaped_is_not_running():
    import time

    from nteval.lifecycle import _running

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 30
    while time.time() < deadline and _alive(child.pid):
        time.sleep(0.05)
    assert Path(f"/proc/{child.pid}/stat").exists()   # a zombie: exited, not reaped
    assert not _running(child.pid)
    child.wait()
    assert not _running(child.pid) and _running(os.getpid())


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
@pytest.mark.parametrize("command", ["grid", "index"])
def test_kill_9_while_the_workers_start_leaves_none(tmp_path, first200_index, command):
    """Killed the moment its worker processes appear (they are still importing nteval): none is left.
    (The tasks are queued by then, so a watch begun at a worker's first task passes this too; the
    worker that never gets one: test_a_worker_that_never_gets_a_task_ends_with_nteval.)"""
    import shutil
    import signal
    import time

    if command == "grid":
        args = ["grid", "--index", str(first200_index), "--protocol", "focused", "--param", "k1=0.1:3.0:0.1",
                "--topics", "60", "--jobs", "2", "--per-cell", "--out", str(tmp_path / "g"), "--quiet"]
    else:  # two source files: parsed in two worker processes
        sources = [tmp_path / f"{n}.xml.gz" for n in ("a", "b")]
        for s in sources:
            shutil.copyfile(FIRST200, s)
        args = ["index", *map(str, sources), "--jobs", "2", "--out", str(tmp_path / "idx"), "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", *args], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, workers = time.time() + 120, []
        while time.time() < deadline and p.poll() is None and len(workers) < 2:
            workers = _loky_workers(p.pid)
            time.sleep(0.01)
        assert len(workers) == 2, "two worker processes must be starting"
        os.kill(p.pid, signal.SIGKILL)  # the parent only, as a user's kill -9 does
        p.wait(timeout=30)
        deadline = time.time() + 20   # (a worker still importing nteval watches once the import is done)
        while time.time() < deadline and [w for w in workers if _alive(w)]:
            time.sleep(0.2)
        assert not [w for w in workers if _alive(w)], "orphan workers still running"
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(p.pid, 9)


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_kill_9_of_index_leaves_no_child_jvm(tmp_path):
    import signal
    import time

    out = tmp_path / "idx"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    src = SHARED_OR_BUNDLED()
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "index", str(src), "--out", str(out), "--quiet"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        jvms: list[int] = []
        # the builder JVM starts with the build; killed once it flushes segments, the source file is
        # checkpointed (so the partial directory holds work to resume or to discard, and says so)
        flushed = lambda: list(tmp_path.glob(".idx.partial/.collections/lucene/nt/*/_*"))  # noqa: E731
        while time.time() < deadline and p.poll() is None and not (jvms and flushed()):
            jvms = [c for c in _children(p.pid) if "java" in Path(f"/proc/{c}/cmdline").read_bytes().decode(errors="replace")]
            time.sleep(0.02)
        assert jvms and flushed(), "a child JVM must be running, writing segments"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        time.sleep(2)
        assert not [j for j in jvms if _alive(j)], "orphan JVMs still indexing"
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(p.pid, 9)
    # the dead build's directory stays to resume from; a build of other sources discards it
    assert (tmp_path / ".idx.partial").is_dir()
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "discarding the interrupted build" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def SHARED_OR_BUNDLED() -> Path:
    return ROOT / "nteval" / "data" / "pubmed21n1298_first2000.xml.gz"


# --- B. one-line errors instead of tracebacks -----------------------------------------------------

@pytest.mark.parametrize("which", ["run", "qrels"])
@pytest.mark.parametrize("kind", ["binary", "directory", "latin1", "gzip-garbage"])
def test_binary_or_directory_run_and_qrels(tmp_path, which, kind):
    qrels, run = write_qrels_and_run(tmp_path)
    bad = tmp_path / ("bad.gz" if kind == "gzip-garbage" else "bad")
    if kind == "binary":
        bad.write_bytes(bytes(range(256)) * 4)
    elif kind == "directory":
        bad.mkdir()
    elif kind == "latin1":
        bad.write_bytes("1 0 caf\xe9 1\n".encode("latin-1"))
    else:
        bad.write_bytes(b"this is not gzip at all\n")
    args = ["evaluate", "--qrels", str(bad if which == "qrels" else qrels), str(bad if which == "run" else run)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, str(bad))


@pytest.mark.parametrize("content, needle", [
    ("{broken", "corrupt manifest"), ("{}", "corrupt manifest"), ("[1, 2]", "corrupt manifest"),
    ('{"fingerprint": "x"}', "fingerprint"),
])
def test_corrupt_manifest_is_a_one_line_error(tmp_path, first200_index, content, needle):
    import shutil

    idx = tmp_path / "idx"
    shutil.copytree(first200_index, idx)
    (idx / "manifest.json").write_text(content)
    for args in (["manifest", str(idx)], ["focused", "--index", str(idx), "--topics", "3", "--out", str(tmp_path / "o")]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output, r.exception)
        one_line_error(r.stderr, str(idx / "manifest.json"), needle)


def test_store_that_is_not_a_database(tmp_path, first200_index):
    import shutil

    idx = tmp_path / "idx"
    shutil.copytree(first200_index, idx)
    (idx / "docs.sqlite").write_bytes(b"not a database at all" * 100)
    r = CliRunner().invoke(main, ["focused", "--index", str(idx), "--topics", "3", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, (r.output, r.exception)
    one_line_error(r.stderr, "docs.sqlite", "not an SQLite database")


@pytest.mark.parametrize("data, needle", [
    (b"hello world, not xml\n", "not XML (starts with 'h'"),
    (bytes(range(256)) * 8, "not XML (binary data)"),
    (b'{"a": 1}\n', "not XML (starts with '{'"),
    (b"\n \n\t\n", "empty file"),
])
def test_garbage_xml_message_says_what_it_is(tmp_path, data, needle):
    bad = tmp_path / "garbage.xml"
    bad.write_bytes(data)
    r = CliRunner().invoke(main, ["index", str(bad), "--out", str(tmp_path / "idx"), "--quiet"])
    assert r.exit_code == 2, (r.output, r.exception)
    err = one_line_error(r.stderr, str(bad), needle)
    assert "line 0" not in err and "column 0" not in err
    if needle != "empty file":
        assert "empty" not in err


def _sigint_default() -> None:
    """A suite started in the background (``cmd &`` in a script) inherits SIGINT ignored, and so
    would the build under test (Python installs no KeyboardInterrupt handler then)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_and_leaves_nothing(tmp_path):
    import signal
    import time

    out = tmp_path / "idx"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "index", str(SHARED_OR_BUNDLED()), "--out", str(out),
                          "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_sigint_default)
    deadline = time.time() + 60
    while time.time() < deadline and not list(tmp_path.glob(".idx.partial")):  # the build's working dir
        time.sleep(0.02)
    assert p.poll() is None, "the build ended before it could be interrupted"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=HANG)
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert err.strip().splitlines()[-1] == "nteval: interrupted"
    left = sorted(x.name for x in tmp_path.iterdir())
    # nothing under the final name; a partial build only when a source file was complete (and said so)
    assert left == [] or (left == [".idx.partial"] and "are kept in" in err), (left, err[-500:])


def test_pipe_in_a_system_name_is_refused(tmp_path):
    from nteval.errors import InputError
    from nteval.systems.base import load_systems

    yml = tmp_path / "s.yaml"
    yml.write_text("- name: bm25|tuned\n  algorithm: bm25\n")
    with pytest.raises(InputError, match=r"'\|'"):
        load_systems(yml)


# --- C. install without the pyserini jar ----------------------------------------------------------

def test_missing_pyserini_jar_says_how_to_install_it(tmp_path):
    """A real environment without pyserini: every installed package but pyserini, linked into a
    fresh directory, the interpreter started with -S (no site-packages of its own)."""
    import site
    import sysconfig

    site_dir = Path(sysconfig.get_paths()["purelib"])
    env_dir = tmp_path / "site"
    env_dir.mkdir()
    for entry in site_dir.iterdir():
        if not entry.name.lower().startswith("pyserini") and not entry.name.endswith(".pth"):
            (env_dir / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NTEVAL_", "PYTHON"))}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env_dir}"
    r = subprocess.run([sys.executable, "-S", "-m", "nteval.cli", "index", str(FIRST200), "--out",
                        str(tmp_path / "idx"), "--quiet"], capture_output=True, text=True, env=env, timeout=HANG)
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "pip install --no-deps pyserini==1.6.0")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no index, no temp dir, no lock
    assert site  # (imported for clarity: -S disables it in the child)


# --- C. nteval evaluate: -q, BEIR qrels, runs named by their tag ----------------------------------

def test_evaluate_per_query_beir_qrels_and_tags(tmp_path):
    qrels = tmp_path / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n1\ta\t1\n1\tb\t0\n2\tc\t1\n")
    run1 = tmp_path / "first.run"
    run1.write_text("1 Q0 a 1 2.0 bm25\n1 Q0 b 2 1.0 bm25\n2 Q0 d 1 3.0 bm25\n2 Q0 c 2 1.5 bm25\n")
    run2 = tmp_path / "second.run"
    run2.write_text("1 Q0 b 1 2.0 qld\n1 Q0 a 2 1.0 qld\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), "--measures", "RR P@1", str(run1), str(run2)])
    assert r.exit_code == 0, (r.output, r.exception)
    lines = r.output.splitlines()
    assert lines[1].split() == ["bm25", "0.7500", "0.5000"] and lines[2].split() == ["qld", "0.2500", "0.0000"]
    r = CliRunner().invoke(main, ["evaluate", "-q", "--qrels", str(qrels), "--measures", "RR", str(run1)])
    assert r.exit_code == 0, (r.output, r.exception)
    assert r.output.splitlines() == ["RR\t1\t1.0000", "RR\t2\t0.5000", "RR\tall\t0.7500"]
    r = CliRunner().invoke(main, ["evaluate", "--names", "file", "--json", "--qrels", str(qrels), "--measures", "RR",
                                  str(run1)])
    assert '"first.run"' in r.output


def test_systems_command_lists_sets_algorithms_and_a_set():
    r = CliRunner().invoke(main, ["systems"])
    assert r.exit_code == 0, (r.output, r.exception)
    for s in ("default", "table1", "wide", "bm25_rm3", "k1=0.9", "mu=1000", "fb_terms=10"):
        assert s in r.output, s
    assert "24 systems" in r.output
    r = CliRunner().invoke(main, ["systems", "wide"])
    assert r.exit_code == 0 and "bm25_k1.2_b0.75   bm25(k1=1.2, b=0.75)" in r.output
    r = CliRunner().invoke(main, ["systems", "nope"])
    assert r.exit_code == 2 and "shipped: default, dense, engines, neural, table1, wide, wide_dense" in r.stderr


@pytest.mark.parametrize("name", ["topics.tsv", "queries.jsonl"])
def test_non_utf8_topics_file_is_a_one_line_error(tmp_path, name):
    from nteval.errors import InputError
    from nteval.formats.topics import load_topics

    bad = tmp_path / name
    text = '1\tinsulin\n2\tcaf\xe9 consumption\n' if name.endswith(".tsv") else \
        '{"_id": "1", "text": "a"}\n{"_id": "2", "text": "caf\xe9"}\n'
    bad.write_bytes(text.encode("latin-1"))
    with pytest.raises(InputError, match=r"line 2: not UTF-8"):
        load_topics(bad)


def test_run_grid_api_takes_the_lock_too(tmp_path, first200_index):
    from nteval.errors import InputError
    from nteval.grid import parse_axis, run_grid

    out = tmp_path / "g"
    with _locked_elsewhere(out), pytest.raises(InputError, match="another nteval process"):
        run_grid(first200_index, out, [parse_axis("k1=0.5,1")], protocol="focused", n_topics=3, progress=False)


@pytest.mark.parametrize("api", ["run_focused", "run_protocol"])
def test_protocol_api_takes_the_lock_too(tmp_path, first200_index, api):
    from nteval import experiment
    from nteval.errors import InputError

    out = tmp_path / "o"
    args = ("focused",) if api == "run_protocol" else ()
    with _locked_elsewhere(out), pytest.raises(InputError, match="another nteval process"):
        getattr(experiment, api)(*args, first200_index, out, n_topics=3, progress=False)
    assert not out.exists()


@contextlib.contextmanager
def _locked_elsewhere(out):
    """Another process holding nteval's lock on ``out`` for the block."""
    code = ("import sys, time\nfrom nteval.atomic import out_lock\nwith out_lock(sys.argv[1]):\n"
            "    print('locked', flush=True)\n    time.sleep(30)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_nteval_jvm_leaves_nothing_in_tmp():
    """An in-process JVM started with -Xrs opens an attach socket /tmp/.java_pid<pid> that nothing
    removes; nteval's JVM runs without the attach mechanism, so a process that used Lucene and
    exited leaves no file behind."""
    import subprocess
    import sys
    import tempfile

    code = ("import os; from nteval.lucene import jvm; jvm.autoclass('java.lang.String'); print(os.getpid())")
    pid = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[2]).stdout.split()[-1]
    assert not (Path(tempfile.gettempdir()) / f".java_pid{pid}").exists()
    assert not Path(f"/tmp/.java_pid{pid}").exists()
