"""``nteval export``: an NT protocol run's collection (the corpus its systems searched, its topics
and qrels) in BEIR or TREC/Anserini layout, so any outside system can run it unchanged.

The corpus is the index the protocol searches (:attr:`nteval.protocols.base.Protocol.searches`):
``nt`` (abstracts, titles stripped) or ``all`` (title + newline + abstract), with exactly the
contents :mod:`nteval.index` gave Lucene. Documents stream from the document store in its stream
order (``seq``), so the export takes constant memory and the same OUT gives byte-identical files.
The directory is built beside ``--out`` and renamed into place (:func:`nteval.atomic.atomic_dir`);
``export.json`` in it is the marker ``--force`` checks before replacing anything.
"""
from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from . import protocols
from ._version import __version__
from .atomic import atomic_dir, read_lock
from .corpus.store import FILENAME as STORE_FILENAME
from .corpus.store import DocStore, index_contents
from .errors import InputError, read_json_file
from .formats.trec import Qrels, read_qrels, read_topics
from .index import read_manifest
from .progress import shown, tqdm
from .topics.ids import topic_set_id

FORMATS = ("beir", "trec")
MARKER = "export.json"
RESULTS = "results.json"
#: what export.json says it is (the marker ``--force`` looks for)
KIND = "nteval export"

#: files of each layout: (corpus, queries, qrels)
LAYOUT = {
    "beir": ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"),
    "trec": ("corpus/docs.jsonl", "topics.tsv", "qrels.txt"),
}


def is_export_dir(path: Path) -> bool:
    """A directory ``nteval export`` wrote (what ``--force`` may replace): its export.json says so."""
    path = Path(path)
    if not path.is_dir() or path.is_symlink() or not (path / MARKER).is_file():
        return False
    try:
        info = json.loads((path / MARKER).read_text(encoding="utf-8"))
        return info.get("kind") == KIND and not foreign_files(path, info)
    except (ValueError, AttributeError, OSError):
        return False


def foreign_files(path: Path, info: dict[str, Any]) -> list[str]:
    """Files inside export ``path`` that the export did not write (a user's own run put there):
    ``--force`` must not delete them."""
    ours = {MARKER, "EXPORT.md", *(info.get("files") or {})}
    return sorted(p.relative_to(path).as_posix() for p in Path(path).rglob("*")
                  if not p.is_dir() and p.relative_to(path).as_posix() not in ours)


#: a pin (nteval pin): pin.json, and each protocol's topics and qrels in PIN/PROTOCOL/
PIN, PIN_QRELS = "pin.json", {"focused": "qrels.txt", "highrecall": "qrels.txt.gz"}


def read_pin_output(from_dir: Path) -> dict[str, Any] | None:
    """A pin's protocol directory (``PIN/focused``, ``PIN/highrecall``) as an export reads a run's
    OUT: what its pin.json records (None: not a pin's). Its topics and qrels are checked against the
    topic set pin.json names, as a run's are against results.json's."""
    if (from_dir / PIN).is_file():
        subs = [p for p in PIN_QRELS if (from_dir / p / "topics.tsv").is_file()]
        raise InputError(from_dir, "a pin holds one topic set per protocol: give one to --from (" + ", ".join(
            f"{from_dir / p} for its {'known-item' if p == 'focused' else 'topical'} topics" for p in subs) + ")")
    meta_path = from_dir.parent / PIN
    if from_dir.name not in PIN_QRELS or not meta_path.is_file():
        return None
    meta = read_json_file(meta_path, "garbled pin", "make the pin again")
    try:
        proto = meta["protocols"][from_dir.name]
        return {"protocol": from_dir.name, "index": str(meta["index"]["path"]),
                "index_fingerprint": str(meta["index"]["fingerprint"]), "seed": int(meta["spec"]["seed"]),
                "n_topics": int(proto["topics"]), "topic_set": str(proto["topic_set"]), "pin": str(meta["id"]),
                "results_file": PIN, "qrels_file": PIN_QRELS[from_dir.name]}
    except (KeyError, TypeError, ValueError):
        raise InputError(meta_path, f"not an nteval pin's pin.json (no {from_dir.name} topic set, index or seed)") from None


