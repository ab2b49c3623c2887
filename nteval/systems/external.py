"""Systems nteval does not compute, made first-class: external TREC runs, Python callables and
external programs.

- **External run**: a TREC run file made by any system over topics nteval wrote (``nteval export``
  gives the collection, topics and qrels). ``{name, run: PATH}`` in a systems YAML, or every file
  of ``--runs DIR`` (named by its run tag). For ``nteval correlate``, which has several topic sets,
  ``runs: {focused: P1, highrecall: P2, human: P3}`` or ``--runs DIR`` with one subdirectory per
  topic set (``DIR/focused/``, ``DIR/human/``, …).
- **Callable**: ``search(queries: dict[qid, text], k) -> {qid: [(docid, score), ...]}`` (or
  ``{qid: {docid: score}}``): a PyTerrier transformer wrapped in three lines, an HTTP client, a
  pure-Python model. From Python: :func:`callable_system`; from YAML: ``{name, callable:
  "module:function", version}``.
- **Command**: an external program, run once per topic set: ``{name, command: "prog --topics
  {topics} --out {run} --hits {k}", version}``. nteval writes ``{topics}`` (``qid<TAB>text``),
  the program writes a TREC run to ``{run}``.

Every result is validated against the topics before it is scored: topics the system did not
answer are counted and score 0 (trec_eval ``-c``); a topic that is not one of the experiment's is
an error (a run made for other topics); documents that are not in the collection are reported,
and refused when more than :data:`MAX_FOREIGN_SHARE` of the hits are (a run over another corpus).
Callables and commands are cached like any run, under their ``version``: change it when the
system changes.
"""
from __future__ import annotations

import hashlib
import math
import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..corpus.store import known_docids
from ..errors import InputError, short
from ..formats.trec import Run, canonical, read_run_top, run_rows, write_topics
from ..lifecycle import die_with_parent_gently
from ..topics.ids import describe
from .kind import FAMILY, RunContext, SystemKind
from .system import System, check_family, check_name, name_problem

#: Above this share of hits outside the collection a run is refused: it searched another corpus.
MAX_FOREIGN_SHARE = 0.05
#: Files of a ``--runs`` directory that are not runs.
_NOT_RUNS = (".json", ".md", ".txt.meta", ".yaml", ".yml")


def external_entry(name: str, entry: Mapping[str, Any], where: Path, place: str) -> System:
    """A systems-YAML entry naming a run file, a callable or a command (paths relative to the YAML),
    with its declared family (``params: {family: …}``) when it gives one."""
    declared = _declared_family(name, entry.get("params"), where, place)
    s = _external_entry(name, entry, where, place)
    return System(s.name, s.algorithm, {**s.params, **declared}, fn=s.fn) if declared else s


