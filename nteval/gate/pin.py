"""Topic sets that last across releases: a pin, and the fresh topics added after it.

A **pin** (``nteval pin``) freezes the topics of a task once: the focused topics (titles → their
own documents) and the high-recall topics (a sentence → the pseudo-relevant documents S_ref found
then), sampled as every protocol samples them (the seeded order over the documents that may be
topics). Every later gate on that pin asks exactly those queries and scores against exactly those
judgments, even after ``nteval index --update`` has changed the index, so release N and N+1 are
compared on the same topics. A pin is a directory::

    PIN/pin.json              id, digest, index it was made on, spec, topic-set ids, files' sha256
    PIN/focused/topics.tsv    qrels.txt
    PIN/highrecall/topics.tsv qrels.txt.gz sources.tsv (topic → the document it was made from)
    PIN/documents.tsv         each topic document's content digest at the pin
    PIN/known.txt.gz          every docid the index held at the pin (to tell fresh documents)

Its files are checked against pin.json's sha256 on every use: an edited pin is refused.

**What happens to a pinned topic later.** Its query and judgments never change. When the index is
updated: a topic whose document was *deleted* is *retired* (left out of both sides, counted);
a topic whose document was *replaced* by a revised record (another title or abstract) is *kept*
as pinned and counted as revised; a pseudo-relevant document deleted since the pin leaves that
topic's qrels (no system can retrieve it), and a high-recall topic left with none is retired.
Documents added after the pin are not judged for pinned topics (for AP they count as non-relevant);
the gate reports how many of them reach the top 10.

**Fresh topics** (``--fresh N``) come from the documents added since the pin, drawn in the pin's
seeded order, made with the same protocol now: a system tuned on the pinned topics, or trained on
documents older than the pin, cannot have seen them.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atomic import atomic_dir
from ..corpus.store import FILENAME, DocStore, known_docids, topic_candidates
from ..errors import InputError
from ..formats.trec import read_qrels, read_topics, write_qrels, write_topics
from ..index import read_manifest
from ..params import check_declared, param
from ..protocols import get
from ..protocols.highrecall import DEFAULT_POOL, DEFAULT_SHARE, HighRecallSpec, highrecall_topics, resolve_srefs
from ..session import session
from ..topics.focused import focused_topics
from ..topics.ids import topic_set_id

PIN_FILE = "pin.json"
PIN_FORMAT = 1
#: the protocols a pin holds, and the task each stands for (nteval.answer.TASKS)
PINNED = {"focused": "known-item", "highrecall": "topical"}
#: the qrels file of each protocol (high-recall judges S_ref's whole top k: gzipped, deterministic bytes)
QRELS = {"focused": "qrels.txt", "highrecall": "qrels.txt.gz"}
_FILES = ("focused/topics.tsv", "focused/qrels.txt", "highrecall/topics.tsv", "highrecall/qrels.txt.gz",
          "highrecall/sources.tsv", "documents.tsv", "known.txt.gz")


@dataclass(frozen=True)
class PinSpec:
    """What a pin samples: how many documents, the seed, and the topic filters every protocol shares."""

    n_topics: int = param(1000, "documents sampled as topics (both tasks' topics come from them)", min=1,
                          flag="--topics")
    seed: int = param(42, "sampling seed (same seed + same index = byte-identical topics and qrels)", min=0)
    min_sentences: int = param(3, "abstract sentences a topic document needs", min=0, flag="")
    min_title_tokens: int = param(3, "title tokens a topic document needs", min=0, flag="")
    preset: str | None = param(None, "who judges the topical topics: lexical (the lexical vote alone: nothing is "
                                     "encoded) or balanced (with all-MiniLM-L6-v2's equal share: the neural extra); "
                                     "default: balanced where the neural extra is installed", choices=("lexical", "balanced"))
    pool: int = param(DEFAULT_POOL, "the neural reference re-ranks the union of the lexical references' top POOL for "
                                    "each title (0: it encodes and searches the whole collection)", min=0)

    def __post_init__(self) -> None:
        check_declared(self, as_options=True)
        if self.preset == "lexical" and self.pool:
            # (hostile T7: the pool was ignored, yet recorded in pin.json)
            raise InputError(None, f"--pool {self.pool}: the pool is where a neural reference looks; --preset lexical "
                                   "has none (leave --pool out)")


def content_digest(doc: dict[str, Any]) -> str:
    """A document's title and abstract as 16 hex digits (a revision changes it)."""
    return hashlib.sha256(f"{doc['title']}\n{doc['abstract']}".encode()).hexdigest()[:16]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seal(meta: dict[str, Any]) -> str:
    """pin.json's own content (everything but the seal) as 16 hex digits: an edited pin.json (its
    seed, its list of files and their sha256) is refused like an edited topic file."""
    return hashlib.sha256(json.dumps({k: v for k, v in meta.items() if k != "seal"}, sort_keys=True).encode()
                          ).hexdigest()[:16]