def read_run_output(from_dir: Path) -> dict[str, Any]:
    """results.json of a protocol run's OUT (or what a pin's protocol directory records:
    :func:`read_pin_output`), checked for what an export needs (one-line errors)."""
    if not from_dir.is_dir():
        raise InputError(from_dir, "--from: no such directory (give the --out of an nteval protocol run, or a pin's "
                                   "PIN/focused or PIN/highrecall)")
    pinned = read_pin_output(from_dir)
    if pinned is not None:
        return pinned
    path = from_dir / RESULTS
    if not path.is_file():
        subs = sorted(p.name for p in from_dir.iterdir() if (p / RESULTS).is_file())
        hint = (f"; its subdirectories {', '.join(subs)} are: give one of them to --from" if subs
                else " (give the --out of nteval focused, highrecall or run, or a pin's PIN/focused or PIN/highrecall)")
        raise InputError(from_dir, f"not a protocol run output: no {RESULTS}{hint}")
    res = read_json_file(path, "garbled results", "re-run the protocol")
    if not isinstance(res, dict):
        raise InputError(path, "garbled results: not a JSON object (re-run the protocol)")
    for key, kind in (("protocol", str), ("index", str), ("index_fingerprint", str), ("seed", int), ("n_topics", int)):
        if not isinstance(res.get(key), kind):
            raise InputError(path, f'"{key}" missing or not a {kind.__name__}: not the results of an nteval protocol run')
    if res["protocol"] not in protocols.names():
        raise InputError(path, f"protocol {res['protocol']!r} is not registered (known: {', '.join(protocols.names())})")
    return res


def resolve_index(res: dict[str, Any], from_dir: Path, index: str | Path | None) -> tuple[Path, dict[str, Any]]:
    """The index the run searched (or ``index``) and its manifest, refused when its fingerprint is
    not the one results.json recorded."""
    path = Path(index) if index is not None else Path(res["index"])
    recorded = from_dir / RESULTS if "pin" not in res else from_dir.parent / PIN
    if index is None and not (path / "manifest.json").is_file():
        raise InputError(path, f"index directory of {recorded} not found (moved or deleted?): "
                               "point at it with --index DIR")
    manifest = read_manifest(path)
    if manifest["fingerprint"] != res["index_fingerprint"]:
        raise InputError(path, f"index fingerprint {manifest['fingerprint'][:12]}… is not the "
                               f"{res['index_fingerprint'][:12]}… recorded in {recorded}: not the corpus "
                               "its topics were drawn from (refusing; point --index at that index)")
    return path, manifest


def _topics_and_qrels(from_dir: Path, res: dict[str, Any]) -> tuple[dict[str, str], Qrels]:
    qrels_file, said = res.get("qrels_file", "qrels.txt"), res.get("results_file", RESULTS)
    topics, qrels = read_topics(from_dir / "topics.tsv"), read_qrels(from_dir / qrels_file)
    unasked = [q for q in qrels if q not in topics]
    if len(qrels) != res["n_topics"] or unasked:
        why = (f"topic {unasked[0]} of {qrels_file} has no query in topics.tsv" if unasked
               else f"{said} says {res['n_topics']} topics, {qrels_file} judges {len(qrels)}")
        raise InputError(from_dir, f"the run's files do not belong together ({why}); re-run the protocol")
    if not isinstance(res.get("topic_set"), str):  # (without it, edited topics could not be told from the run's)
        raise InputError(from_dir / RESULTS, "no topic_set: the run cannot vouch for its topics.tsv and qrels.txt "
                                             "(an older nteval's run, or edited); re-run the protocol into this OUT "
                                             "(its runs are reused)")
    if topic_set_id(res["protocol"], topics, qrels) != res["topic_set"]:
        raise InputError(from_dir, f"topics.tsv or {qrels_file} is not the topic set {said} names "
                                   f"({res['topic_set']}): they were changed after the run; re-run the protocol")
    return topics, qrels


