"""One ranking, one verdict, on a real index: MiniLM int8 (128 word pieces) computed by nteval, the
same ranking as a run file (undeclared, and declared neural) and behind ``http`` (an engine answering
from the recorded ranking); then a team's encoder behind ``http`` that is not MiniLM (wordllama's
vectors, declared neural). Each gate's first line, exit, family, allowance and title-leak status are
printed; docs/bring-your-own.md ("Measured on PubMed") holds what it printed on the two PubMed files.

    python scripts/own_system_acceptance.py --index IDX --pin PIN --work WORK

``PIN``: made with ``nteval pin --index IDX --topics 1000 --out PIN`` when absent. Runs are cached in
``WORK/rc`` (MiniLM encodes the two PubMed files, 50,729 records, in about 75 minutes on 2 cores).
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
from engine_server import EngineServer, RecordedBackend  # noqa: E402

from nteval.formats.trec import read_run, read_topics  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--index", required=True)
ap.add_argument("--pin", required=True)
ap.add_argument("--work", required=True, type=Path)
a = ap.parse_args()
W, IDX, PIN = a.work, a.index, a.pin
W.mkdir(parents=True, exist_ok=True)
NT = str(Path(sys.executable).with_name("nteval"))


def sh(*args):
    t = time.time()
    r = subprocess.run([NT, *map(str, args)], capture_output=True, text=True)
    first = (r.stdout.splitlines() or [""])[0]
    print(f"exit {r.returncode} in {time.time() - t:.0f} s: {first[:1200]}", flush=True)
    if r.returncode not in (0, 3, 4):
        print(r.stdout[-2000:], r.stderr[-2000:])
    return r


if not Path(PIN, "pin.json").exists():
    sh("pin", "--index", IDX, "--topics", 1000, "--out", PIN, "--quiet")
(W / "mini.yaml").write_text("- {name: mini8, algorithm: dense, params: {model: minilm, backend: onnx-int8, max_tokens: 128}}\n"
                             "- {name: wl, algorithm: dense, params: {model: wordllama}}\n")
for task, proto in (("known-item", "focused"), ("topical", "highrecall")):
    print(f"=== {task}", flush=True)
    cache = W / "rc"
    sh("gate", "--index", IDX, "--pin", PIN, "--task", task, "--systems", W / "mini.yaml", "--baseline", "bm25",
       "--candidate", "mini8", "--runs-cache", cache, "--out", W / f"{task}-computed", "--quiet")
    run = next(cache.glob(f"*/{proto}/pinned/mini8.run"))
    text = run.read_text()
    (W / f"{task}-m8run.run").write_text(text.replace(" mini8\n", " m8run\n"))
    (W / f"{task}-m8neural.run").write_text(text.replace(" mini8\n", " m8neural\n"))
    topics = read_topics(Path(PIN) / proto / "topics.tsv")
    ranked = read_run(run)
    wl_run = next(cache.glob(f"*/{proto}/pinned/wl.run"), None)
    server = EngineServer(RecordedBackend({topics[q]: [[d, s] for d, s in ranked.get(q, [])] for q in topics})).start()
    (W / f"{task}-files.yaml").write_text(
        f"- {{name: m8run, run: {W / f'{task}-m8run.run'}}}\n"
        f"- {{name: m8neural, run: {W / f'{task}-m8neural.run'}, params: {{family: neural}}}}\n"
        f"- name: team_minilm\n  algorithm: http\n  params: {{url: \"{server.url}/search?q={{query}}&n={{k}}\", hits: results, "
        f"id: doc, score: relevance, family: neural}}\n")
    try:
        for name in ("m8run", "m8neural", "team_minilm"):
            sh("gate", "--index", IDX, "--pin", PIN, "--task", task, "--systems", W / f"{task}-files.yaml", "--baseline",
               "bm25", "--candidate", name, "--runs-cache", cache, "--out", W / f"{task}-{name}", "--quiet")
    finally:
        server.stop()
    for name in ("computed", "m8run", "m8neural", "team_minilm"):
        g = json.loads((W / f"{task}-{name}" / "gate.json").read_text())
        c = next(iter(g["candidates"].values()))
        leak = (g["sets"]["pinned"]["status"].get("title_leak") or {}).get(next(iter(g["candidates"])))
        print(f"  {name:<12} decision {c['decision']:<13} exit {g['exit']}  family {c.get('family', {}).get('candidate_family')}"
              f"  overstatement {c.get('family', {}).get('overstatement')}  title leak: "
              f"{'none (computed)' if leak is None else ('REFUSED' if leak['flagged'] else 'not refused')}"
              f"{' (undecided note)' if leak and leak.get('undecided') else ''}  title gain taken "
              f"{(c['pinned'].get('title_gain') or {}).get('gain', 0)}", flush=True)

print("=== a team's encoder that is not MiniLM, behind http, declared neural (topical)", flush=True)
cache = W / "rc"
sh("gate", "--index", IDX, "--pin", PIN, "--task", "topical", "--systems", W / "mini.yaml", "--baseline", "bm25",
   "--candidate", "wl", "--runs-cache", cache, "--out", W / "topical-wl", "--quiet")
wl = read_run(next(cache.glob("*/highrecall/pinned/wl.run")))
topics = read_topics(Path(PIN) / "highrecall" / "topics.tsv")
server = EngineServer(RecordedBackend({topics[q]: [[d, s] for d, s in wl.get(q, [])] for q in topics})).start()
(W / "team.yaml").write_text(f"- name: team_encoder\n  algorithm: http\n  params: {{url: \"{server.url}/search?q={{query}}&n={{k}}\", "
                             "hits: results, id: doc, score: relevance, family: neural}\n")
try:
    r = sh("gate", "--index", IDX, "--pin", PIN, "--task", "topical", "--systems", W / "team.yaml", "--baseline", "bm25",
           "--candidate", "team_encoder", "--runs-cache", cache, "--out", W / "topical-team", "--quiet")
finally:
    server.stop()
g = json.loads((W / "topical-team" / "gate.json").read_text())
fam = g["candidates"]["team_encoder"]["family"]
print("  family", fam["candidate_family"], "overstatement", fam["overstatement"], "understatement", fam["understatement"],
      "tau", fam.get("encoder_checked", {}).get("team_encoder", {}).get("tau"))