def _declared_family(name: str, params: Any, where: Path, place: str) -> dict[str, str]:
    """``{"family": F}`` from an external entry's ``params`` (``{}`` when it gives none): the one
    parameter such a system has."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InputError(where, f"system {short(name)}: params must be a mapping", place=f"{place}.params")
    extra = [str(k) for k in params if k != FAMILY]
    if extra:
        raise InputError(where, f"system {short(name)}: unknown parameter {short(extra[0])} (a system nteval does not "
                                f"compute takes one parameter: {FAMILY})", place=f"{place}.params.{extra[0][:40]}")
    return {FAMILY: check_family(params[FAMILY], f"system {short(name)}", where, f"{place}.params.{FAMILY}")} \
        if FAMILY in params else {}


def _external_entry(name: str, entry: Mapping[str, Any], where: Path, place: str) -> System:
    base = Path(where).parent
    kinds = [k for k in ("run", "runs", "callable", "command", "pyterrier") if k in entry]
    if len(kinds) > 1:
        raise InputError(where, f"system {short(name)}: give one of run, runs, callable, command, pyterrier (got "
                                f"{', '.join(kinds)})", place=place)
    kind = kinds[0]
    if kind in ("run", "runs"):
        if "version" in entry:
            raise InputError(where, f"system {short(name)}: a run file needs no version (its content is its identity)",
                             place=f"{place}.version")
        if kind == "run":
            return external_system(name, {"run": _path(entry["run"], base, name, where, f"{place}.run")})
        runs = entry["runs"]
        if not isinstance(runs, Mapping) or not runs:
            raise InputError(where, f"system {short(name)}: runs must map topic sets (e.g. focused, human) to run files",
                             place=f"{place}.runs")
        return external_system(name, {"runs": {str(side): _path(p, base, name, where, f"{place}.runs.{side}")
                                               for side, p in runs.items()}})
    version = entry.get("version")
    if not isinstance(version, (str, int, float)) or isinstance(version, bool) or not str(version).strip():
        raise InputError(where, f"system {short(name)}: a {kind} system needs a version (its runs are cached under it; "
                                "change it when the system changes)", place=f"{place}.version")
    if kind in ("callable", "pyterrier"):
        target = entry[kind]
        if not isinstance(target, str) or ":" not in target:
            what = "'module:function'" if kind == "callable" else "'module:factory' (a function returning the pipeline)"
            raise InputError(where, f"system {short(name)}: {kind} must be {what}, got {short(target)}",
                             place=f"{place}.{kind}")
        return System(name, kind, {"target": target, "version": str(version)})
    command = entry["command"]
    try:
        argv = shlex.split(command) if isinstance(command, str) else command
    except ValueError as err:  # (an unbalanced quote)
        raise InputError(where, f"system {short(name)}: command {short(command)} cannot be split into arguments: {err}",
                         place=f"{place}.command") from None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise InputError(where, f"system {short(name)}: command must be a command line or a list of arguments",
                         place=f"{place}.command")
    if not any("{run}" in a for a in argv):
        raise InputError(where, f"system {short(name)}: command must write its run to {{run}} (placeholders: {{topics}}, "
                                "{run}, {k})", place=f"{place}.command")
    return System(name, "command", {"command": argv, "version": str(version)})


def _path(value: Any, base: Path, name: str, where: Path, place: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, f"system {short(name)}: a run file path is expected, got {short(value)}", place=place)
    p = Path(value).expanduser()
    p = p if p.is_absolute() else base / p
    if not p.is_file():
        raise InputError(p, f"system {short(name)}: no such run file", place=None)
    return str(p.resolve())


def external_system(name: str, params: dict[str, Any]) -> System:
    return System(name, "external", params)


def callable_system(name: str, fn: Callable[[dict[str, str], int], Any], version: str,
                    family: str | None = None) -> System:
    """A Python search function as a system: ``fn(queries, k)`` returns ``{qid: [(docid, score), ...]}``
    or ``{qid: {docid: score}}``. Its runs are cached under ``version``: change it with the function.
    ``family``: what it is (e.g. ``neural``, a key of :data:`nteval.systems.families.FAMILIES`)."""
    check_name(name, None, "name")
    if not callable(fn):
        raise InputError(None, f"system {short(name)}: {short(fn)} is not callable")
    declared = {FAMILY: check_family(family, f"system {short(name)}", None, "family")} if family is not None else {}
    # identity = name + version (the function object itself cannot be hashed across processes)
    return System(name, "callable", {"version": str(version), **declared}, fn=fn)


def command_system(name: str, command: str | list[str], version: str, family: str | None = None) -> System:
    """An external program as a system (see the module docstring for its placeholders)."""
    check_name(name, None, "name")
    entry: dict[str, Any] = {"command": command, "version": version}
    if family is not None:
        entry["params"] = {FAMILY: family}
    return external_entry(name, entry, Path("."), "command")


def runs_from_dir(directory: str | Path) -> list[System]:
    """Every run file of ``directory``, named by its run tag: one external system each. A directory
    of subdirectories (``focused/``, ``human/``…) gives one system per tag with a run per topic set.
    A run file instead of a directory: that run alone."""
    d = Path(directory)
    if d.is_file():  # one run file: that run alone
        return [external_system(n, {"run": str(p)}) for n, p in _named([d]).items()]
    if not d.is_dir():
        raise InputError(d, "--runs: no such directory or run file")
    subdirs = sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
    files = _run_files(d)
    if subdirs and files:
        raise InputError(d, "--runs: either run files, or one subdirectory of runs per topic set (focused/, human/…), "
                            "not both")
    if not subdirs:
        named = _named(files)
        return [external_system(n, {"run": str(p)}) for n, p in named.items()]
    per_side: dict[str, dict[str, str]] = {}
    for sub in subdirs:
        for n, p in _named(_run_files(sub)).items():
            per_side.setdefault(n, {})[sub.name] = str(p)
    if not per_side:
        raise InputError(d, "--runs: no run files in its subdirectories")
    return [external_system(n, {"runs": runs}) for n, runs in sorted(per_side.items())]


def _run_files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith(".") and not p.name.endswith(_NOT_RUNS))


def _named(files: list[Path]) -> dict[str, Path]:
    named: dict[str, Path] = {}
    for p in files:
        name = _tag(p)
        problem = name_problem(name)
        if problem:
            raise InputError(p, f"run tag {short(name)} cannot name a system ({problem}): name it in a systems YAML "
                                "instead ({name, run: PATH})")
        if name in named:
            raise InputError(p, f"run tag {short(name)} is also the tag of {named[name]}: two runs cannot share a name "
                                "(name them in a systems YAML: {name, run: PATH})")
        named[name] = p
    return named


def _tag(path: Path) -> str:
    """The run tag (6th column of the first line; of a .gz file, of its first decompressed line), or
    the file's stem (without .gz) for an empty file."""
    import gzip
    import zlib

    stem = Path(path.name[:-3]).stem if path.name.endswith(".gz") else path.stem
    try:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as fh:
            for raw in fh:
                cols = raw.split()
                if cols:
                    return cols[5].decode("utf-8", "replace") if len(cols) >= 6 else stem
    except OSError as err:
        raise InputError(path, f"cannot read run file: {err.strerror or err}") from None
    except (EOFError, zlib.error) as err:
        raise InputError(path, f"truncated or corrupt gzip stream: {err}") from None
    return stem