class _Writer:
    """A UTF-8 text file written line by line that knows its size and sha256."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "wb")
        self.sha = hashlib.sha256()
        self.bytes = 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self.sha.update(data)
        self.bytes += len(data)
        self.fh.write(data)

    def close(self) -> dict[str, Any]:
        self.fh.close()
        return {"bytes": self.bytes, "sha256": self.sha.hexdigest()}


def _write(path: Path, lines: Iterable[str]) -> dict[str, Any]:
    w = _Writer(path)
    for line in lines:
        w.write(line)
    return w.close()


def _json_line(obj: dict[str, str]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _documents(store: DocStore, fmt: str, searches: str) -> Iterator[tuple[str, str]]:
    """(docid, corpus line) of the documents of index ``searches``, in stream order. The contents
    are :mod:`nteval.index`'s (:func:`~nteval.corpus.store.index_contents`; BEIR keeps title and
    abstract apart)."""
    for docid, title, abstract in store.iter_texts(searches):
        if fmt == "beir":
            obj = {"_id": docid, "title": title if searches == "all" else "", "text": abstract}
        else:
            obj = {"id": docid, "contents": index_contents(searches, title, abstract)}
        yield docid, _json_line(obj)


def _write_corpus(path: Path, store: DocStore, fmt: str, searches: str, judged: set[str], total: int,
                  progress: bool | None) -> tuple[dict[str, Any], int]:
    """Stream the corpus to ``path``; ``judged`` loses every docid seen (what stays is missing)."""
    w, n = _Writer(path), 0
    with tqdm(total=total, desc=f"export {fmt}", unit=" doc", unit_scale=True, disable=not shown(progress),
              file=sys.stderr, leave=False) as bar:
        for docid, line in _documents(store, fmt, searches):
            w.write(line)
            judged.discard(docid)
            n += 1
            if n % 1000 == 0:
                bar.update(1000)
        bar.update(n % 1000)
    return w.close(), n


def _caveats(res: dict[str, Any], searches: str) -> list[str]:
    out = []
    if searches == "nt":
        out.append("The corpus is the NT collection: abstracts with their titles stripped, because the titles are "
                   "(or lead to) the queries and qrels. Search this corpus, not your engine's own index of the same "
                   "records (which keeps the titles), and do not add titles back: that would hand systems the answer. "
                   "nteval refuses a run that searched the titles (its low-overlap and title-only rules, "
                   "docs/any-system.md).")
    else:
        out.append("The corpus holds titles and abstracts (the `all` index). BEIR systems usually join title and "
                   "text with a space; nteval's Lucene index joined them with a newline (the same terms).")
    if res.get("holdout"):
        out.append("The protocol held source documents out of the index per topic (high-recall `holdout`): each "
                   "topic's own source document (qid = its docid) and its fold-mates were invisible to the systems "
                   "nteval ran, and are not in the qrels. The exported corpus is the whole collection, so an "
                   "external system searching it will find the query's own source document (and fold-mates). "
                   "nteval filters held-out documents from the external runs it scores; other tools do not.")
    if res.get("protocol") == "mesh":
        docs = res.get("documents")
        if not isinstance(docs, dict):
            docs = {}
        unjudgeable = (f" Only {docs['with_mesh']} of the {docs['total']} documents have MeSH headings: the others "
                       "can never be relevant." if "with_mesh" in docs and "total" in docs else "")
        out.append("The qrels come from NLM's MeSH indexing (2 = major topic, 1 = assigned): do not give systems "
                   "the records' MeSH headings." + unjudgeable)
    if res.get("protocol") == "highrecall":
        out.append("The qrels are pseudo-qrels: the reference system(s) S_ref searched `all` with each source "
                   "document's title, hits with z >= ZT are relevant; they are not human judgments.")
        if res.get("judged") == "topk-nonrelevant":
            out.append("Grade 0 rows are S_ref's other top-k hits judged non-relevant (Bpref uses them); keep them.")
        if res.get("graded"):
            out.append("Graded qrels: 2 where z >= ZT + 1, else 1.")
    out.append("Scores comparable to nteval's need the same qrels and trec_eval semantics: score TREC runs with "
               "`nteval evaluate --qrels QRELS RUN` (topics missing from a run score 0).")
    return out


def _readme(info: dict[str, Any], summary: str) -> str:
    files = info["files"]
    lines = [
        f"# NT collection exported by nteval {info['nteval_version']} ({info['format']} layout)",
        "",
        f"Collection of an nteval **{info['protocol']}** protocol run ({summary}).",
        "",
        "| fact | value |",
        "|---|---|",
        f"| protocol | {info['protocol']} (verdict measure {info['verdict_measure']}) |",
        f"| exported from | `{info['from']}` |",
        f"| index | `{info['index']}` |",
        f"| index fingerprint | `{info['index_fingerprint']}` |",
        f"| searched index | `{info['searches']}`: {info['contents']} |",
        f"| seed | {info['seed']} |",
        f"| topics | {info['topics']} (qrels rows {info['qrels_rows']}, relevant {info['relevant']}) |",
        f"| documents | {info['documents']} |",
        f"| held out per topic | {'yes' if info['holdout'] else 'no'} |",
        f"| nteval version | {info['nteval_version']} |",
        "",
        "## Files",
        "",
    ]
    lines += [f"- `{name}`: {f['bytes']} bytes, sha256 `{f['sha256']}`" for name, f in files.items()]
    lines += ["", "## Use", ""]
    corpus, queries, qrels = LAYOUT[info["format"]]
    if info["format"] == "beir":
        lines += [f"BEIR layout: `{corpus}` (`_id`, `title`, `text`), `{queries}` (`_id`, `text`), `{qrels}` "
                  "(`query-id`, `corpus-id`, `score`, with a header). Load it with `beir.datasets.data_loader."
                  "GenericDataLoader(DIR).load(split=\"test\")`."]
    else:
        lines += [f"Anserini layout: `{corpus}` is a JsonCollection (`id`, `contents` exactly as nteval indexed "
                  f"them), `{queries}` TSV topics, `{qrels}` TREC qrels.", "", "```",
                  "python -m pyserini.index.lucene -collection JsonCollection -input DIR/corpus -index IDX \\",
                  "  -generator DefaultLuceneDocumentGenerator -threads 1 -storePositions -storeDocvectors -storeRaw",
                  "python -m pyserini.search.lucene -index IDX -topics DIR/topics.tsv -output run.txt -bm25 -hits 1000",
                  "```"]
    lines += ["", "Score a TREC run: `nteval evaluate --qrels DIR/" + qrels + " run.txt`.", "", "## Caveats", ""]
    lines += [f"- {c}" for c in info["caveats"]]
    return "\n".join(lines) + "\n"


def export_collection(from_dir: str | Path, out: str | Path, fmt: str, index: str | Path | None = None,
                      force: bool = False, progress: bool | None = None) -> dict[str, Any]:
    """Export the collection of protocol run ``from_dir`` (its --out, or a correlate subdirectory
    such as OUT/focused) to ``out`` in ``fmt`` (``beir`` or ``trec``); returns what export.json says.

    ``index`` replaces the index path results.json recorded (an index that moved); its
    fingerprint must still match. ``out`` is refused if it exists, unless ``force`` and it is an
    earlier export. Bad input is a one-line :class:`~nteval.errors.InputError`."""
    fmt = str(fmt).lower()
    if fmt not in FORMATS:
        raise InputError(None, f"--format {fmt!r}: must be one of {', '.join(FORMATS)}")
    from_dir, out = Path(from_dir), Path(out)
    res = read_run_output(from_dir)
    proto = protocols.get(res["protocol"])
    index_dir, manifest = resolve_index(res, from_dir, index)
    topics, qrels = _topics_and_qrels(from_dir, res)
    searches = proto.searches
    expected = int(manifest["indexes"][searches]["documents"])
    corpus_name, queries_name, qrels_name = LAYOUT[fmt]
    info: dict[str, Any] = {
        "kind": KIND, "format": fmt, "protocol": proto.name, "verdict_measure": proto.verdict.measure,
        "from": str(from_dir.resolve()), "index": str(index_dir.resolve()),
        "index_fingerprint": manifest["fingerprint"], "searches": searches,
        "contents": manifest["indexes"][searches].get("contents", searches), "seed": res["seed"],
        "topics": len(topics), "qrels_rows": sum(len(v) for v in qrels.values()),
        "relevant": sum(1 for v in qrels.values() for r in v.values() if r > 0),
        "graded": any(r > 1 for v in qrels.values() for r in v.values()),
        "holdout": bool(res.get("holdout")), "nteval_version": __version__,
        "topic_set": topic_set_id(proto.name, topics, qrels),
        **({"pin": res["pin"]} if "pin" in res else {}),
    }

    if force and (out / MARKER).is_file():
        try:
            extra = foreign_files(out, json.loads((out / MARKER).read_text(encoding="utf-8")))
        except (ValueError, AttributeError, OSError):
            extra = []
        if extra:
            raise InputError(out, f"--force would delete {len(extra)} file(s) nteval export did not write (e.g. "
                                  f"{extra[0]}): move them out first")
    with read_lock(index_dir), atomic_dir(out, force=force, replaceable=is_export_dir,
                                          what="an nteval export (no export.json)") as tmp:
        files: dict[str, dict[str, Any]] = {}
        if fmt == "beir":
            files[queries_name] = _write(tmp / queries_name, (_json_line({"_id": q, "text": t}) for q, t in topics.items()))
            files[qrels_name] = _write(tmp / qrels_name, ["query-id\tcorpus-id\tscore\n"] + [
                f"{q}\t{d}\t{r}\n" for q, v in qrels.items() for d, r in v.items()])
        else:  # nteval's own TSV topics and TREC qrels are Anserini's: copied byte for byte
            files[queries_name] = _write(tmp / queries_name, [(from_dir / queries_name).read_bytes().decode("utf-8")])
            files[qrels_name] = _write(tmp / qrels_name, [f"{q} 0 {d} {r}\n" for q, v in qrels.items() for d, r in v.items()]
                                       if "pin" in res else [(from_dir / qrels_name).read_bytes().decode("utf-8")])
        judged = {d for v in qrels.values() for d in v}
        store = DocStore(index_dir / STORE_FILENAME)
        try:
            files[corpus_name], n = _write_corpus(tmp / corpus_name, store, fmt, searches, judged, expected, progress)
        finally:
            store.close()
        if n != expected:
            raise InputError(index_dir / STORE_FILENAME, f"{n} documents in the store, {expected} in the {searches} "
                                                         "index: the index is damaged (rebuild it with nteval index --force)")
        if judged:
            raise InputError(from_dir / "qrels.txt", f"{len(judged)} judged documents are not in the corpus "
                                                     f"(e.g. {min(judged)}): the run does not belong to this index")
        info["documents"] = n
        info["files"] = dict(sorted(files.items()))
        info["caveats"] = _caveats(res, searches)
        (tmp / "EXPORT.md").write_text(_readme(info, proto.summary), encoding="utf-8")
        (tmp / MARKER).write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return info
