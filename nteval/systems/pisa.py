"""PISA (Mallia et al., OSIRRC 2019; block-max indexes, compressed postings) as a system kind,
through ``pyterrier-pisa``'s wheel: ``pip install 'nteval[engines]'``.

The index is built from the documents of the index the protocol searches (``nt`` or ``all``),
exactly the texts Lucene indexed (:func:`nteval.corpus.store.index_texts`), and cached beside
the nteval index (:mod:`nteval.systems.engines`). BM25's ``k1`` and ``b`` are Lucene's
declarations (:mod:`nteval.systems.lucene_kinds`): the same names, defaults and bounds.

**How its analysis differs from nteval's Lucene**: PISA tokenizes with its own English tokenizer
and stems with Porter2 (Snowball English; Lucene: the original Porter stemmer); stop words are
Lucene's English list by default (``stops: lucene``; ``terrier`` is PISA's default, a longer
list), so only the tokenizer and the stemmer differ. Its BM25 multiplies by ``k1 + 1`` (Lucene
does not: the same order) and uses exact document lengths (Lucene: lengths rounded into one byte),
so its scores and some close rankings differ from Lucene BM25's with the same ``k1``/``b``.

**Per-setting files**: PISA searches BM25 through a copy of the postings compressed with the
scores of one ``k1``/``b`` (``bm25.k1-….b-….q0.bmw.64`` and its ``.block_simdbp``), written by the
first search at that setting. pyterrier-pisa writes them in place, so a process killed meanwhile
left a truncated file that crashed every later search (SIGSEGV). nteval prepares them itself: in
``settings/.<setting>.<pid>.partial/`` (links to the index's files), in a child process (a PISA
crash is one line, not the death of nteval), then their sizes and sha256 go to ``setting.json``
and the directory is renamed to ``settings/<setting>/``. They are checked before each use
(damaged: prepared again, and said so). Only the :data:`SETTINGS_KEPT` settings used last are
kept (``NTEVAL_PISA_SETTINGS``; the others are deleted, least recently used first), and
``pisa.log`` is moved to ``pisa.log.1`` past :data:`LOG_BYTES`.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import file_lock, write_text
from ..errors import InputError, env_int
from ..lifecycle import die_with_parent
from ..params import Param
from ..progress import shown as show
from ..progress import tqdm
from .engines import engine_index, file_digests, files_problem, package_version, require
from .kind import RunContext, SystemKind
from .lucene_kinds import K1, B

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

STEMMER = Param("stemmer", "porter2", "PISA's stemmer (index time; Lucene's Porter stemmer is not among them)",
                choices=("porter2", "krovetz", "none"))
STOPS = Param("stops", "lucene", "stop words removed from queries (lucene: nteval's Lucene list; terrier: PISA's "
                                 "default)", choices=("lucene", "terrier", "none"))
#: queries handed to PISA per call (keeps the progress bar moving)
CHUNK = 500
#: per-(k1, b) compressed copies of the index kept in a cache (``NTEVAL_PISA_SETTINGS`` overrides;
#: the least recently used are deleted first): each is about the size of the index's postings
SETTINGS_KEPT = 4
#: ``pisa.log`` is moved to ``pisa.log.1`` (replacing it) when it grows past this many bytes
LOG_BYTES = 1 << 20
#: what the child process preparing a setting's files runs (PISA's extension module alone: no
#: PyTerrier import, a fraction of a second): argv = module file, directory, encoding, stemmer, k1, b
_PREPARE = """
import importlib.util, sys
so, where, encoding, stemmer, k1, b = sys.argv[1:7]
spec = importlib.util.spec_from_file_location("_pisathon", so)
pisathon = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pisathon)
pisathon.prepare_index(pisathon.RetrievalContext(), where, encoding, "bm25", stemmer, bm25_k1=float(k1),
                       bm25_b=float(b))
"""


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """File descriptors 1 and 2 (what PISA's C++ code prints: a log line per step, progress
    counters) go to ``path`` for the block: nteval's own output stays readable."""
    sys.stdout.flush()
    sys.stderr.flush()
    _rotate(path)
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "ab") as fh:
            os.dup2(fh.fileno(), 1)
            os.dup2(fh.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


def _rotate(log: Path) -> None:
    """``log`` moved to ``log.1`` once past :data:`LOG_BYTES` (one old log kept)."""
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))


def settings_kept() -> int:
    return env_int("NTEVAL_PISA_SETTINGS", SETTINGS_KEPT, minimum=1)