_DIGESTS: dict[tuple[str, int, int], str] = {}


def run_files_digest(system: System) -> dict[str, str]:
    """sha256 of each run file of an external system (its identity: a changed file is a new run)."""
    files = system.params.get("runs") or {"*": system.params["run"]}
    out = {}
    for side, p in sorted(files.items()):
        st = os.stat(p)
        key = (str(p), st.st_mtime_ns, st.st_size)
        if key not in _DIGESTS:
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            _DIGESTS[key] = h.hexdigest()
        out[side] = _DIGESTS[key]
    return out


# -- producing and validating the rankings ---------------------------------------------------------

def external_rankings(system: System, label: str, topics: dict[str, str], k: int) -> Any:
    """What the system returns for ``topics`` (unvalidated): a parsed run file, or the callable's or
    command's output. ``label`` names the topic set (a protocol, or ``human``)."""
    p = system.params
    if isinstance(system.kind, ExternalRun):
        if "runs" in p:
            if label not in p["runs"]:
                raise InputError(None, f"system {short(system.name)}: no run for the {label} topics (give runs: "
                                       f"{{{label}: PATH}}, or --runs DIR/{label}/)")
            return read_run_top(Path(p["runs"][label]), int(k))
        return read_run_top(Path(p["run"]), int(k))
    if isinstance(system.kind, CallableKind):
        fn = system.fn or _import(system)
        return _call_user(system, fn, dict(topics), int(k))
    return _run_command(system, topics, k)


class _UserExit(Exception):
    """``os._exit`` called by a system's own code (turned into this while the code runs)."""