def _files_digest(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]


def pin_topics(index_dir: str | Path, out: str | Path, spec: PinSpec | None = None, force: bool = False,
               progress: bool | None = None) -> dict[str, Any]:
    """Sample and freeze the topics of both tasks on ``index_dir`` into the pin directory ``out``
    (atomically: a pin is complete or absent). Returns pin.json's content."""
    spec = spec or PinSpec()
    out = Path(out)
    with session(out, index_dir) as index_dir, _pin_dir(out, force) as tmp:
        sets: dict[str, tuple] = {}
        for name in PINNED:
            proto = get(name)
            own: dict[str, Any] = {"preset": spec.preset, "pool": spec.pool} if name == "highrecall" else {}
            pspec = proto.Spec.from_params(n_topics=spec.n_topics, seed=spec.seed, min_sentences=spec.min_sentences,
                                           min_title_tokens=spec.min_title_tokens, **own)
            tset = proto.build(index_dir, pspec, tmp / ".work" / name, progress=progress)
            sets[name] = (tset.topics, tset.qrels, {q: tset.source(q) for q in tset.topics}, tset.counts["eligible"],
                          tset.stats)
        return _write_pin(tmp, index_dir, spec, sets, _store_docids(index_dir), {})


def extend_pin(old: str | Path, index_dir: str | Path, out: str | Path, n_topics: int, force: bool = False,
               progress: bool | None = None) -> dict[str, Any]:
    """A new pin holding every topic of pin ``old`` exactly as pinned (query and judgments) and
    more, up to ``n_topics`` sampled documents in all: the next documents of the old pin's seeded
    order among the documents it knew (so none is fresh), made into topics on the index as it is
    now. The new pin keeps the old one's list of known documents (fresh topics stay fresh)."""
    pin = read_pin(old)
    check_pin_index(pin, index_dir)
    base = pin.meta["spec"]
    if n_topics <= base["n_topics"]:
        raise InputError(None, f"--topics {n_topics}: an extension must sample more documents than the pin's "
                               f"{base['n_topics']:,}")
    spec = PinSpec(n_topics=n_topics, seed=base["seed"], min_sentences=base["min_sentences"],
                   min_title_tokens=base["min_title_tokens"])
    check_references(pin, f"the extension (--extend, --topics {n_topics})")
    out = Path(out)
    with session(out, index_dir) as index_dir, _pin_dir(out, force) as tmp:
        known = pin.known()
        pool = seeded_pool(index_dir, spec.seed, spec.min_sentences, spec.min_title_tokens, lambda d: d in known)
        sets: dict[str, tuple] = {}
        for name in PINNED:
            topics, qrels, sources = pin.topic_set(name)
            used = set(sources.values())
            new_ids = [d for d in pool[:n_topics] if d not in used][: n_topics - base["n_topics"]]
            t2, q2, s2, stats = _known_only(*topics_of(index_dir, name, new_ids, spec.seed, tmp / ".work" / name,
                                                       progress, Judging.of(pin)), known)
            # (the pin's record of how its topics were judged, its references included, is kept verbatim: the new
            # topics are judged by the same references, check_references)
            kept = (pin.meta.get("protocols", {}).get(name) or {}).get("settings") or {}
            sets[name] = ({**topics, **t2}, {**qrels, **q2}, {**sources, **s2}, len(pool), {**stats, **kept})
        return _write_pin(tmp, index_dir, spec, sets, sorted(known), {"extended_from": pin.id})


