"""The manual as a site (mkdocs.yml, docs/): it builds in strict mode, every page is reachable, and
the command examples marked ``<!-- runs-on-sample -->`` run on the bundled sample as written.

A marked example is a fenced ``bash``/``console``/``sh`` block whose fence line comes right after
the line ``<!-- runs-on-sample -->`` (in docs/*.md or README.md). Its lines that start with
``nteval `` (after an optional ``$ `` prompt; ``\\`` continues a line; ``#`` starts a comment)
are run in order, each in the block's own directory, where ``nteval-demo/`` holds what
``make demo`` leaves (the sample's index in ``nteval-demo/index``, the SciFact slice's in
``nteval-demo/scifact-index``) and ``nteval/`` is the package (so ``nteval/data/...`` resolves). A command expected to end with
another exit status than 0 says so in its comment (``nteval gate ...   # exit 3: a regression``),
and must end with exactly that one.
The example protocol module of docs/contributing.md is run too, registered as a plug-in. A fenced
``python`` block after the same mark is run as a whole with this Python, in such a directory.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import HANG

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARK = "<!-- runs-on-sample -->"
FENCE = re.compile(r"^```\s*(bash|console|sh|shell)\s*$")
PYFENCE = re.compile(r"^```\s*python\s*$")
#: the subcommands the marked examples must cover between them
COVERED = {"compare", "highrecall", "focused", "index", "grid", "export", "protocols", "systems", "evaluate",
           "manifest", "correlate", "pin", "gate", "history"}
#: ``# exit N`` in a command's comment: the exit status the example expects
EXPECTED_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")


def _env() -> dict[str, str]:
    """The examples' environment, read when they run: the session's shared encodings
    (``NTEVAL_DENSE_CACHE``, set by a conftest fixture after this module is imported) reach them; the
    environment's scripts come first on ``PATH``, as in a user's activated environment (a python example
    that calls ``nteval`` finds this one, not none: CI calls the venv's pytest without activating it)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "NO_MKDOCS_2_WARNING": "1", "PYTHONUNBUFFERED": "1"}


@dataclass
class Example:
    file: str
    line: int            # 1-based line of the opening fence
    commands: list[str]  # each one nteval command line, continuations joined

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def _marked_blocks(path: Path, fence: re.Pattern = FENCE) -> list[tuple[int, list[str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if fence.match(lines[i].strip()) and i > 0 and lines[i - 1].strip() == MARK:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((start, body))
        i += 1
    return blocks


def _commands(body: list[str]) -> list[str]:
    joined, current = [], ""
    for raw in body:
        line = raw.strip()
        if current:
            line = current + " " + line
            current = ""
        if line.endswith("\\"):
            current = line[:-1].rstrip()
            continue
        joined.append(line)
    if current:
        joined.append(current)
    out = []
    for line in joined:
        if line.startswith("$ "):
            line = line[2:].lstrip()
        if line.startswith("nteval "):
            out.append(line)
    return out


def collect_examples() -> list[Example]:
    files = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
    return [Example(p.relative_to(ROOT).as_posix(), start, _commands(body))
            for p in files for start, body in _marked_blocks(p)]


def collect_python_examples() -> list[tuple[str, str]]:
    """(file:line, code) of every marked ``python`` block."""
    files = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
    return [(f"{p.relative_to(ROOT).as_posix()}:{start}", "\n".join(body))
            for p in files for start, body in _marked_blocks(p, PYFENCE)]


class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml may hold ``!!python/name:`` or ``!ENV`` tags: read them as None."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_AnyTagLoader)


def _nav_pages(nav) -> set[str]:
    pages: set[str] = set()
    if isinstance(nav, str):
        pages.add(nav)
    elif isinstance(nav, list):
        for item in nav:
            pages |= _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            pages |= _nav_pages(value)
    return pages


def test_every_page_in_nav():
    cfg = _config()
    assert cfg["docs_dir"] == "docs"
    in_nav = _nav_pages(cfg["nav"])
    not_in_nav = {line.strip().lstrip("/") for line in (cfg.get("not_in_nav") or "").splitlines() if line.strip()}
    pages = {p.name for p in DOCS.glob("*.md")}
    missing = sorted(pages - in_nav - not_in_nav)
    assert not missing, f"docs/ pages neither in the nav of mkdocs.yml nor in its not_in_nav: {missing}"
    unknown = sorted((in_nav | not_in_nav) - pages)
    assert not unknown, f"mkdocs.yml names pages that docs/ lacks: {unknown}"


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, env=_env(), timeout=HANG)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (site / "index.html").is_file()
    assert (site / "changelog" / "index.html").is_file()
    assert "Unreleased" in (site / "changelog" / "index.html").read_text(encoding="utf-8"), "CHANGELOG.md not included"


def test_marked_examples_are_commands():
    """Cheap: every marked block holds nteval commands that parse, and they cover the main commands."""
    examples = collect_examples()
    assert examples, f"no block marked {MARK}"
    for ex in examples:
        assert ex.commands, f"{ex.id}: marked {MARK} but holds no line starting with 'nteval '"
        for cmd in ex.commands:
            shlex.split(cmd, comments=True)
    assert "README.md" in {ex.file for ex in examples}
    covered = {shlex.split(c, comments=True)[1] for ex in examples for c in ex.commands}
    assert COVERED <= covered, f"no marked example of: {', '.join(sorted(COVERED - covered))}"


def _nteval() -> str:
    exe = Path(sys.executable).with_name("nteval")
    return str(exe) if exe.exists() else "nteval"


def _run(argv: list[str], cwd: Path, what: str, expected: int = 0) -> None:
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(),
                          timeout=HANG, stdin=subprocess.DEVNULL)
    if proc.returncode != expected:
        tail = "\n".join(proc.stdout.splitlines()[-20:])
        pytest.fail(f"{what}\n$ {shlex.join(argv)}\nexit status {proc.returncode} (expected {expected}); last 20 "
                    f"lines:\n{tail}", pytrace=False)


@pytest.fixture(scope="module")
def sample_demo(tmp_path_factory) -> Path:
    """What `make demo` leaves for the examples: the bundled sample's and SciFact slice's indexes."""
    demo = tmp_path_factory.mktemp("docs-examples") / "nteval-demo"
    data = ROOT / "nteval" / "data"
    _run([_nteval(), "index", str(data / "pubmed21n1298_first2000.xml.gz"), "--out", str(demo / "index"), "--quiet"],
         ROOT, "building the sample index")
    _run([_nteval(), "index", str(data / "scifact_slice" / "corpus.jsonl.gz"), "--out", str(demo / "scifact-index"),
          "--quiet"], ROOT, "building the SciFact slice index")
    return demo


@pytest.mark.slow
@pytest.mark.parametrize("example", collect_examples(), ids=lambda ex: ex.id)
def test_command_examples_run(example: Example, sample_demo: Path, tmp_path: Path):
    (tmp_path / "nteval").symlink_to(ROOT / "nteval", target_is_directory=True)
    (tmp_path / "nteval-demo").symlink_to(sample_demo, target_is_directory=True)
    for cmd in example.commands:
        argv = shlex.split(cmd, comments=True)
        status = EXPECTED_EXIT.search(cmd)
        _run([_nteval(), *argv[1:]], tmp_path, f"example {example.id} failed", int(status.group(1)) if status else 0)


@pytest.mark.slow
@pytest.mark.parametrize("where, code", collect_python_examples(), ids=lambda x: x if ":" in str(x) else "code")
def test_python_examples_run(where: str, code: str, sample_demo: Path, tmp_path: Path):
    (tmp_path / "nteval").symlink_to(ROOT / "nteval", target_is_directory=True)
    (tmp_path / "nteval-demo").symlink_to(sample_demo, target_is_directory=True)
    _run([sys.executable, "-c", code], tmp_path, f"python example {where} failed")


def test_python_examples_are_marked():
    assert {w.split(":")[0] for w, _ in collect_python_examples()} >= {"README.md", "docs/any-system.md"}


@pytest.mark.slow
def test_contributing_protocol_example_runs(sample_demo: Path, tmp_path: Path):
    """The example module of docs/contributing.md ("Add a protocol"), registered the way another
    package would (an entry point in the group nteval.protocols), lists and runs on the sample."""
    text = (DOCS / "contributing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    module = next(b for b in blocks if "class ShortTitle(Protocol)" in b)
    (tmp_path / "nteval_shorttitle.py").write_text(module, encoding="utf-8")
    dist = tmp_path / "nteval_shorttitle-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nteval-shorttitle\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nteval.protocols]\nshorttitle = nteval_shorttitle\n")
    env = {**_env(), "PYTHONPATH": str(tmp_path)}
    for args in (["protocols", "shorttitle"],
                 ["run", "--protocol", "shorttitle", "--param", "words=3", "--param", "n_topics=60", "--min-topics", "10",
                  "--systems", "default", "--index", str(sample_demo / "index"), "--out", str(tmp_path / "st")]):
        proc = subprocess.run([_nteval(), *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env, timeout=HANG, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"$ nteval {shlex.join(args)}\n" + "\n".join(proc.stdout.splitlines()[-20:])
    assert "-t3\t" in (tmp_path / "st" / "topics.tsv").read_text(encoding="utf-8")
