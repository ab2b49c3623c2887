"""``params: {family: …}``: a declaration every system kind accepts (issue 48 item 2, kit6's G3).

The family of a system nteval does not compute (a run file, a callable, a program, an engine
behind ``http`` or ``postgres``) cannot be read from its kind: it says what it is, and the
validation study's notes and the gate's cross-family rule read it
(:func:`nteval.systems.families.families`). It changes nothing the system does: not its run, not
its cache key, not its description."""
from __future__ import annotations

import json
import textwrap

import pytest
from conftest import cli, one_line_error

from nteval.systems.families import FAMILIES, families

#: One system of every kind (and every YAML spelling of the kinds nteval does not compute).
EVERY_KIND = """\
- {name: bm25, algorithm: bm25}
- {name: qld, algorithm: qld}
- {name: rm3, algorithm: bm25_rm3}
- {name: rocchio, algorithm: bm25_rocchio}
- {name: disj, algorithm: disjunctive}
- {name: cd, algorithm: conj_disj}
- {name: at, algorithm: and_then}
- {name: prox, algorithm: proximity}
- {name: bprox, algorithm: bm25_proximity}
- {name: wl, algorithm: dense}
- {name: pisa, algorithm: pisa}
- {name: tantivy, algorithm: tantivy}
- {name: fts5, algorithm: sqlite_fts5}
- {name: pg, algorithm: postgres, params: {url: "postgresql://u@127.0.0.1:1/db"}}
- {name: http, algorithm: http, params: {url: "http://127.0.0.1:1/s?q={query}", hits: hits}}
- {name: rrf, algorithm: rrf, params: {systems: [bm25, wl]}}
- {name: lin, algorithm: linear, params: {systems: [bm25, wl]}}
- {name: run, run: r.run}
- {name: runs, runs: {focused: r.run, human: r.run}}
- {name: fn, callable: "famsvc:search", version: 1}
- {name: cmd, command: "prog {topics} {run}", version: 1}
- {name: pt, pyterrier: "famsvc:pipeline", version: 1}
"""


def _declared(text: str, family) -> str:
    """Each entry of ``text`` with ``params: {family: F}`` added (to its own params, if any); ``family``:
    one family for every entry, or a function of the entry's name."""
    out = []
    for line in text.splitlines():
        f = family(line.split("name: ", 1)[1].split(",", 1)[0]) if callable(family) else family
        if "params: {" in line:
            line = line.replace("params: {", f"params: {{family: {f}, ", 1)
        else:
            line = line[:-1] + f", params: {{family: {f}}}}}"
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.fixture
def code_ok(monkeypatch):
    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")


def test_every_kind_accepts_a_declared_family(tmp_path, code_ok):
    """Every kind reads ``params.family``: a system nteval does not compute (a run, a callable, a
    program, a pipeline, an engine) takes the declared family; one it computes accepts its own; a
    fusion of known inputs keeps what they make it, whatever it declares. The system is otherwise
    the same one: same cache key, same description."""
    from nteval.systems.base import load_systems

    (tmp_path / "r.run").write_text("1 Q0 d 1 1.0 t\n")
    plain, declared = tmp_path / "plain.yaml", tmp_path / "declared.yaml"
    plain.write_text(EVERY_KIND)
    before = {s.name: s for s in load_systems(plain)}
    own = families({n: {"algorithm": s.algorithm, "params": s.params} for n, s in before.items()})
    assert own["wl"] == "dense" and own["rrf"] == own["lin"] == "static_hybrid" and own["run"] is None
    declared.write_text(_declared(EVERY_KIND, lambda n: "neural" if n in ("rrf", "lin") else own[n] or "neural"))
    after = {s.name: s for s in load_systems(declared)}
    assert len(after) == 22
    fam = families({n: {"algorithm": s.algorithm, "params": s.params} for n, s in after.items()})
    assert fam == {n: own[n] or "neural" for n in after}, fam   # (rrf and lin stay static_hybrid)
    for n, s in after.items():
        assert s.key() == before[n].key() and s.describe() == before[n].describe(), n
    listed = cli("systems", declared)
    assert listed.exit_code == 0 and listed.output.count("(family: ") == 22, listed.output


def test_a_declaration_against_the_family_nteval_computes_is_refused(tmp_path):
    """Hostile T3: ``{model: minilm, family: bm25}`` passed a topical gate against BM25 as one family
    (exit 0) where MiniLM itself is INCONCLUSIVE across families (exit 4). A family nteval computes
    is not declared away: one line naming the place, exit 2."""
    for entry, computed in [("{name: m, algorithm: dense, params: {model: wordllama, family: bm25}}", "dense"),
                            ("{name: b, algorithm: bm25, params: {family: neural}}", "bm25"),
                            ("{name: x, algorithm: bm25_rm3, params: {family: bm25}}", "expansion")]:
        (tmp_path / "s.yaml").write_text(f"- {entry}\n")
        line = one_line_error(cli("systems", tmp_path / "s.yaml"), "params.family", f"({computed})",
                              "does not compute")
        assert "Traceback" not in line