def _known_only(topics: dict[str, str], qrels: dict[str, dict[str, int]], sources: dict[str, str], stats: dict[str, Any],
                known: set[str]) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, str], dict[str, Any]]:
    """An extension's new topics judged on the documents its pin knows only: made on the index as
    it is now, their judgments may name documents added since the pin, which condensed rankings
    leave out of every run (each would count as a relevant document no system can retrieve). A
    topic left with no relevant document is dropped."""
    kept = {q: {d: r for d, r in v.items() if d in known} for q, v in qrels.items()}
    kept = {q: v for q, v in kept.items() if any(r > 0 for r in v.values())}
    return ({q: t for q, t in topics.items() if q in kept}, kept, {q: d for q, d in sources.items() if q in kept},
            {**stats, "judgments_of_unknown_documents_dropped": sum(len(v) for v in qrels.values())
             - sum(len(v) for v in kept.values())})


@contextlib.contextmanager
def _pin_dir(out: Path, force: bool):
    with atomic_dir(out, force=force, replaceable=_replaceable_pin, what="a pin nteval made (a sealed pin.json)",
                    foreign=_foreign) as tmp:
        yield tmp


def _replaceable_pin(path: Path) -> bool:
    """``--force`` replaces a pin nteval made: its pin.json sealed (anything else in it: :func:`_foreign`)."""
    if not path.is_dir() or path.is_symlink() or not (path / PIN_FILE).is_file():
        return False
    try:
        meta = json.loads((path / PIN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(meta, dict) and meta.get("seal") == _seal(meta)


def _foreign(path: Path) -> list[str]:
    """What pin directory ``path`` holds besides the files a pin writes (``--force`` would delete it)."""
    ours = {PIN_FILE, *_FILES, *PINNED}
    out: list[str] = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if rel not in ours and not any(rel.startswith(o.rstrip("/") + "/") for o in out):
            out.append(rel + "/" if p.is_dir() and not p.is_symlink() else rel)
    return out


def _write_pin(tmp: Path, index_dir: Path, spec: PinSpec, sets: dict[str, tuple], known: list[str],
               extra: dict[str, Any]) -> dict[str, Any]:
    """Write a pin's files into ``tmp``: each protocol's (topics, qrels, sources, eligible, stats)
    of ``sets``, the topic documents' digests, the known docids and pin.json."""
    import shutil

    manifest = read_manifest(index_dir)
    protocols: dict[str, Any] = {}
    sources: set[str] = set()
    for name, (topics, qrels, srcs, eligible, stats) in sets.items():
        write_set(tmp / name, topics, qrels, srcs if name == "highrecall" else None)
        sources |= set(srcs.values())
        protocols[name] = {"task": PINNED[name], "topic_set": topic_set_id(name, topics, qrels), "topics": len(topics),
                           "eligible": eligible,
                           "settings": {k: v for k, v in stats.items()
                                        if k in ("sref", "k", "zt", "std", "judged", "sentence", "graded")}}
    shutil.rmtree(tmp / ".work", ignore_errors=True)
    _write_documents(index_dir, tmp, sorted(sources))
    with open(tmp / "known.txt.gz", "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write("".join(d + "\n" for d in known).encode("utf-8"))
    os.chmod(tmp, 0o777 & ~_umask())  # (a temporary directory is made 0700)
    files = {f: _sha(tmp / f) for f in _FILES}
    ident = hashlib.sha256(json.dumps([spec.seed, {n: p["topic_set"] for n, p in protocols.items()}]).encode()).hexdigest()
    meta = {
        "format": PIN_FORMAT, "id": f"pin-{ident[:12]}", "nteval_version": __version__, "created_utc": _now(),
        "index": {"path": str(Path(index_dir).absolute()), "fingerprint": manifest["fingerprint"],
                  "documents": {"all": manifest["indexes"]["all"]["documents"],
                                "nt": manifest["indexes"]["nt"]["documents"]},
                  "known_documents": len(known),
                  "sources": [s.get("sha256") for s in manifest.get("sources", [])]},
        "spec": asdict(spec), "protocols": protocols, "files": files,
        "digest": _files_digest(files), **extra,
    }
    meta["seal"] = _seal(meta)
    (tmp / PIN_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_set(where: Path, topics: dict[str, str], qrels: dict[str, dict[str, int]],
              sources: dict[str, str] | None) -> None:
    """topics.tsv, the qrels (gzipped with a zero timestamp when ``sources`` are given: high-recall)
    and sources.tsv of one pinned protocol."""
    where.mkdir(parents=True, exist_ok=True)
    write_topics(where / "topics.tsv", topics)
    write_qrels(where / "qrels.txt", qrels)
    if sources is not None:
        raw = (where / "qrels.txt").read_bytes()
        with open(where / "qrels.txt.gz", "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
            gz.write(raw)
        (where / "qrels.txt").unlink()
    if sources is not None:
        (where / "sources.tsv").write_text("".join(f"{q}\t{d}\n" for q, d in sources.items()), encoding="utf-8")


def _store_docids(index_dir: Path) -> list[str]:
    import sqlite3

    db = sqlite3.connect(f"file:{Path(index_dir) / FILENAME}?mode=ro", uri=True)
    try:
        return sorted(r[0] for r in db.execute("SELECT docid FROM docs"))
    finally:
        db.close()


def _write_documents(index_dir: Path, tmp: Path, docids: list[str]) -> None:
    store = DocStore(Path(index_dir) / FILENAME)
    try:
        rows = []
        for d in docids:
            doc = store.get(d)
            assert doc is not None  # (sampled from this store)
            rows.append(f"{d}\t{content_digest(doc)}\n")
    finally:
        store.close()
    (tmp / "documents.tsv").write_text("docid\tcontent_sha256_16\n" + "".join(rows), encoding="utf-8")


@dataclass
class Pin:
    """A pin read back and verified."""

    path: Path
    meta: dict[str, Any]
    _known: set[str] | None = field(default=None, repr=False, compare=False)
    _added: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def seed(self) -> int:
        return int(self.meta["spec"]["seed"])

    def topic_set(self, protocol: str) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, str]]:
        """The pinned (topics, qrels, sources) of ``protocol``."""
        where = self.path / protocol
        topics = read_topics(where / "topics.tsv")
        qrels = read_qrels(where / QRELS[protocol])
        sources = dict(line.split("\t", 1) for line in (where / "sources.tsv").read_text(encoding="utf-8").splitlines()) \
            if (where / "sources.tsv").is_file() else {q: q for q in topics}
        return topics, qrels, sources

    def digests(self) -> dict[str, str]:
        lines = (self.path / "documents.tsv").read_text(encoding="utf-8").splitlines()[1:]
        return dict(line.split("\t", 1) for line in lines)

    def known(self) -> set[str]:
        """Every document the index held when the pin was made (an extension keeps its pin's)."""
        if self._known is None:
            with gzip.open(self.path / "known.txt.gz", "rt", encoding="utf-8") as fh:
                self._known = {line.rstrip("\n") for line in fh if line.strip()}
        return self._known

    def added_since(self, index_dir: str | Path) -> int:
        """How many documents ``index_dir`` holds that the pin does not know (added since it was
        made): pinned topics were never judged against them, so pinned rankings are condensed
        whenever there is one, whatever fingerprint pin.json records (an extension made on an
        updated index records that index's, and keeps the older list of known documents)."""
        key = str(Path(index_dir).absolute())
        if key not in self._added:
            known = self.known()
            self._added[key] = sum(1 for d in _store_docids(Path(index_dir)) if d not in known)
        return self._added[key]


def read_pin(path: str | Path) -> Pin:
    """A pin directory, its files checked against pin.json (one line when it is not a pin, when a
    file is missing or was edited, or when it was made by a newer nteval)."""
    path = Path(path)
    meta_path = path / PIN_FILE
    if not path.is_dir() or not meta_path.is_file():
        raise InputError(path, f"--pin: not a pin directory (no {PIN_FILE}); make one with `nteval pin --index INDEX "
                               f"--out {path}`")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(meta_path, f"--pin: {PIN_FILE} is not valid JSON ({err})") from None
    if not isinstance(meta, dict) or "files" not in meta or "id" not in meta:
        raise InputError(meta_path, f"--pin: {PIN_FILE} is not an nteval pin")
    if meta.get("format", 0) > PIN_FORMAT:
        raise InputError(meta_path, f"--pin: made by a newer nteval (pin format {meta.get('format')}, this nteval reads "
                                    f"{PIN_FORMAT}): upgrade nteval")
    files = meta["files"]
    if (not isinstance(files, dict) or set(files) != set(_FILES) or meta.get("digest") != _files_digest(files)
            or meta.get("seal") != _seal(meta)):
        raise InputError(meta_path, f"--pin: {PIN_FILE} changed since it was made (its content is not what nteval "
                                    "sealed); a pinned topic set must not be edited: make a new pin instead")
    for name, sha in files.items():
        f = path / name
        if not f.is_file():
            raise InputError(f, "--pin: a file of the pin is missing; a pin is used whole or not at all")
        if _sha(f) != sha:
            raise InputError(f, "--pin: this file of the pin changed since it was made (its sha256 is not pin.json's); "
                                "a pinned topic set must not be edited: make a new pin instead")
    return Pin(path, meta)


@dataclass
class AppliedTopics:
    """A topic set as it applies to the index now: what a gate runs and scores."""

    protocol: str
    kind: str                        # "pinned" or "fresh"
    topics: dict[str, str]           # queries (qid → text)
    qrels: dict[str, dict[str, int]]
    sources: dict[str, str]          # qid → the document it was made from
    status: dict[str, Any]           # retired, revised, judgments dropped, …


def check_pin_index(pin: Pin, index_dir: str | Path) -> None:
    """A pin is used on the index it was made on, or on that index updated since (its source files
    are all still the index's): one line for a pin of another collection, or of a later version of
    this one (documents it judged would look deleted)."""
    made = [s for s in pin.meta["index"].get("sources", []) if s]
    now = {s.get("sha256") for s in read_manifest(index_dir).get("sources", [])}
    missing = [s for s in made if s not in now]
    if missing:
        raise InputError(pin.path, f"--pin: made on another index, or on a later version of this one ({len(missing)} of "
                                   f"the {len(made)} source files it was made from are not in {index_dir}); use it on "
                                   f"{pin.meta['index']['path']} (or that index updated since), or make a new pin")


def apply_pin(pin: Pin, index_dir: Path, protocol: str) -> AppliedTopics:
    """The pinned topics of ``protocol`` on the index as it is now (see the module: retired,
    revised, judgments of deleted documents dropped)."""
    check_pin_index(pin, index_dir)

    topics, qrels, sources = pin.topic_set(protocol)
    digests = pin.digests()
    store = DocStore(Path(index_dir) / FILENAME)
    try:
        retired, revised = [], []
        for q in list(topics):
            doc = store.get(sources[q])
            if doc is None or not doc["abstract"]:
                retired.append(q)
            elif digests.get(sources[q]) not in (None, content_digest(doc)):
                revised.append(q)
    finally:
        store.close()
    judged = {d for v in qrels.values() for d in v}
    inside = known_docids(index_dir, judged, "nt")
    dropped = relevant_dropped = 0
    kept_qrels: dict[str, dict[str, int]] = {}
    for q, v in qrels.items():
        if q in retired:
            continue
        keep = {d: r for d, r in v.items() if d in inside}
        dropped += len(v) - len(keep)
        relevant_dropped += sum(1 for d, r in v.items() if r > 0 and d not in inside)
        if any(r > 0 for r in keep.values()):
            kept_qrels[q] = keep
        else:
            retired.append(q)
    kept = {q: t for q, t in topics.items() if q in kept_qrels}
    status = {"pinned": len(topics), "used": len(kept), "retired": sorted(set(retired)), "revised": revised,
              "judgments_dropped": dropped, "relevant_judgments_dropped": relevant_dropped,
              "note": _status_note(len(topics), len(set(retired)), len(revised), dropped, relevant_dropped)}
    return AppliedTopics(protocol, "pinned", kept, kept_qrels, {q: sources[q] for q in kept}, status)


def _status_note(pinned: int, retired: int, revised: int, dropped: int, relevant: int = 0) -> str:
    parts = [f"{pinned:,} pinned"]
    if retired:
        parts.append(f"{retired:,} retired (their document was deleted since the pin, or lost every judged document)")
    if revised:
        parts.append(f"{revised:,} revised (their document was replaced by a revised record: kept, query and judgments "
                     "as pinned)")
    if dropped:  # (new user, turn 7, F5: "87 judgments … dropped" for 2 deleted records looked alarming)
        parts.append(f"{dropped:,} judgments of deleted documents dropped ({relevant:,} relevant, "
                     f"{dropped - relevant:,} judged not relevant)")
    return ", ".join(parts)


def fresh_topics(pin: Pin, index_dir: Path, protocol: str, n: int, work: Path,
                 progress: bool | None = None) -> AppliedTopics:
    """Up to ``n`` topics made now from the documents added since the pin (in the pin's seeded
    order, with its filters), by ``protocol`` as it makes topics. Fewer (or none) when fewer
    documents were added."""
    spec = pin.meta["spec"]
    known = pin.known()
    new = seeded_pool(index_dir, pin.seed, spec["min_sentences"], spec["min_title_tokens"], lambda d: d not in known)
    ids = new[:n]
    status: dict[str, Any] = {"eligible_new_documents": len(new), "asked": n, "used": 0}
    if not ids:
        return AppliedTopics(protocol, "fresh", {}, {}, {}, status)
    if protocol == "highrecall":
        check_references(pin, f"fresh topics (--fresh {n})")
    topics, qrels, sources, _ = topics_of(index_dir, protocol, ids, pin.seed, work, progress, Judging.of(pin))
    status["used"] = len(topics)
    return AppliedTopics(protocol, "fresh", topics, qrels, sources, status)


def seeded_pool(index_dir: Path, seed: int, min_sentences: int, min_title_tokens: int, keep) -> list[str]:
    """The documents that may be topics (the pin's filters) and that ``keep`` accepts, in the
    seeded order every protocol samples in (sha256 of ``seed:docid``)."""
    import sqlite3

    db = sqlite3.connect(f"file:{Path(index_dir) / FILENAME}?mode=ro", uri=True)
    try:
        pool = [d for d in topic_candidates(db, min_sentences, min_title_tokens) if keep(d)]
    finally:
        db.close()
    return sorted(pool, key=lambda d: hashlib.sha256(f"{seed}:{d}".encode()).digest())


def pinned_references(pin: Pin) -> list[str] | None:
    """The high-recall reference systems a pin's topics were judged by (None: the default, for a pin
    that did not record them): an extension's and a gate's fresh topics are judged by the same ones."""
    sref = ((pin.meta.get("protocols", {}).get("highrecall") or {}).get("settings") or {}).get("sref") or {}
    names = [n for ns in (sref.get("families") or {}).values() for n in ns] or (sref.get("name") or "").split("+")
    return [n for n in names if n] or None


def pinned_pool(pin: Pin) -> int:
    """How the pin's neural reference found its share: re-ranking the lexical references' top P
    (P, recorded as ``sref.pool.depth``), or searching the whole collection (0: a pin made so, or
    before pools existed)."""
    sref = ((pin.meta.get("protocols", {}).get("highrecall") or {}).get("settings") or {}).get("sref") or {}
    return int((sref.get("pool") or {}).get("depth") or 0)


def pinned_share(pin: Pin) -> float:
    """How many documents the pin's non-lexical references added per topic, as a multiple of the
    lexical vote's (recorded as ``sref.share`` when not 1; a pin made before shares: 1)."""
    sref = ((pin.meta.get("protocols", {}).get("highrecall") or {}).get("settings") or {}).get("sref") or {}
    return float(sref.get("share") or 1.0)


@dataclass(frozen=True)
class Judging:
    """How a pin's topical topics were judged, as its fresh topics and extensions must be: its
    references (:func:`pinned_references`; None: the defaults), the neural share's pool depth
    (:func:`pinned_pool`) and size (:func:`pinned_share`)."""
    references: list[str] | None = None
    pool: int = DEFAULT_POOL
    share: float = DEFAULT_SHARE

    @classmethod
    def of(cls, pin: Pin) -> Judging:
        return cls(pinned_references(pin), pinned_pool(pin), pinned_share(pin))


def topics_of(index_dir: Path, protocol: str, ids: list[str], seed: int, work: Path, progress: bool | None,
              judging: Judging | None = None
              ) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, str], dict[str, Any]]:
    """(topics, qrels, sources, stats) that ``protocol`` makes now from the documents ``ids`` (a
    high-recall S_ref searches the index as it is, judging as ``judging`` says (the pin's:
    :meth:`Judging.of`; None: the defaults); no topic when none keeps a pseudo-relevant one)."""
    if not ids:
        return {}, {}, {}, {}
    if protocol == "focused":
        store = DocStore(Path(index_dir) / FILENAME)
        try:
            topics, qrels = focused_topics(store, ids)
        finally:
            store.close()
        return topics, qrels, {q: q for q in topics}, {}

    judging = judging or Judging()
    refs = resolve_srefs(judging.references)  # (a reference this install cannot run is an error, never "no topic")
    try:
        topics, qrels, stats, _, sources = highrecall_topics(Path(index_dir), ids, refs, work,
                                                             HighRecallSpec(n_topics=len(ids), seed=seed,
                                                                            pool=judging.pool, share=judging.share),
                                                             progress)
    except InputError as err:
        if "no topic kept" not in err.message:
            raise
        return {}, {}, {}, {}
    return topics, qrels, sources, stats


def check_references(pin: Pin, what: str) -> None:
    """One line (naming the pin) when this install cannot run the references pin ``pin``'s topical
    topics were judged by (a pin judged with all-MiniLM-L6-v2, on an install without the neural
    extra): ``what`` (fresh topics, an extension) would otherwise be judged by other references, or
    silently not made."""
    names = pinned_references(pin)
    try:
        resolve_srefs(names)
    except InputError as err:
        who = ", ".join(names or ["the default references"])
        raise InputError(pin.path, f"this pin's topical topics were judged by {who}, which this install cannot run "
                                   f"({err.message}): install it to make {what}, or make a new pin") from None