def _call_user(system: System, fn: Callable, *args: Any) -> Any:
    """Call a system's own Python code so that nothing it does ends nteval: an exception, or an exit
    (``sys.exit``, ``raise SystemExit``, ``os._exit`` — the last caught by standing in for
    ``os._exit`` while the call lasts), is one line naming the system; a change of working
    directory is undone. Ctrl-C still interrupts."""
    real_exit = os._exit
    cwd = os.getcwd()  # a search that changes directory would move nteval's relative paths

    def no_exit(status: int = 0) -> None:
        raise _UserExit(status)

    os._exit = no_exit  # type: ignore[assignment]
    try:
        return fn(*args)
    except InputError:
        raise
    except KeyboardInterrupt:
        raise
    except (SystemExit, _UserExit) as err:
        how = "os._exit" if isinstance(err, _UserExit) else "sys.exit"
        raise InputError(None, f"system {short(system.name)}: its search called {how}({short(err.args[0] if err.args else None)}) "
                               "instead of returning rankings") from None
    except Exception as err:  # noqa: BLE001  (the user's code: any failure is one line naming it)
        raise InputError(None, f"system {short(system.name)}: its search raised {type(err).__name__}: "
                               f"{_cut(str(err))}") from None
    finally:
        os._exit = real_exit
        if os.getcwd() != cwd:
            os.chdir(cwd)