def test_an_unknown_family_is_one_line_naming_the_allowed_ones(tmp_path, code_ok):
    (tmp_path / "r.run").write_text("1 Q0 d 1 1.0 t\n")
    for entry, place in [("{name: h, algorithm: http, params: {url: 'http://x/s?q={query}', hits: a, family: trans}}",
                          "params.family"),
                         ("{name: r, run: r.run, params: {family: trans}}", "systems[1].params.family"),
                         ("{name: c, callable: 'm:f', version: 1, params: {family: [neural]}}", "systems[1].params.family"),
                         ("{name: b, algorithm: bm25, params: {family: 3}}", "params.family")]:
        (tmp_path / "s.yaml").write_text(f"- {entry}\n")
        r = cli("systems", tmp_path / "s.yaml")
        line = one_line_error(r, f"s.yaml:{place}", "unknown family", "(allowed: " + ", ".join(FAMILIES) + ")")
        assert "Traceback" not in r.output, line
    (tmp_path / "s.yaml").write_text("- {name: r, run: r.run, params: {family: neural, k1: 2}}\n")
    one_line_error(cli("systems", tmp_path / "s.yaml"), "systems[1].params.k1", "unknown parameter 'k1'",
                   "takes one parameter: family")
    from nteval.errors import InputError
    from nteval.systems.external import callable_system

    assert callable_system("svc", lambda q, k: {}, "1", family="neural").params["family"] == "neural"
    with pytest.raises(InputError, match="unknown family 'transformer'"):
        callable_system("svc", lambda q, k: {}, "1", family="transformer")


SERVICE = '''
import os
from pathlib import Path

from nteval.lucene.searcher import Index


def search(queries, k):
    """BM25 (k1 1.2, b 0.75) over the index's nt documents: a team's own service, as a callable."""
    index = Index(Path(os.environ["FAMSVC_INDEX"]) / "nt")
    try:
        index.configure("bm25", k1=1.2, b=0.75)
        return {q: [(d, float(s)) for d, s in index.search(text, k)] for q, text in queries.items()}
    finally:
        index.close()


def worse(queries, k):
    """BM25 with a fifth of its topics ranked upside down: a regression, whatever it declares."""
    index = Index(Path(os.environ["FAMSVC_INDEX"]) / "nt")
    try:
        index.configure("bm25", k1=0.9, b=0.4)
        out = {}
        for i, (q, text) in enumerate(sorted(queries.items())):
            hits = [(d, float(s)) for d, s in index.search(text, k)]
            out[q] = [(d, -s) for d, s in hits] if i % 10 < 2 else hits
        return out
    finally:
        index.close()
'''


def test_a_declared_family_reaches_results_json_and_the_gate(first200_index, tmp_path, monkeypatch):
    """A callable declaring its family (docs/gate.md, "Across families"): results.json's system_configs
    hold it, and the gate reads it (gate.json: candidate_family proximity), where the same callable
    undeclared has its family read from its ranking (a lexical one: the most cautious lexical family,
    said in the caution); declared neural, the BM25 it runs is refused in one line (issue 55: it ranks
    like a lexical system)."""
    (tmp_path / "famsvc.py").write_text(SERVICE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FAMSVC_INDEX", str(first200_index))
    entry = "{name: svc, callable: 'famsvc:search', version: 1%s}"
    declared, plain = tmp_path / "declared.yaml", tmp_path / "plain.yaml"
    declared.write_text("- {name: bm25, algorithm: bm25}\n- " + entry % ", params: {family: proximity}" + "\n")
    plain.write_text("- " + entry % "" + "\n")
    r = cli("focused", "--index", first200_index, "--topics", 30, "--min-topics", 10, "--systems", declared, "--allow-code",
            "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 0, r.output
    results = json.loads((tmp_path / "f" / "results.json").read_text())
    assert results["system_configs"]["svc"] == {"algorithm": "callable", "params": {
        "target": "famsvc:search", "version": "1", "family": "proximity"}}
    pin = tmp_path / "pin"
    assert cli("pin", "--index", first200_index, "--topics", 60, "--out", pin, "--quiet").exit_code == 0
    checks = {}
    for name, yaml in (("declared", declared), ("plain", plain)):
        single = tmp_path / f"svc_{name}.yaml"
        single.write_text(textwrap.dedent(yaml.read_text().splitlines()[-1][2:]) + "\n")
        out = tmp_path / f"g_{name}"
        r = cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", "bm25",
                "--candidate", single, "--allow-code", "--out", out, "--quiet")
        assert r.exit_code in (0, 3, 4), r.output
        checks[name] = json.loads((out / "gate.json").read_text())["candidates"]["svc"].get("family") or {}
    assert checks["declared"]["candidate_family"] == "proximity", checks
    assert checks["plain"]["candidate_family"] is None and checks["plain"]["read_from_ranking"]["svc"]["class"] == \
        "lexical", checks
    assert "declare it (params: {family: …})" in checks["plain"]["caution"]
    lie = tmp_path / "svc_neural.yaml"
    lie.write_text("name: svc\ncallable: 'famsvc:search'\nversion: 1\nparams: {family: neural}\n")
    one_line_error(cli("gate", "--index", first200_index, "--pin", pin, "--task", "known-item", "--baseline", "bm25",
                       "--candidate", lie, "--allow-code", "--out", tmp_path / "g_lie", "--quiet"),
                   "system svc: declared neural", "ranks like a lexical system")
    # a declaration never buys a quieter exit: a topical regression declared query reduction stays worse (exit
    # 3), where the cross-family rule would have made it inconclusive (exit 4) for that family's allowance
    exits = {}
    for name, family in (("plain", ""), ("declared", ", params: {family: reduction}")):
        single = tmp_path / f"worse_{name}.yaml"
        single.write_text("- {name: svc, callable: 'famsvc:worse', version: 2" + family + "}\n")
        out = tmp_path / f"t_{name}"
        r = cli("gate", "--index", first200_index, "--pin", pin, "--task", "topical", "--baseline", "bm25",
                "--candidate", single, "--allow-code", "--out", out, "--quiet")
        exits[name] = r.exit_code
        g = json.loads((out / "gate.json").read_text())["candidates"]["svc"]
        assert g["decision"] == "worse", (name, r.output)
        if name == "declared":
            assert g["family"]["candidate_family"] == "reduction" and g["family"]["declared"], g["family"]
    assert exits == {"plain": 3, "declared": 3}
