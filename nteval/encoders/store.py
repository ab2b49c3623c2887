"""The document vectors of an index under one encoder, made once and cached beside the index.

Document vectors are cached beside the index (``INDEX/dense/<index>-<model>-<fingerprint>/``), or
under ``$NTEVAL_DENSE_CACHE`` when set: ``vectors.npy`` (unit-length rows, float32 or float16),
``docids.txt`` (row order = the store's stream order) and ``meta.json``. Encoding writes parts of
:data:`PART` documents into a ``.partial`` directory, so a killed encoding resumes from the last
finished part; the finished directory appears by one rename. A cache is used only when it checks
out (:func:`cache_problem`); the parts may be encoded here or on a Dask cluster's workers
(:mod:`nteval.encode`), the same vectors either way.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..atomic import file_lock, save_array, write_text
from ..atomic import sha256_file as _sha256
from ..corpus.store import index_docids, index_texts
from ..errors import InputError, short
from ..progress import pending, shown, talking, tqdm
from .models import Encoder, _unit
from .parts import local_parts

#: Documents per cached part of an encoding (the unit of resumption).
PART = 8192
#: Bump when the cached vectors of a model would change (text given to the encoder, pooling, normalisation).
ENCODING_FORMAT = 3  # 2: meta.json carries the sha256 of docids.txt and of every vectors file; 3: and the nteval version


def cache_dir(index_dir: Path, index_name: str, fingerprint: str, encoder: Encoder) -> Path:
    root = Path(os.environ["NTEVAL_DENSE_CACHE"]) if os.environ.get("NTEVAL_DENSE_CACHE") else index_dir / "dense"
    return root / f"{index_name}-{encoder.id}-{fingerprint[:16]}"


@dataclass
class Vectors:
    """The encoded documents of one index under one model."""
    dir: Path
    docids: list[str]
    matrix: np.ndarray        # float32, one unit row per document
    meta: dict[str, Any]
    dtype: str                # how the rows are stored (float16 rows are widened to float32 here)


_VECTORS: dict[str, Vectors] = {}


def document_vectors(index_dir: Path, index_name: str, fingerprint: str, encoder: Encoder, dtype: str = "float32",
                     progress: bool | None = None, remote: Any = None) -> Vectors:
    """The cached vectors, encoding (or finishing the encoding of) the documents first if needed.
    A cache is used only if it checks out (:func:`cache_problem`: the documents of the index in its
    order, every file the sha256 meta.json recorded); a damaged one is encoded again, and said so."""
    final = cache_dir(index_dir, index_name, fingerprint, encoder)
    key = f"{final}:{dtype}"
    if key in _VECTORS:
        return _VECTORS[key]
    name = f"vectors-{dtype}.npy"
    docids = index_docids(index_dir, index_name)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        if os.environ.get("NTEVAL_DENSE_CACHE"):
            raise InputError(None, f"NTEVAL_DENSE_CACHE={short(os.environ['NTEVAL_DENSE_CACHE'])}: cannot hold the dense "
                                   f"vectors cache ({err.strerror}): give a directory you can write") from None
        raise InputError(final.parent, f"cannot hold the dense vectors cache ({err.strerror}): set NTEVAL_DENSE_CACHE "
                                       "to a directory you can write") from None
    with _lock(final.parent / f".{final.name}.lock"):
        problem = cache_problem(final, name, docids) if (final / "meta.json").exists() else "none yet"
        if problem not in (None, "none yet", f"no {name}"):
            print(f"note: the dense vectors cache {final} is damaged ({problem}): encoding again", file=sys.stderr)
            shutil.rmtree(final, ignore_errors=True)
        if problem is not None:
            if not (final / "meta.json").is_file():
                _encode(index_dir, index_name, fingerprint, encoder, final, progress, remote)
            if not (final / name).is_file():  # stored as float32; other dtypes are converted from it
                save_array(final / name, np.load(final / "vectors-float32.npy").astype(dtype))
                meta = json.loads((final / "meta.json").read_text(encoding="utf-8"))
                meta["sha256"][name] = _sha256(final / name)
                write_text(final / "meta.json", json.dumps(meta, indent=2) + "\n")
            problem = cache_problem(final, name, docids)
            if problem is not None:
                raise InputError(final, f"the dense vectors cache cannot be made right ({problem}); remove it")
    meta = json.loads((final / "meta.json").read_text(encoding="utf-8"))
    matrix = np.load(final / name).astype(np.float32, copy=False)
    vec = _VECTORS[key] = Vectors(final, docids, matrix, meta, dtype)
    return vec


def encoding_plan(index_dir: Path, index_name: str, fingerprint: str, encoder: Encoder) -> dict[str, Any] | None:
    """What :func:`document_vectors` will encode before it can search (None: the vectors are cached):
    the documents left (a killed encoding's finished parts aside), the encoder, and the time at the
    rate the same encoder took on this machine before (its other caches' meta.json), when known."""
    final = cache_dir(index_dir, index_name, fingerprint, encoder)
    if (final / "meta.json").is_file():
        return None
    n = len(index_docids(index_dir, index_name))
    partial = final.with_name(final.name + ".partial")
    left = max(0, n - len(list(partial.glob("part-*.npy"))) * PART) if partial.is_dir() else n
    rates = []
    for meta in sorted(final.parent.glob(f"*-{encoder.id}-*/meta.json")):
        try:
            rate = json.loads(meta.read_text(encoding="utf-8")).get("docs_per_s")
        except (OSError, ValueError):
            continue
        if isinstance(rate, (int, float)) and rate > 0:
            rates.append(float(rate))
    rate = min(rates) if rates else None  # (the slowest seen: an estimate that does not promise too much)
    return {"key": f"{index_name}-{encoder.id}", "index": index_name, "documents": left, "of": n,
            "encoder": encoder.describe(), "rate": rate, "seconds": left / rate if rate else None,
            "carried": any(final.parent.glob(f"{index_name}-{encoder.id}-*/meta.json"))}


def cache_problem(final: Path, name: str, docids: list[str]) -> str | None:
    """What is wrong with the vectors cache ``final`` for the index's documents ``docids`` (None:
    nothing): meta.json readable and of this format, docids.txt exactly the index's documents in
    order, ``name`` (a vectors file) of the sha256 meta.json recorded, one row per document."""
    try:
        meta = json.loads((final / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "meta.json unreadable"
    if not isinstance(meta, dict) or meta.get("format") != ENCODING_FORMAT or not isinstance(meta.get("sha256"), dict):
        return "meta.json of another format"
    if meta.get("nteval") != __version__:
        return f"made by nteval {short(str(meta.get('nteval')))}, this is {__version__}"
    try:
        listing = (final / "docids.txt").read_bytes()
    except OSError:
        return "no docids.txt"
    if listing != "".join(f"{d}\n" for d in docids).encode("utf-8"):
        return "docids.txt is not the index's documents in order"
    if not (final / name).is_file():
        return f"no {name}"
    if meta["sha256"].get(name) != _sha256(final / name):
        return f"{name} is not the file encoded (sha256)"
    return None


#: one encoder per cache directory at a time
_lock = file_lock


def _resume(final: Path, index_dir: Path, index_name: str) -> tuple[Path, list[str], dict[str, str], set[int]]:
    """The ``.partial`` directory of an encoding (made, or kept from a killed one for the same
    documents), the index's docids, and the parts finished there (their sha256 as recorded)."""
    partial = final.with_name(final.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    docids = index_docids(index_dir, index_name)
    listing = "".join(f"{d}\n" for d in docids)
    if not (partial / "docids.txt").is_file() or (partial / "docids.txt").read_text(encoding="utf-8") != listing:
        for old in partial.glob("part-*.np*"):  # a different document list: nothing to resume
            old.unlink()
        write_text(partial / "docids.txt", listing)
    n_parts = (len(docids) + PART - 1) // PART
    try:  # each finished part's sha256, recorded when it was written: a changed part is encoded again
        digests = json.loads((partial / "parts.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        digests = {}
    done = {i for i in range(n_parts) if (partial / f"part-{i:06d}.npy").is_file()
            and isinstance(digests, dict) and digests.get(str(i)) == _sha256(partial / f"part-{i:06d}.npy")}
    return partial, docids, {str(i): digests[str(i)] for i in done}, done


def _encode(index_dir: Path, index_name: str, fingerprint: str, encoder: Encoder, final: Path,
            progress: bool | None, remote: Any = None) -> None:
    """Encode every document of the index into ``final`` (through ``.partial``, part by part:
    resumable); ``remote``: encodes the parts elsewhere (:class:`nteval.encode.ClusterParts`: a Dask
    cluster's workers), the same vectors."""
    partial, docids, digests, done = _resume(final, index_dir, index_name)
    n_parts = (len(docids) + PART - 1) // PART
    donor = _Donor.find(final, index_name, encoder)
    t0 = time.perf_counter()
    bar = tqdm(total=len(docids), initial=min(len(docids), len(done) * PART), unit=" doc",
               desc=f"encoding {index_name} ({encoder.id})", disable=not shown(progress), file=sys.stderr, leave=False,
               mininterval=0.5)
    left = len(docids) - min(len(docids), len(done) * PART)   # (documents of the parts not finished)
    clock = _Clock(f"{index_name}-{encoder.id}", index_name, encoder, left, talking(progress))
    texts_sha: list[str] = []

    def parts() -> Any:   # (part, [(docid, text)], their texts' digests) of every part not finished
        batch: list[tuple[str, str]] = []
        for i, (docid, text) in enumerate(index_texts(index_dir, index_name)):
            texts_sha.append(_text_sha(text))
            if i // PART not in done:
                batch.append((docid, text))
            if batch and (len(batch) == PART or i == len(docids) - 1):
                yield i // PART, batch, texts_sha[-len(batch):]
                batch = []

    encoded = reused = 0
    # (here: an encoder that encodes each text alone runs in one-thread processes, faster than threads)
    pool = local_parts(encoder, left) if remote is None else None
    remote = remote or pool
    failed = True
    try:
        made = (((p, *_encode_part(encoder, b, sh, donor, bar, clock, partial / f"part-{p:06d}.unfinished.npz"),
                  len(b)) for p, b, sh in parts()) if remote is None else remote.encode(encoder, parts(), donor, bar, clock))
        for part, vec, n_new, n_batch in made:
            save_array(partial / f"part-{part:06d}.npy", vec.astype(np.float32))
            digests[str(part)] = _sha256(partial / f"part-{part:06d}.npy")
            write_text(partial / "parts.json", json.dumps(digests) + "\n")
            encoded += n_new
            reused += n_batch - n_new
        failed = False
    finally:
        bar.close()
        clock.done()
        if pool is not None:
            pool.close(failed)
    if reused and talking(progress):  # (new user, turn 7, F5: only meta.json said what an update re-encoded)
        print(f"note: {index_name}: encoded {encoded:,} documents with {encoder.describe()}, reused the vectors of "
              f"{reused:,} unchanged ones from the index before its update", file=sys.stderr)
    _finish(partial, final, encoder, docids, texts_sha, n_parts,
            {"index": index_name, "fingerprint": fingerprint, "encoded_this_time": encoded,
             "reused_from": donor.path.name if donor and reused else None, "reused": reused,
             "seconds": round(time.perf_counter() - t0, 3), "cluster": None, **(remote.meta() if remote else {})})
    if donor is not None and donor.superseded():
        shutil.rmtree(donor.path, ignore_errors=True)


def _finish(partial: Path, final: Path, encoder: Encoder, docids: list[str], texts_sha: list[str], n_parts: int,
            info: dict[str, Any]) -> None:
    """The finished parts as one matrix, meta.json beside it, and ``.partial`` renamed to ``final``."""
    parts = [np.load(partial / f"part-{i:06d}.npy") for i in range(n_parts)]
    matrix = np.concatenate(parts) if parts else np.zeros((0, encoder.dim), dtype=np.float32)
    save_array(partial / "vectors-float32.npy", matrix.astype(np.float32))
    write_text(partial / "texts.txt", "".join(f"{h}\n" for h in texts_sha))
    seconds, encoded = info["seconds"], info["encoded_this_time"]
    meta = {"format": ENCODING_FORMAT, "nteval": __version__, "model": encoder.id, "dim": int(matrix.shape[1]),
            "documents": len(docids), "index": info["index"], "fingerprint": info["fingerprint"],
            "sha256": {"docids.txt": _sha256(partial / "docids.txt"), "texts.txt": _sha256(partial / "texts.txt"),
                       "vectors-float32.npy": _sha256(partial / "vectors-float32.npy")},
            "encoded_this_time": encoded, "reused_from": info["reused_from"], "reused": info["reused"],
            "seconds": seconds, "docs_per_s": round(encoded / seconds, 1) if seconds > 0 and encoded else None,
            **({"cluster": info["cluster"]} if info.get("cluster") else {}),
            **({"processes": info["processes"]} if info.get("processes") else {}),
            **({"imported": info["imported"]} if info.get("imported") else {})}
    write_text(partial / "meta.json", json.dumps(meta, indent=2) + "\n")
    for p in [*partial.glob("part-*.np*"), partial / "parts.json"]:
        p.unlink(missing_ok=True)
    if final.exists():  # a directory without meta.json is not one this module finished
        shutil.rmtree(final)
    os.replace(partial, final)


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def _encode_part(encoder: Encoder, batch: list[tuple[str, str]], shas: list[str], donor: _Donor | None,
                 bar: Any, clock: _Clock | None = None, unfinished: Path | None = None) -> tuple[np.ndarray, int]:
    """One part's vectors: a document the donor holds with the same text is its vector there, the
    others are encoded (in calls of ``encoder.batch``: the progress line moves per call, and
    ``clock`` times them). Interrupted (Ctrl-C), the rows encoded so far are kept in ``unfinished``
    with the digests of their texts, and the next encoding starts from them (new user, turn 7, F6:
    an interrupted part of 8,192 documents lost 19 minutes of torch's work). Returns (vectors, how
    many were encoded)."""
    rows = donor.rows([d for d, _ in batch], shas) if donor is not None else [None] * len(batch)
    out = np.zeros((len(batch), encoder.dim), dtype=np.float32)
    done = np.zeros(len(batch), dtype=bool)
    if unfinished is not None and unfinished.is_file():
        try:
            with np.load(unfinished) as kept:
                same = kept["shas"].shape == (len(batch),) and list(kept["shas"]) == shas
                if same and kept["vectors"].shape == out.shape:
                    done, out = kept["done"].astype(bool), kept["vectors"].astype(np.float32)
        except (OSError, ValueError, KeyError):
            pass   # (a damaged unfinished part: encoded again)
    todo = [i for i, r in enumerate(rows) if r is None and not done[i]]
    if done.any():
        bar.update(int(done.sum()))
    if donor is not None:
        have = [(i, r) for i, r in enumerate(rows) if r is not None and not done[i]]
        if have:
            out[[i for i, _ in have]] = donor.vectors[[r for _, r in have]]
            bar.update(len(have))
            if clock is not None:
                clock.skipped(len(have))
    try:
        for j in range(0, len(todo), encoder.batch):
            ids = todo[j:j + encoder.batch]
            t = time.perf_counter()
            out[ids] = encoder.embed([batch[i][1] for i in ids])
            done[ids] = True
            bar.update(len(ids))
            if clock is not None:
                clock.encoded(len(ids), time.perf_counter() - t)
    except KeyboardInterrupt:
        if unfinished is not None and done.any():
            tmp = unfinished.with_name(unfinished.name + ".tmp.npz")
            np.savez(tmp, vectors=out, done=done, shas=np.asarray(shas))
            os.replace(tmp, unfinished)
        raise
    if unfinished is not None:
        unfinished.unlink(missing_ok=True)
    return out, sum(1 for r in rows if r is None)


class _Clock:
    """How long an encoding has left: said once, from its first batch (what it encodes, with which
    model, the rate and the time it will take: new user, turn 7, F2), and kept in
    :func:`nteval.progress.pending` for the systems bar's time left."""

    #: an encoding shorter than this is not announced
    SAY_FROM = 30.0

    def __init__(self, key: str, index_name: str, encoder: Encoder, left: int, say: bool = True):
        self.key, self.index_name, self.encoder, self.left = key, index_name, encoder, left
        self.n, self.seconds, self.said = 0, 0.0, not say
        pending(key, None)

    def skipped(self, n: int) -> None:
        self.left -= n

    def encoded(self, n: int, seconds: float) -> None:
        self.n += n
        self.seconds += seconds
        self.left -= n
        rate = self.n / self.seconds if self.seconds > 0 else None
        pending(self.key, self.left / rate if rate else None)
        if not self.said and rate:
            self.said = True
            if self.left > 0 and (self.left + n) / rate >= self.SAY_FROM:
                from tqdm import tqdm as bar

                # (tqdm.write: a bar drawn on the terminal is cleared and drawn again under the line)
                bar.write(f"note: encoding {self.left + n:,} documents of {self.index_name} with {self.encoder.describe()}: "
                          f"its first {n:,} took {seconds:.1f} s ({rate:.3g} documents/s), so about "
                          f"{bar.format_interval((self.left + n) / rate)} in all (once per index: cached beside it)",
                          file=sys.stderr)

    def done(self) -> None:
        pending(self.key, done=True)


@dataclass
class _Donor:
    """A finished cache of the same index name and encoder made for another fingerprint (the index
    before ``nteval index --update``): the vector of a document whose text is unchanged is taken
    from it instead of encoded again (the same encoder identity: the same weights, backend, cut and
    nteval version make the same vector)."""
    path: Path
    vectors: np.ndarray
    at: dict[str, tuple[int, str]]       # docid → (row, text digest)
    in_index_dir: bool

    @classmethod
    def find(cls, final: Path, index_name: str, encoder: Encoder) -> _Donor | None:
        best = None
        for d in sorted(final.parent.glob(f"{index_name}-{encoder.id}-*")):
            if d == final or d.name.endswith(".partial") or not d.is_dir() or d.is_symlink():
                continue
            try:
                meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
                ok = (meta.get("format") == ENCODING_FORMAT and meta.get("model") == encoder.id
                      and meta.get("nteval") == __version__ and "texts.txt" in meta.get("sha256", {})
                      and all(_sha256(d / f) == h for f, h in meta["sha256"].items() if f in
                              ("docids.txt", "texts.txt", "vectors-float32.npy")))
            except (OSError, ValueError, AttributeError):
                ok = False
            if ok and (best is None or meta["documents"] > best[1]):
                best = (d, meta["documents"])
        if best is None:
            return None
        d = best[0]
        ids = (d / "docids.txt").read_text(encoding="utf-8").split("\n")[:-1]
        shas = (d / "texts.txt").read_text(encoding="utf-8").split("\n")[:-1]
        vectors = np.load(d / "vectors-float32.npy", mmap_mode="r")
        if len(ids) != len(shas) or len(ids) != vectors.shape[0]:
            return None
        in_index = not os.environ.get("NTEVAL_DENSE_CACHE")
        return cls(d, vectors, {x: (i, h) for i, (x, h) in enumerate(zip(ids, shas))}, in_index)

    def rows(self, docids: list[str], shas: list[str]) -> list[int | None]:
        return [r[0] if (r := self.at.get(x)) is not None and r[1] == h else None for x, h in zip(docids, shas)]

    def superseded(self) -> bool:
        """Whether the donor can go: inside an index directory (a cache of the index before its
        update: no index of that fingerprint is left there); never in a shared $NTEVAL_DENSE_CACHE."""
        return self.in_index_dir


# -- vectors made elsewhere ----------------------------------------------------------------------------

#: The smallest cosine between a vector made elsewhere and the same text encoded here for the two to
#: count as one encoder identity's. One identity's vectors differ by float rounding only (torch on a
#: GPU against the same model in fp32 on a CPU: cosine > 0.99999; ONNX fp32 against torch: 1.0000,
#: docs/measurements.md); another backend, cut or precision differs by far more (the reference's int8
#: against the model's fp32: about 0.99, changing 5.8 % of a title's top 10).
IMPORT_MIN_COSINE = 0.9999
#: Documents re-encoded here to check vectors made elsewhere (seeded: the same sample every time).
IMPORT_SAMPLE = 64


def export_texts(index_dir: Path, index_name: str, out: Path) -> int:
    """The texts an encoding of ``index_name`` reads, one JSON line per document (``{"id", "text"}``,
    in the index's order), written atomically: what a team encodes elsewhere (on a GPU) before
    :func:`import_vectors`. Returns the number of documents."""
    n = 0
    tmp = out.with_name(f".{out.name}.partial")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for docid, text in index_texts(index_dir, index_name):
                fh.write(json.dumps({"id": docid, "text": text}, ensure_ascii=False) + "\n")
                n += 1
        os.replace(tmp, out)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(out, f"cannot write the texts ({err.strerror})") from None
    return n


def _read_elsewhere(source: Path, encoder: Encoder) -> tuple[list[str], np.ndarray]:
    """A directory of vectors made elsewhere: ``docids.txt`` (one per line) and ``vectors.npy``
    (one row per docid, ``encoder.dim`` columns, float32 or float16), checked for shape and values."""
    if not source.is_dir():
        raise InputError(source, "--import: give a directory holding docids.txt and vectors.npy (one row per docid)")
    try:
        ids = (source / "docids.txt").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(source / "docids.txt", f"--import: cannot read the docids ({getattr(err, 'strerror', None) or err})") from None
    try:
        matrix = np.load(source / "vectors.npy", mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as err:
        raise InputError(source / "vectors.npy", f"--import: not a NumPy .npy array ({short(str(err), 120)})") from None
    if matrix.ndim != 2 or matrix.shape != (len(ids), encoder.dim):
        raise InputError(source / "vectors.npy", f"--import: shape {tuple(matrix.shape)}, expected ({len(ids):,}, "
                                                 f"{encoder.dim}): one {encoder.dim}-d row per line of docids.txt "
                                                 f"({encoder.describe()})")
    if matrix.dtype not in (np.float32, np.float16, np.float64):
        raise InputError(source / "vectors.npy", f"--import: dtype {matrix.dtype}, expected float32 or float16")
    seen: set[str] = set()
    for d in ids:
        if d in seen:
            raise InputError(source / "docids.txt", f"--import: docid {short(d)} appears twice")
        seen.add(d)
    return ids, matrix


def import_vectors(index_dir: Path, index_name: str, fingerprint: str, encoder: Encoder, source: Path,
                   sample: int = IMPORT_SAMPLE, seed: int = 0) -> Vectors:
    """Vectors a team made elsewhere (a GPU, another cluster) with ``encoder``'s identity, taken into
    the index's store after a check: every document of the index has exactly one row, every row is
    finite, and ``sample`` documents (seeded) encoded here match their rows to a cosine of
    :data:`IMPORT_MIN_COSINE` (else one line, nothing written: vectors of two identities are never
    mixed). Stored as an encoding made here would be (meta.json says ``imported`` and the check), so
    pins and gates read them and encode nothing."""
    final = cache_dir(index_dir, index_name, fingerprint, encoder)
    if (final / "meta.json").is_file():
        raise InputError(final, f"--import: {index_name} already holds vectors of {encoder.describe()}: nothing to "
                                "import (remove that directory to replace them)")
    docids = index_docids(index_dir, index_name)
    ids, matrix = _read_elsewhere(source, encoder)
    row = {d: i for i, d in enumerate(ids)}
    missing = [d for d in docids if d not in row]
    if missing:
        raise InputError(source / "docids.txt", f"--import: {len(missing):,} documents of {index_name} have no vector "
                                                f"(first: {short(missing[0])}); encode all {len(docids):,} "
                                                f"(nteval encode --export-texts lists them)")
    extra = len(ids) - len(docids)
    if extra:
        known = set(docids)
        stranger = next(d for d in ids if d not in known)
        raise InputError(source / "docids.txt", f"--import: {extra:,} docids are not documents of {index_name} "
                                                f"(first: {short(stranger)})")
    ordered = np.asarray(matrix, dtype=np.float32)[[row[d] for d in docids]]
    bad = np.flatnonzero(~np.isfinite(ordered).all(axis=1))
    if bad.size:
        d = docids[int(bad[0])]
        raise InputError(source / "vectors.npy", f"--import: row {row[d]} ({short(d)}) is not finite")
    # rows of unit length are kept as they came (one identity's rows are then this machine's, bit for bit);
    # others are scaled to it, as an encoder here would
    norms = np.linalg.norm(ordered, axis=1)
    off = np.abs(norms - 1.0) > 1e-5
    if off.any():
        ordered[off] = _unit(ordered[off])
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(docids), size=min(sample, len(docids)), replace=False).tolist()) if docids else []
    # one pass over the texts: every text's digest (the store's texts.txt), the sampled ones kept (not all: 36M)
    wanted, sampled, texts_sha = set(pick), {}, []
    for i, (_, text) in enumerate(index_texts(index_dir, index_name)):
        texts_sha.append(_text_sha(text))
        if i in wanted:
            sampled[i] = text
    here = encoder.embed([sampled[i] for i in pick]) if pick else np.zeros((0, encoder.dim), np.float32)
    cos = (ordered[pick] * here).sum(axis=1) if pick else np.ones(0)
    # (a text with no known token is the zero vector on both sides: the same, not a mismatch)
    both_zero = (np.abs(ordered[pick]).sum(axis=1) == 0) & (np.abs(here).sum(axis=1) == 0) if pick else np.ones(0, bool)
    cos = np.where(both_zero, 1.0, cos)
    worst = int(np.argmin(cos)) if pick else -1
    low = float(cos[worst]) if pick else 1.0
    if low < IMPORT_MIN_COSINE:
        raise InputError(source, f"--import: not {encoder.describe()}'s vectors: document {short(docids[pick[worst]])} "
                                 f"encoded here has cosine {low:.4f} with its imported row (the least of {len(pick)} "
                                 f"sampled; one identity's vectors agree to {IMPORT_MIN_COSINE}); encode with the same "
                                 f"model, backend and cut ({encoder.id}), or encode here")
    with _lock(final.parent / f".{final.name}.lock"):
        partial = final.with_name(final.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        write_text(partial / "docids.txt", "".join(f"{d}\n" for d in docids))
        n_parts = (len(docids) + PART - 1) // PART
        for p in range(n_parts):
            save_array(partial / f"part-{p:06d}.npy", ordered[p * PART:(p + 1) * PART])
        _finish(partial, final, encoder, docids, texts_sha, n_parts,
                {"index": index_name, "fingerprint": fingerprint, "encoded_this_time": 0, "reused_from": None,
                 "reused": 0, "seconds": 0.0, "cluster": None,
                 "imported": {"from": str(source.resolve()), "checked": len(pick), "seed": seed,
                              "min_cosine": round(low, 6), "threshold": IMPORT_MIN_COSINE,
                              "vectors_sha256": _sha256(source / "vectors.npy")}})
    _VECTORS.pop(f"{final}:float32", None)
    return document_vectors(index_dir, index_name, fingerprint, encoder, progress=False)