def _cut(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _import(system: System) -> Callable:
    import importlib

    module, _, attr = system.params["target"].partition(":")
    cwd = os.getcwd()
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (Exception, SystemExit) as err:  # noqa: BLE001  (its import code may even call sys.exit)
        raise InputError(None, f"system {short(system.name)}: cannot import {short(system.params['target'])}: "
                               f"{type(err).__name__}: {short(str(err), 120)}") from None
    finally:
        if os.getcwd() != cwd:  # (as a search may, its module's import code changed directory)
            os.chdir(cwd)
    if not callable(obj):
        raise InputError(None, f"system {short(system.name)}: {short(system.params['target'])} is not callable")
    return obj


def _run_command(system: System, topics: dict[str, str], k: int) -> Run:
    """Run a program system over ``topics``: through :func:`nteval.lifecycle.run_group`, so that it
    runs in a process group of its own (whatever it leaves running is killed when it exits, or when
    nteval dies or is interrupted; its temporary directory goes with it) and only the tail of its
    stderr is kept. Its run file is read as it is streamed, cut to ``k`` (:func:`read_run_top`)."""
    import subprocess
    import sys
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="nteval-command-"))
    try:
        tpath, rpath, epath = tmp / "topics.tsv", tmp / "run.txt", tmp / "stderr.tail"
        write_topics(tpath, topics)
        argv = [a.replace("{topics}", str(tpath)).replace("{run}", str(rpath)).replace("{k}", str(int(k)))
                for a in system.params["command"]]
        group = subprocess.Popen([sys.executable, "-m", "nteval.lifecycle", str(tmp), str(epath), "--", *argv],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent_gently, start_new_session=True)
        # (its own session: a kill -9 of nteval's whole process group does not take the supervisor with it, which
        # then hears of nteval's death through the kernel and stops the program's group and removes tmp)
        try:
            status = group.wait()
        except BaseException:  # Ctrl-C, SIGTERM: the program and all it started stop too
            group.terminate()
            group.wait()
            raise
        err = epath.read_bytes().decode("utf-8", "replace") if epath.is_file() else ""
        if status == 127 and err.startswith("cannot start "):
            raise InputError(None, f"system {short(system.name)}: {_printable(err)}")
        if status != 0:
            last = (err.strip().splitlines() or [""])[-1]
            raise InputError(None, f"system {short(system.name)}: its command exited with status {status}"
                                   + (f": {_cut(_printable(last))}" if last else ""))
        if not rpath.is_file():
            raise InputError(None, f"system {short(system.name)}: its command wrote no run to {{run}} (it is run "
                                   "directly, not by a shell: write to the file named {run}, not with '>')")
        try:
            return read_run_top(rpath, int(k))
        except InputError as err:
            raise InputError(None, f"system {short(system.name)}: its run is not a TREC run ({err.message})") from None
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def _printable(text: str) -> str:
    """``text`` without control characters (a program's stderr could set the terminal's title or
    clear the screen through nteval's error line)."""
    import re

    text = re.sub(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?", "", text)       # OSC sequences (title…)
    text = re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", text)                   # CSI sequences (colours…)
    return "".join(c if c.isprintable() or c == " " else " " for c in text)


#: A run file's foreign topic ids are counted up to this many (a file of millions is not kept).
_FOREIGN_CAP = 100_000


def check_topics(name: str, answered: Any, topics: Mapping[str, str], label: str | None = None,
                 capped: bool = False) -> None:
    """One line when a run answers topics this experiment does not have: a run made for another
    topic set (another protocol: its ids differ, see :mod:`nteval.topics.ids`; another seed or
    index: another sample). ``capped``: ``answered`` holds only the first foreign ids found."""
    unknown = sorted(set(answered) - set(topics))
    if unknown:
        more = "at least " if capped else ""
        raise InputError(None, f"system {name}: {more}{len(unknown):,} of its {more}{len(set(answered)):,} topics are not this "
                               f"experiment's: it answers {describe(unknown)}, this {label or ''} experiment has "
                               f"{describe(topics)} — a run made for another topic set (another protocol, seed or "
                               "index)? `nteval export --from OUT` (a run's, or a pin's PIN/focused or PIN/highrecall) writes this experiment's topics".replace("  ", " "))


def precheck_runs(systems: list[System], topics: Mapping[str, str], label: str) -> None:
    """Before any system runs: every external run file answers these topics (its topic ids, read
    without the rest of the file), so a run of another topic set fails before the zoo's work."""
    for s in systems:
        if not isinstance(s.kind, ExternalRun):
            continue
        files = s.params.get("runs") or {label: s.params["run"]}
        if label not in files:
            continue
        qids: set[str] = set()
        foreign = 0
        for _n, q, *_rest in run_rows(Path(files[label])):  # (not a run file: the reader's one line, now)
            if q not in qids:
                foreign += q not in topics
                if foreign > _FOREIGN_CAP:
                    break
                qids.add(q)
        check_topics(short(s.name), qids, topics, label, capped=foreign > _FOREIGN_CAP)


def validate(system: System, raw: Any, topics: dict[str, str], depth: int, collection: Path, index: str = "all",
             label: str | None = None) -> tuple[Run, dict[str, Any]]:
    """Check a system's rankings against the experiment's topics and the documents of ``collection``
    (a record of the collection that the searched Lucene index ``index`` lacks, one without an
    abstract, is kept: the title-leak guard judges it, :mod:`nteval.leak`); returns the run in
    trec_eval order cut at ``depth``, and what was found (for the report)."""
    files = system.params.get("runs") or ({None: system.params["run"]} if system.params.get("run") else {})
    where = files.get(label, files.get(None)) if files else None
    name = short(system.name) + (f" ({short(str(where))})" if where else "")   # (a run file: said by its path too)
    if not isinstance(raw, Mapping):
        raise InputError(None, f"system {name}: its search must return {{qid: [(docid, score), ...]}}, got "
                               f"{type(raw).__name__}")
    import heapq
    import struct

    check_topics(name, [str(q) for q in raw], topics, label)  # (before reading a single ranking)
    f32 = struct.Struct("f")
    run: Run = {}
    for qid, ranking in raw.items():
        q = str(qid)
        pairs: Iterable[Any]
        if isinstance(ranking, Mapping):
            pairs = ranking.items()
        elif isinstance(ranking, (list, tuple)):
            pairs = ranking
        else:
            raise InputError(None, f"system {name}: topic {short(q)}: a ranking must be a list of (docid, score) or a "
                                   f"{{docid: score}} mapping, got {type(ranking).__name__}")
        seen: set[str] = set()
        best: list[tuple[float, str, float]] = []  # the depth best, in trec_eval's order (a heap: memory ∝ depth)
        for item in pairs:
            if not (isinstance(item, (list, tuple)) and len(item) == 2):
                raise InputError(None, f"system {name}: topic {short(q)}: expected (docid, score) pairs, got {short(item)}")
            docid, score = item
            if not isinstance(docid, (str, int)) or isinstance(docid, bool) or not str(docid).strip():
                raise InputError(None, f"system {name}: topic {short(q)}: a docid must be a string, got {short(docid)}")
            if any(c.isspace() for c in str(docid)):  # a TREC run file could not hold it as it is
                raise InputError(None, f"system {name}: topic {short(q)}: docid {short(docid)} contains whitespace")
            try:
                s = float(score)
            except (TypeError, ValueError):
                raise InputError(None, f"system {name}: topic {short(q)}: score {short(score)} is not a number") from None
            if not math.isfinite(s):
                raise InputError(None, f"system {name}: topic {short(q)}: score {short(score)} is not finite")
            d = str(docid)
            if d in seen:
                raise InputError(None, f"system {name}: topic {short(q)} ranks document {short(d)} twice")
            seen.add(d)
            s6 = float(f"{s:.6f}")  # (as the run file will hold it: canonical below orders the same)
            try:
                key = f32.unpack(f32.pack(s6))[0]
            except OverflowError:
                key = math.copysign(math.inf, s6)
            item6 = (key, d, s)
            if len(best) < depth:
                heapq.heappush(best, item6)
            elif item6 > best[0]:
                heapq.heapreplace(best, item6)
        run[q] = [(d, s) for _k, d, s in best]
    retrieved = {d for ranking in run.values() for d, _ in ranking}
    # (a record of the collection that the searched index lacks, one without an abstract, is no other corpus's:
    # kept, said, and the title-leak guard's to judge: nteval.leak)
    alien = retrieved - known_docids(collection, retrieved, "all")
    hits = sum(len(r) for r in run.values())
    alien_hits = sum(1 for r in run.values() for d, _ in r if d in alien)
    if hits and alien_hits / hits > MAX_FOREIGN_SHARE:
        raise InputError(None, f"system {name}: {alien_hits:,} of its {hits:,} hits ({alien_hits / hits * 100:.0f} %) are "
                               f"documents not in this collection (e.g. {short(sorted(alien)[0])}): did it search "
                               "another corpus? (`nteval export` writes this one)")
    foreign = retrieved - known_docids(collection, retrieved, index)
    foreign_hits = sum(1 for r in run.values() for d, _ in r if d in foreign)
    missing = sum(1 for q in topics if not run.get(q))

    out = {q: canonical(run.get(q, []), depth) for q in topics}
    notes: dict[str, Any] = {"topics_without_results": missing, "foreign_documents": len(foreign), "foreign_hits": foreign_hits,
             "hits": hits, "not_in_collection_hits": alien_hits}
    if foreign:
        notes["foreign_example"] = sorted(foreign)[0]
    return out, notes


class _Outside(SystemKind):
    """Runs nteval does not compute: validated against the topics before they are scored."""

    family = None
    needs_lucene = False
    computed = False

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        run, notes = validate(system, external_rankings(system, target.label, topics, depth), topics, depth,
                              target.index_dir, target.index_name, target.label)
        target.notes[system.name] = notes
        ctx.tick(len(topics))
        return run

    def describe(self, system: System) -> str:
        what = (system.params.get("target") or system.params.get("command")
                or getattr(system.fn, "__qualname__", type(system.fn).__name__))
        return f"{system.algorithm} {short(what, 40)} (version {system.params.get('version')})"


class ExternalRun(_Outside):
    name = "external"
    yaml_keys = ("run", "runs")
    fixed_topics = True
    summary = "a TREC run file made outside nteval (runs: one per topic set for correlate)"

    def identity(self, system: System) -> dict[str, Any]:
        return {"algorithm": "external", "content": run_files_digest(system)}

    def describe(self, system: System) -> str:
        files = system.params.get("runs") or {"": system.params.get("run")}
        return "external run " + ", ".join(Path(str(p)).name for p in files.values())


class CallableKind(_Outside):
    name = "callable"
    yaml_keys = ("callable",)
    runs_code = True
    summary = "a Python search(queries, k) -> {qid: [(docid, score)]}, cached under its version"


class CommandKind(_Outside):
    name = "command"
    yaml_keys = ("command",)
    runs_code = True
    summary = "an external program writing a TREC run, run once per topic set, cached under its version"