def _setting_problem(directory: Path, base: Path) -> str | None:
    """What is wrong with a setting's directory: its own files against setting.json, and its links
    to each file of the index ``base``."""
    try:
        recorded = json.loads((directory / "setting.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "setting.json unreadable"
    files = recorded.get("files") if isinstance(recorded, dict) else None
    if not files:
        return "no files recorded"
    for f in base.iterdir():
        try:
            linked = os.path.samefile(directory / f.name, f)
        except OSError:
            linked = False
        if not linked:
            return f"its link to the index's {f.name} is missing or elsewhere"
    return files_problem(directory, files)


def _evict(settings: Path, keep: int) -> None:
    """Delete the settings beyond the ``keep`` used last, and the staging directories of killed
    processes (called under the cache's lock: nobody else is staging)."""
    if not settings.is_dir():
        return
    done = []
    for d in settings.iterdir():
        if d.name.startswith("."):
            shutil.rmtree(d, ignore_errors=True)
        elif d.is_dir():
            try:
                done.append(((d / "setting.json").stat().st_mtime_ns, d))
            except OSError:
                done.append((0, d))
    for _, d in sorted(done, reverse=True)[keep:]:
        shutil.rmtree(d, ignore_errors=True)


def pisa_setting(where: Path, k1: float, b: float) -> Path:
    """The directory PISA searches for BM25 at ``k1``, ``b`` in the cache ``where``: its
    compressed postings for that setting, checked, or prepared now (see the module's docstring).
    Call under the cache's lock."""
    pp = require("pyterrier_pisa", "engines", "pisa")
    settings = where / "settings"
    name = f"bm25.k1-{k1!r}.b-{b!r}"
    final = settings / name
    if final.is_dir():
        problem = _setting_problem(final, where / "pisa")
        if problem is None:
            os.utime(final / "setting.json")  # its last use (the eviction order)
            return final
        print(f"note: PISA's files for k1={k1:g}, b={b:g} in {final} are damaged ({problem}): preparing them again",
              file=sys.stderr)
        shutil.rmtree(final, ignore_errors=True)
    _evict(settings, settings_kept() - 1)
    stage = settings / f".{name}.{os.getpid()}.partial"
    stage.mkdir(parents=True)
    try:
        for f in sorted((where / "pisa").iterdir()):
            (stage / f.name).symlink_to(Path("..", "..", "pisa", f.name))
        index = pp.PisaIndex(str(stage))
        stemmer = "" if index.stemmer == pp.PisaStemmer.none else index.stemmer.value
        import subprocess

        log = where / "pisa.log"
        _rotate(log)
        with open(log, "ab") as fh:
            rc = subprocess.run([sys.executable, "-c", _PREPARE, pp._pisathon.__file__, str(stage),
                                 index.index_encoding.value, stemmer, repr(float(k1)), repr(float(b))],
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=fh, preexec_fn=die_with_parent).returncode
        made = file_digests(stage)  # (links left out: the index's own files, checked with the cache)
        if rc != 0 or len(made) < 2:
            import signal

            how = f"died of {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}" if rc else "no files"
            raise InputError(where, f"PISA failed to prepare its postings for k1={k1:g}, b={b:g} ({how}; see "
                                    f"{log.name} there), nothing was kept: if the index's files are damaged, delete "
                                    "this directory (nteval builds it again)")
        write_text(stage / "setting.json", json.dumps({"k1": k1, "b": b, "files": made}, indent=2) + "\n")
        os.replace(stage, final)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return final


def pisa_index(target: Any, stemmer: str, progress: bool | None) -> tuple[Path, dict[str, Any]]:
    """The cached PISA index of the target's documents with ``stemmer``."""
    pp = require("pyterrier_pisa", "engines", "pisa")

    def build(partial: Path, docs, n: int, shown: bool | None) -> dict[str, Any]:
        import shutil

        where = partial / "pisa"
        if where.exists():  # PISA's indexer cannot resume a cut build: start it again
            shutil.rmtree(where)
        bar = tqdm(total=n, unit=" doc", desc=f"PISA index of {target.index_name}", disable=not show(shown),
                   file=sys.stderr, leave=False, mininterval=0.5)

        def rows():
            for docid, text in docs:
                bar.update(1)
                yield {"docno": docid, "text": text}

        try:
            with output_to(partial / "pisa.log"):
                pp.PisaIndex(str(where), stemmer=stemmer, threads=1, text_field="text").index(rows())
        finally:
            bar.close()
        return {"stemmer": stemmer, "pyterrier_pisa": getattr(pp, "__version__", None)}

    return engine_index(target.index_dir, target.index_name, target.fingerprint, f"pisa-{stemmer}", build, progress)


class PisaBM25(SystemKind):
    name = "pisa"
    engine_package = "pyterrier-pisa"
    extra = "engines"
    params = (K1, B, STEMMER, STOPS)
    summary = "Okapi BM25 in PISA (block-max WAND over compressed postings; pip install 'nteval[engines]')"
    family = "bm25"
    needs_lucene = False

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        import pandas as pd

        pp = require("pyterrier_pisa", "engines", "pisa")
        where, meta = pisa_index(target, system.params["stemmer"], target.progress)
        stops = system.params["stops"]
        # (PISA's own "lucene" list is Lucene's English stop words: engines.LUCENE_STOPWORDS)
        k1, b = system.params["k1"], system.params["b"]
        # the setting's files checked (or prepared) and mapped under the cache's lock: nobody evicts them meanwhile
        with file_lock(where.parent / f".{where.name}.lock"):
            index = pp.PisaIndex(str(pisa_setting(where, k1, b)), threads=max(1, ctx.threads), stops=stops)
            with output_to(where / "pisa.log"):
                retriever = index.bm25(k1=k1, b=b, num_results=depth, threads=max(1, ctx.threads))
        out: Run = {q: [] for q in topics}
        qids = list(topics)
        for i in range(0, len(qids), CHUNK):
            chunk = qids[i:i + CHUNK]
            frame = retriever.transform(pd.DataFrame({"qid": chunk, "query": [topics[q] for q in chunk]}))
            for qid, docno, score in zip(frame["qid"], frame["docno"], frame["score"]):
                out[str(qid)].append((str(docno), float(score)))
            ctx.tick(len(chunk))
        target.notes[system.name] = {"engine": "pisa", "index": str(where), "stemmer": meta.get("stemmer"),
                                     "stops": stops, "build_seconds": meta.get("build_seconds")}
        return out

    def identity(self, system: System) -> dict[str, Any]:
        return {**super().identity(system), "pyterrier_pisa": package_version("pyterrier-pisa")}
