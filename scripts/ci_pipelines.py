"""The CI snippets of docs/gate.md ("In CI") run as GitHub Actions and GitLab CI would run them:
each job in a fresh checkout, two pipelines one after the other: a merge request's gate (the live
search BM25, the candidate BM25 k1 1.2 b 0.75: it passes), then a nightly check after the live
search got worse (the same system name, now disjunctive_1); with ``--nightly``, the topical nightly
gate on a fair pin over two nights (:func:`nightly`). What must hold: the history outlives
the jobs (GitHub: the PostgreSQL database; GitLab: its cache, restored before a job and saved after
it, even a failed one), so the second pipeline's check compares with the first pipeline's releases
and raises the alert (exit status 5); a pull request's comment is the gate.md of its own gate.

    python scripts/ci_pipelines.py WORKDIR [--doc docs/gate.md] [--nightly]

What a CI service gives and nteval does not make is emulated, no more: GitHub's ``if:``
expressions (``github.event_name``, ``always()``, ``hashFiles()``), ``${{ secrets.* }}`` and
``${{ github.* }}``, ``actions/upload-artifact`` (a copy), ``gh pr comment`` (a shim recording the
body); GitLab's ``extends``, ``rules: if``, ``before_script``, ``cache`` (a directory per key) and
``allow_failure: exit_codes``. The history's URL of the GitHub snippet (a placeholder host) is
replaced by a local PostgreSQL server's (tests/servers.py). The index (on the runner: ``$INDEX``)
is the bundled sample's; the pin is committed in the repository. Prints each job's exit status
and what was checked; exits 1 when something did not hold.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

LIVE = {"bm25": "- name: live_search\n  algorithm: bm25\n  params: {k1: 0.9, b: 0.4}\n",
        "worse": "- name: live_search\n  algorithm: disjunctive\n  params: {max_words: 1}\n"}
CANDIDATE = "- name: next_search\n  algorithm: bm25\n  params: {k1: 1.2, b: 0.75}\n"


def _blocks(doc: Path) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("### In CI"):text.index("## The history, trends and alerts")]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


def snippets(doc: Path) -> tuple[list, dict]:
    """The GitHub steps and the GitLab jobs of the "In CI" section of ``doc`` (docs/gate.md), as YAML."""
    github, gitlab = (yaml.safe_load(b) for b in _blocks(doc)[:2])
    return github, gitlab


def nightly_snippet(doc: Path) -> dict:
    """The GitLab job of the topical nightly gate on a fair pin (the section's third snippet)."""
    return yaml.safe_load(_blocks(doc)[2])


def sh(cmd: str, cwd: Path, env: dict[str, str], log: Path) -> int:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {cmd}\n")
        fh.flush()
        return subprocess.run(["bash", "-e", "-c", cmd], cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode


def checkout(work: Path, repo: Path, name: str) -> Path:
    """A fresh checkout of the repository for one job."""
    d = work / "jobs" / name
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(repo, d)
    return d


def _base_env(work: Path, index: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB", "CI_", "PG"))}
    env.update(PATH=f"{work / 'shims'}:{BIN}:{env.get('PATH', '')}", INDEX=str(index))
    return env


# -- GitHub Actions ------------------------------------------------------------------------------

def _expr(text: str, ctx: dict) -> str:
    """``${{ … }}`` in a step's text, from the context (secrets.X, github.Y)."""
    def one(m: re.Match) -> str:
        key = m.group(1).strip()
        head, _, rest = key.partition(".")
        return str(ctx.get(head, {}).get(rest, ""))
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def _if(cond: str | None, ctx: dict, failed: bool, cwd: Path) -> bool:
    """A step's ``if:`` (the subset the snippet uses); without one, success()."""
    if cond is None:
        return not failed
    expr = cond.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"hashFiles\('([^']*)'\)", lambda m: repr("x" if (cwd / m.group(1)).exists() else ""), expr)
    expr = expr.replace("always()", "True").replace("success()", repr(not failed)).replace("failure()", repr(failed))
    expr = re.sub(r"github\.(\w+)", lambda m: repr(ctx["github"].get(m.group(1), "")), expr)
    return bool(eval(expr, {"__builtins__": {}}))  # noqa: S307 (the subset above, from our own docs)


def github_pipeline(steps: list, work: Path, repo: Path, index: Path, event: str, sha: str, history: str,
                    password: str, log: Path) -> dict[str, int]:
    """One workflow run: each step in order in one fresh checkout, as a hosted runner runs a job."""
    cwd = checkout(work, repo, f"github-{event}-{sha}")
    ctx = {"github": {"event_name": event, "sha": sha, "token": "t", "event.number": "7"},
           "secrets": {"NTEVAL_PG_PASSWORD": password}}
    env = {**_base_env(work, index), "GITHUB_SHA": sha * 5, "GH_COMMENTS": str(work / "comments")}
    failed, status = False, {}
    for i, step in enumerate(steps):
        name = step.get("name") or step.get("uses") or f"step {i}"
        if not _if(step.get("if"), ctx, failed, cwd):
            continue
        if "uses" in step:  # actions/upload-artifact: a copy of the path
            path = cwd / step["with"]["path"]
            if path.exists():
                shutil.copytree(path, work / "artifacts" / f"github-{event}-{sha}", dirs_exist_ok=True)
            continue
        step_env = {**env, **{k: _expr(v, ctx) for k, v in (step.get("env") or {}).items()}}
        if "NTEVAL_HISTORY" in step_env:  # (the snippet's placeholder host: this run's server)
            step_env["NTEVAL_HISTORY"] = history
        status[name] = sh(_expr(step["run"], ctx), cwd, step_env, log)
        failed = failed or status[name] != 0
    return status


# -- GitLab CI -----------------------------------------------------------------------------------

def _job(jobs: dict, name: str) -> dict:
    job = dict(jobs[name])
    base = job.pop("extends", None)
    return {**_job(jobs, base), **job} if base else job


def _rule(rules: list | None, env: dict[str, str]) -> bool:
    if not rules:
        return True
    for r in rules:
        m = re.fullmatch(r"\s*\$(\w+)\s*==\s*\"([^\"]*)\"\s*", r["if"])
        if m and env.get(m.group(1)) == m.group(2):
            return True
    return False


def gitlab_pipeline(jobs: dict, work: Path, repo: Path, index: Path, source: str, sha: str, log: Path) -> dict[str, int]:
    """One pipeline: each visible job whose rules match, in its own fresh checkout, its cache
    restored first and saved after it (``when: always``: after a failed job too); a job's
    ``variables`` set in its environment."""
    env = {**_base_env(work, index), "CI_PIPELINE_SOURCE": source, "CI_COMMIT_SHORT_SHA": sha}
    status = {}
    for name in jobs:
        if name.startswith("."):
            continue
        job = _job(jobs, name)
        if not _rule(job.get("rules"), env):
            continue
        cwd = checkout(work, repo, f"gitlab-{source}-{sha}-{name}")
        cache = job.get("cache") or {}
        kept = work / "gitlab-cache" / str(cache.get("key", "default"))
        for p in cache.get("paths", []):
            if (kept / p).exists():
                shutil.copytree(kept / p, cwd / p, dirs_exist_ok=True)
        code = 0
        job_env = {**env, **{k: str(v) for k, v in (job.get("variables") or {}).items()}}
        for line in [*(job.get("before_script") or []), *job["script"]]:
            code = sh(line, cwd, job_env, log)
            if code:
                break
        status[name] = code
        if cache and (code == 0 or cache.get("when") == "always"):
            for p in cache.get("paths", []):
                if (cwd / p).exists():
                    shutil.rmtree(kept / p, ignore_errors=True)
                    shutil.copytree(cwd / p, kept / p)
        allowed = ((job.get("allow_failure") or {}).get("exit_codes") or []) if isinstance(job.get("allow_failure"), dict) else []
        status[name + " (allowed to fail)" if code in allowed else name] = status.pop(name)
    return status


# -- the two pipelines ---------------------------------------------------------------------------

def _repo(work: Path, index: Path) -> Path:
    repo = work / "repo"
    if not (repo / "pins" / "known-item" / "pin.json").exists():
        shutil.rmtree(repo, ignore_errors=True)
        (repo / "systems").mkdir(parents=True)
        subprocess.run([str(BIN / "nteval"), "pin", "--index", str(index), "--topics", "300", "--out",
                        str(repo / "pins" / "known-item"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
    (repo / "systems" / "candidate.yaml").write_text(CANDIDATE)
    return repo


CANDIDATE_NEURAL = ("- name: next_search\n  algorithm: dense\n  params: {model: minilm, backend: onnx-int8, "
                    "max_tokens: 128}\n")


def nightly(doc: Path, work: Path, log: Path) -> bool:
    """The topical nightly gate on a fair pin, two scheduled pipelines: night 1 builds the index from
    the baseline (the bundled sample's first 1,400 records) and encodes it; before night 2 an update
    file (the other 600) arrives in data/updates. What must hold: the cache keeps the index and its
    vectors, night 2 applies only the new file, the candidate (all-MiniLM-L6-v2) encodes only the
    update's records, and fresh topics are made and judged by the pin's references."""
    import gzip
    import json

    from nteval.demo import sample_path

    job = nightly_snippet(doc)
    repo = work / "nightly-repo"
    if not (repo / "pins" / "topical" / "pin.json").exists():
        shutil.rmtree(repo, ignore_errors=True)
        for d in ("data/baseline", "data/updates", "systems", "pins"):
            (repo / d).mkdir(parents=True)
        (repo / "data" / "updates" / ".gitkeep").write_text("")
        text = gzip.open(sample_path(), "rt", encoding="utf-8").read()
        head = text[: text.index("<PubmedArticle>")]
        arts = re.findall(r"<PubmedArticle>.*?</PubmedArticle>", text, re.S)
        for name, part in (("baseline/pubmed-a.xml.gz", arts[:1400]), ("pubmed-b.xml.gz", arts[1400:])):
            with gzip.open(repo / "data" / name if "/" in name else work / name, "wt", encoding="utf-8") as fh:
                fh.write(head + "\n".join(part) + "\n</PubmedArticleSet>\n")
        first = work / "nightly-pin-index"
        subprocess.run([str(BIN / "nteval"), "index", str(repo / "data" / "baseline"), "--out", str(first), "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([str(BIN / "nteval"), "pin", "--index", str(first), "--topics", "200", "--out",
                        str(repo / "pins" / "topical"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
    (repo / "systems" / "live.yaml").write_text(LIVE["bm25"])
    (repo / "systems" / "candidate.yaml").write_text(CANDIDATE_NEURAL)
    jobs = {"nteval-topical-nightly": job["nteval-topical-nightly"]}
    shared = os.environ.pop("NTEVAL_DENSE_CACHE", None)   # (a runner's vectors live beside its cached index)
    status = []
    try:
        for f in (repo / "data" / "updates").glob("*.xml.gz"):
            f.unlink()
        for night in (1, 2):
            if night == 2:
                shutil.copy(work / "pubmed-b.xml.gz", repo / "data" / "updates" / "pubmed-b.xml.gz")
            st = gitlab_pipeline(jobs, work, repo, work / "unused-index", "schedule", f"night{night}", log)
            print(f"gitlab, nightly topical gate, night {night}: {st}")
            status.append(next(iter(st.values())))
    finally:
        if shared is not None:
            os.environ["NTEVAL_DENSE_CACHE"] = shared
    kept = work / "gitlab-cache" / "nteval-index" / ".nteval"
    manifest = json.loads((kept / "index" / "manifest.json").read_text())
    metas = [json.loads(m.read_text()) for m in (kept / "index" / "dense").glob("nt-*/meta.json")]
    gate = json.loads((work / "jobs" / "gitlab-schedule-night2-nteval-topical-nightly" / "gate-topical" /
                       "gate.json").read_text())
    newest = max(metas, key=lambda m: m.get("reused", 0)) if metas else {}
    checks = {"both nights' gates decided (exit 0, 3 or 4)": all(c in (0, 3, 4) for c in status),
              "the cache kept the index, and night 2 applied the update file alone": len(manifest["sources"]) == 2,
              "night 2's candidate encoded only the update's records": newest.get("reused", 0) >= 1000
              and 0 < newest.get("encoded_this_time", 0) <= 600,
              "night 2 made fresh topics, judged by the pin's references": (gate["sets"].get("fresh") or {}).get(
                  "topics", 0) > 0 and "all-MiniLM-L6-v2" in (gate.get("judged_by") or "")}
    for what, held in checks.items():
        print(f"  {'ok  ' if held else 'FAIL'} {what}")
    return all(checks.values())


def _history_of(where: str, env: dict[str, str]) -> str:
    r = subprocess.run([str(BIN / "nteval"), "history", where], capture_output=True, text=True, env=env)
    return r.stdout + r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("--index", type=Path, help="an index of the bundled sample (default: made in WORKDIR/index)")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "gate.md", help="the page whose snippets run "
                    "(default: docs/gate.md; another version's, to compare)")
    ap.add_argument("--nightly", action="store_true", help="also the topical nightly gate on a fair pin (two nights: "
                    "needs the neural extra)")
    a = ap.parse_args()
    work = a.work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    for d in ("jobs", "gitlab-cache", "comments", "artifacts"):
        shutil.rmtree(work / d, ignore_errors=True)
    (work / "comments").mkdir()
    shims = work / "shims"
    shims.mkdir(exist_ok=True)
    (shims / "gh").write_text('#!/bin/bash\n# gh pr comment N --body-file F: the body is kept\ncp "$5" "$GH_COMMENTS/pr-$3.md"\n')
    (shims / "gh").chmod(0o755)
    index = a.index.absolute() if a.index else work / "index"
    if not (index / "manifest.json").exists():
        from nteval.demo import sample_path

        subprocess.run([str(BIN / "nteval"), "index", str(sample_path()), "--out", str(index), "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
    repo = _repo(work, index)
    log = work / "jobs.log"
    log.write_text("")
    github, gitlab = snippets(a.doc)
    sys.path.insert(0, str(ROOT / "tests"))
    import servers

    bindir, why = servers.postgres_binaries()
    if bindir is None:
        print(f"no PostgreSQL here ({why}): the GitHub snippet is not run")
    server = servers.start_postgres(bindir) if bindir is not None else None
    ok = True
    try:
        for ci in ("github", "gitlab"):
            if ci == "github" and server is None:
                continue
            results = []
            for live, event, sha in (("bm25", "pull_request", "a1b2c3d4"), ("worse", "schedule", "e5f6a7b8")):
                (repo / "systems" / "live.yaml").write_text(LIVE[live])
                if ci == "github":
                    st = github_pipeline(github, work, repo, index, event, sha, server.url(), servers.PASSWORD, log)
                else:
                    source = "merge_request_event" if event == "pull_request" else "schedule"
                    st = gitlab_pipeline(gitlab, work, repo, index, source, sha, log)
                print(f"{ci}, pipeline {len(results) + 1} ({event}, live search: {live}): {st}")
                results.append(st)
            first, second = (list(r.values()) for r in results)
            env = {**_base_env(work, index), "PGPASSWORD": servers.PASSWORD}
            where = server.url() if ci == "github" else str(work / "gitlab-cache" / "nteval-history" / ".nteval" /
                                                            "releases.sqlite")
            hist = _history_of(where, env)
            checks = {"the gate passed (pipeline 1)": first[0] == 0,
                      "the check raised the alert (pipeline 2, exit status 5)": second[0] == 5,
                      "the history holds both pipelines' records": "next_search" in hist and hist.count("live_search") >= 2,
                      "the history's newest release alerts": "ALERT: release live_search" in hist}
            if ci == "github":
                comment = work / "comments" / "pr-7.md"
                gate_md = work / "artifacts" / "github-pull_request-a1b2c3d4" / "gate.md"
                checks["the pull request's comment is its own gate.md"] = (comment.is_file() and gate_md.is_file()
                                                                          and comment.read_text() == gate_md.read_text())
            for what, held in checks.items():
                print(f"  {'ok  ' if held else 'FAIL'} {what}")
                ok = ok and held
            print("  " + "\n  ".join(hist.strip().splitlines()[:6]))
    finally:
        if server is not None:
            server.stop()
    if a.nightly:
        ok = nightly(a.doc, work, log) and ok
    print(f"jobs' output: {log}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
