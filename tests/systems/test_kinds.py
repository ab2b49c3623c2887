"""Every registered system kind: its declarations, and a real run on a real index (the 200-record
PubMed slice), through the registry the pipeline uses."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from nteval.errors import InputError
from nteval.systems import registry
from nteval.systems.execute import Target, run_system
from nteval.systems.system import make_system

COMPUTED = [n for n in registry.algorithms()]
#: kinds that ask a server (given one in `runs`: an HTTP engine over Lucene, a real PostgreSQL)
SERVED = ("http", "postgres")


@pytest.mark.parametrize("name", registry.names())
def test_declarations_are_complete(name):
    kind = registry.get(name)
    assert kind.name == name and kind.summary
    for p in kind.params:
        assert p.help, f"{name}.{p.name} has no help"
        if not isinstance(p.default, list) and p.default != "" and p.items is None:
            assert p.coerce(p.default, "x", None) == p.default  # a default passes its own declaration


@pytest.mark.parametrize("name", [n for n in COMPUTED if n not in SERVED])
def test_default_system_is_described_by_its_name(name):
    params = {"systems": ["a", "b"]} if registry.get(name).fusion else {}
    s = make_system(name, name, params)
    assert s.kind is registry.get(name)
    assert s.describe() == (name if not params else f"{name}(systems=['a', 'b'])")


def _topics(index_dir: Path, n: int = 15) -> dict[str, str]:
    from nteval.corpus.store import FILENAME, DocStore
    from nteval.topics.focused import focused_topics
    from nteval.topics.sample import SampleSpec, sample_ids

    ids, _ = sample_ids(index_dir, SampleSpec(n=n, seed=1))
    store = DocStore(index_dir / FILENAME)
    try:
        return focused_topics(store, ids)[0]
    finally:
        store.close()


@pytest.mark.parametrize("name", SERVED)
def test_a_served_kind_needs_its_address(name):
    with pytest.raises(InputError, match=r"params.url: system 's': (http|postgres) needs url"):
        make_system("s", name)


@pytest.fixture(scope="module")
def runs(first200_index, request, tmp_path_factory):
    """Every computed kind run over 15 real titles on `nt` (fusions over bm25 and qld; http in front
    of nteval's Lucene, postgres on a real server)."""
    import os

    import servers
    from engine_server import EngineServer, LuceneBackend

    topics = _topics(first200_index)
    target = Target(first200_index, "nt")
    os.environ["NTEVAL_ENGINE_CACHE"] = str(tmp_path_factory.mktemp("kinds-engines"))
    engine = EngineServer(LuceneBackend(first200_index)).start()
    os.environ["PGPASSWORD"] = servers.PASSWORD
    served = {"http": {"preset": "elasticsearch", "url": engine.url + "/pubmed", "field": "abstract"}}
    try:
        served["postgres"] = {"url": request.getfixturevalue("pg_server").url()}
    except pytest.skip.Exception:  # (no PostgreSQL here: that kind's test skips, the others run)
        pass
    done = {}
    try:
        for name in ("bm25", "qld", *[n for n in COMPUTED if n not in ("bm25", "qld")]):
            if name in SERVED and name not in served:
                continue
            params = {"systems": ["bm25", "qld"]} if registry.get(name).fusion else served.get(name, {})
            if name == "dense":
                params = {"dim": 64}
            s = make_system(name, name, params)
            done[name] = run_system(target, s, topics, 20, done=done, threads=1)
    finally:
        target.close()
        engine.stop()
        engine.backend.close()
        os.environ.pop("NTEVAL_ENGINE_CACHE", None)
        os.environ.pop("PGPASSWORD", None)
    return topics, done


@pytest.mark.parametrize("name", COMPUTED)
def test_kind_runs_on_a_real_index(runs, name):
    topics, done = runs
    if name not in done:
        pytest.skip(f"{name}: no server here (see the skip of tests/conftest.py pg_server)")
    run = done[name]
    assert set(run) == set(topics)
    hits = [h for r in run.values() for h in r]
    assert hits, f"{name} found nothing for 15 real titles"
    limit = 100 if name == "proximity" else 20  # (proximity returns its reranked top depth; run_all cuts it)
    assert all(len(r) <= limit for r in run.values())
    # the title's own abstract is usually found by a title search (the focused protocol's premise)
    found = sum(1 for q, r in run.items() if q in [d for d, _ in r])
    assert found >= (3 if name == "proximity" else 8), f"{name}: its own abstract found for {found}/15 titles"


def test_unknown_algorithm_is_one_line():
    with pytest.raises(InputError, match=r"unknown algorithm 'bm26' \(known: bm25, qld"):
        make_system("s", "bm26")
    with pytest.raises(InputError, match="unknown algorithm 'external'"):
        make_system("s", "external")  # declared by `run:`, not `algorithm:`


def test_declared_bounds_are_enforced():
    with pytest.raises(InputError, match=r"b must be within \[0, 1\]"):
        make_system("s", "bm25", {"b": 1.5})
    with pytest.raises(InputError, match="k1 must be > 0"):
        make_system("s", "bm25", {"k1": 0})
    with pytest.raises(InputError, match="norm must be one of minmax, zscore, none"):
        make_system("s", "linear", {"systems": ["a"], "norm": "l2"})
    with pytest.raises(InputError, match="rrf needs params.systems"):
        make_system("s", "rrf")


def test_third_party_kind_through_an_entry_point(tmp_path, monkeypatch, first200_index):
    """A kind in another package, found through the ``nteval.system_kinds`` entry-point group, is
    declared in a systems YAML and run like a built-in one."""
    pkg = tmp_path / "site"
    (pkg / "mykinds").mkdir(parents=True)
    (pkg / "mykinds" / "__init__.py").write_text(textwrap.dedent('''
        from nteval.params import Param
        from nteval.systems.lucene_kinds import BagOfWords

        class TitleBM25(BagOfWords):
            """BM25 with the textbook parameters under a name of its own."""
            name = "textbook_bm25"
            params = (Param("k1", 1.2, "saturation", positive=True), Param("b", 0.75, "length norm", min=0, max=1))
            summary = "BM25 k1=1.2 b=0.75"
            family = "bm25"
    '''))
    dist = pkg / "mykinds-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mykinds\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[nteval.system_kinds]\ntextbook_bm25 = mykinds:TitleBM25\n")
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.delitem(registry._LOADED, "textbook_bm25", raising=False)
    assert "textbook_bm25" in registry.names()

    from nteval.systems.base import load_systems

    yaml = tmp_path / "systems.yaml"
    yaml.write_text("- {name: mine, algorithm: textbook_bm25, params: {k1: 1.0}}\n- {name: bm25, algorithm: bm25, "
                    "params: {k1: 1.0, b: 0.75}}\n")
    mine, ref = load_systems(yaml)
    assert mine.params == {"k1": 1.0, "b": 0.75} and mine.describe() == "textbook_bm25(k1=1.0)"
    topics = _topics(first200_index)
    target = Target(first200_index, "nt")
    try:
        assert run_system(target, mine, topics, 10, threads=1) == run_system(target, ref, topics, 10, threads=1)
    finally:
        target.close()
    registry._LOADED.pop("textbook_bm25", None)
    sys.modules.pop("mykinds", None)


def test_an_entry_point_that_is_not_a_kind_is_one_line(tmp_path, monkeypatch):
    """A broken third-party registration names itself in one line instead of failing deep inside."""
    pkg = tmp_path / "site"
    (pkg / "notakind").mkdir(parents=True)
    (pkg / "notakind" / "__init__.py").write_text("class Thing:\n    name = 'thing'\n")
    dist = pkg / "notakind-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: notakind\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[nteval.system_kinds]\nthing = notakind:Thing\n")
    monkeypatch.syspath_prepend(str(pkg))
    with pytest.raises(InputError, match="system kind 'thing': notakind:Thing is not a SystemKind named 'thing'"):
        registry.get("thing")
    assert registry.get("bm25").name == "bm25"  # the built-in kinds still load beside it
    sys.modules.pop("notakind", None)
