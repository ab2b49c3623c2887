"""``nteval encode``: encode what the fair references (or a dense system) need for a whole
collection, ahead of any pin or gate, here or on a Dask cluster (issue 58).

The first fair pin of an index reads every record with a transformer once; later pins and gates
reuse the vectors (cached beside the index, or under ``$NTEVAL_DENSE_CACHE``). That first encoding
is the cost that has a floor on a CPU; ``encode`` lets it run before, and elsewhere:

- **what**: the default references' neural encoder over ``all`` (what a pin's topical judgments need),
  or, with ``systems``, each dense system's encoder over ``nt`` (what a gate of that candidate needs);
- **on a cluster** (``scheduler``): the parts of :data:`nteval.encoders.store.PART` documents go to
  the workers as tasks, each worker loads the encoder once (and keeps it), and the client writes each
  part as it arrives, as a local encoding would (:class:`ClusterParts`). The vectors are
  byte-identical to one process': each text is encoded alone (the reference's int8 encoder since
  issue 56; e5 and fp32 ONNX always), whatever part or worker it falls to. A worker whose encoder is
  not the client's (another model identity: another backend, CPU class or GPU) is refused in one
  line: vectors of two identities are never mixed. A lost worker's part is re-run by the scheduler;
  a killed encoding resumes from the parts written (:func:`nteval.encoders.store.document_vectors`).
- one progress bar covers the whole encoding, with its rate and time left.
"""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .index import read_manifest
from .progress import talking

#: parts in flight per worker (the texts of a part travel with its task: ~10 MB for 8,192 abstracts)
WINDOW_PER_WORKER = 2


def encode_part(spec: dict[str, Any], texts: list[str]) -> tuple[str, np.ndarray]:
    """A worker's task: the texts' vectors with the encoder of ``spec``
    (:func:`nteval.encoders.models.encoder_params`), loaded once per worker process, and its identity."""
    from .encoders.models import load_encoder

    encoder = load_encoder(spec["model"], spec["dim"], "encode", spec["backend"], spec["max_tokens"])
    return encoder.id, encoder.embed(texts)


class ClusterParts:
    """Parts of an encoding computed on a Dask cluster's workers (``client``), handed back to
    :func:`nteval.encoders.store._encode` as they arrive: ``(part, vectors, encoded, documents)``."""

    def __init__(self, client: Any, spec: dict[str, Any], address: str):
        self.client, self.spec, self.address = client, spec, address

    def describe(self) -> dict[str, Any]:
        return {"scheduler": self.address, "workers": len(self.client.nthreads())}

    def encode(self, encoder: Any, parts: Iterable[tuple[int, list[tuple[str, str]], list[str]]], donor: Any,
               bar: Any, clock: Any) -> Iterator[tuple[int, np.ndarray, int, int]]:
        from distributed import as_completed

        from .cluster import RETRIES, result_of

        window = max(1, WINDOW_PER_WORKER * max(1, len(self.client.nthreads())))
        pending: dict[Any, tuple[int, np.ndarray, list[int], int]] = {}
        feed = iter(parts)
        fresh: list[Any] = []   # (the futures submitted since the last look: the loop adds them)

        def submit() -> bool:
            try:
                part, batch, shas = next(feed)
            except StopIteration:
                return False
            rows = donor.rows([d for d, _ in batch], shas) if donor is not None else [None] * len(batch)
            out = np.zeros((len(batch), encoder.dim), dtype=np.float32)
            have = [(i, r) for i, r in enumerate(rows) if r is not None]
            if have:
                out[[i for i, _ in have]] = donor.vectors[[r for _, r in have]]
                bar.update(len(have))
                clock.skipped(len(have))
            todo = [i for i, r in enumerate(rows) if r is None]
            future = self.client.submit(encode_part, self.spec, [batch[i][1] for i in todo], pure=False,
                                        retries=RETRIES)
            pending[future] = (part, out, todo, len(batch))
            fresh.append(future)
            return True

        while len(pending) < window and submit():
            pass
        if not pending:
            return
        running = as_completed(fresh, loop=self.client.loop)
        fresh.clear()
        last = time.perf_counter()
        for future in running:
            part, out, todo, n = pending.pop(future)
            ident, vectors = result_of(future, f"encoding part {part} ({len(todo):,} documents)")
            if ident != encoder.id:
                raise InputError(None, f"--scheduler {self.address}: a worker encodes with {ident}, this process with "
                                       f"{encoder.id}: not one model identity (another backend, CPU class or GPU), so "
                                       "its vectors are not these; give the workers the same install and device, or "
                                       "encode here")
            if todo:
                out[todo] = vectors
            bar.update(len(todo))
            now = time.perf_counter()   # (the cluster's rate: documents per second of wall time)
            clock.encoded(len(todo), now - last)
            last = now
            if submit():
                running.add(fresh.pop())
            yield part, out, len(todo), n


def encode_index(index_dir: str | Path, systems: list[Any] | None = None, scheduler: str | None = None,
                 progress: bool | None = None) -> list[dict[str, Any]]:
    """Encode, for the whole collection of ``index_dir``, what the default references need (the
    neural reference's encoder over ``all``) or, with ``systems``, what each dense system needs (its
    encoder over ``nt``): on the Dask cluster at ``scheduler`` when given. Returns one summary per
    encoding (its cache's meta.json: documents, encoded this time, reused, seconds)."""
    from .cluster import session
    from .encoders.models import encoder_params, load_encoder
    from .encoders.store import document_vectors, encoding_plan
    from .protocols.highrecall import REFERENCE_SYSTEMS, neural_srefs
    from .systems.base import make_system

    index_dir = Path(index_dir)
    fingerprint = read_manifest(index_dir)["fingerprint"]
    jobs: list[tuple[str, Any]] = []
    if systems:
        for s in systems:
            if s.algorithm != "dense":
                raise InputError(None, f"--system {s.name}: {s.algorithm} encodes nothing (encode is for dense systems)")
            jobs.append(("nt", s))
    else:
        jobs = [("all", make_system(n, *REFERENCE_SYSTEMS[n])) for n in neural_srefs()]
    out = []
    with (session(scheduler) if scheduler else contextlib.nullcontext()) as client:
        for index_name, s in jobs:
            spec = encoder_params(s.params)
            encoder = load_encoder(spec["model"], spec["dim"], s.name, spec["backend"], spec["max_tokens"])
            remote = (ClusterParts(client, {**spec, "backend": encoder.backend or spec["backend"]}, str(scheduler))
                      if client is not None else None)
            cached = encoding_plan(index_dir, index_name, fingerprint, encoder) is None
            vec = document_vectors(index_dir, index_name, fingerprint, encoder, progress=progress, remote=remote)
            out.append({"system": s.name, "index": index_name, "encoder": encoder.describe(), "cache": str(vec.dir),
                        "now": not cached,
                        **{k: vec.meta.get(k) for k in ("documents", "encoded_this_time", "reused", "seconds",
                                                        "docs_per_s", "cluster")}})
            if talking(progress):
                print(f"nteval: {s.name}: {out[-1]['documents']:,} documents of {index_name} in {vec.dir}", file=sys.stderr)
    return out


def _one_job(index_dir: Path, system: Any | None) -> tuple[str, Any]:
    """(index name, encoder) of what ``encode`` would encode: the default references' neural encoder
    over ``all``, or a dense system's over ``nt``."""
    from .encoders.models import encoder_params, load_encoder
    from .protocols.highrecall import REFERENCE_SYSTEMS, neural_srefs
    from .systems.base import make_system

    if system is not None and system.algorithm != "dense":
        raise InputError(None, f"--system {system.name}: {system.algorithm} encodes nothing (encode is for dense systems)")
    index_name, s = ("nt", system) if system is not None else ("all", make_system(neural_srefs()[0],
                                                                                 *REFERENCE_SYSTEMS[neural_srefs()[0]]))
    spec = encoder_params(s.params)
    return index_name, load_encoder(spec["model"], spec["dim"], s.name, spec["backend"], spec["max_tokens"])


def export_index_texts(index_dir: str | Path, out: str | Path, system: Any | None = None) -> dict[str, Any]:
    """The texts ``encode`` would read (the references' ``all``, or ``system``'s ``nt``), as JSON lines
    ``{"id", "text"}`` in ``out``: to encode elsewhere (a GPU) and bring back with :func:`import_index_vectors`.
    The encoder's identity is returned with them: the vectors must be made with it."""
    from .encoders.store import export_texts

    index_dir = Path(index_dir)
    read_manifest(index_dir)
    index_name, encoder = _one_job(index_dir, system)
    n = export_texts(index_dir, index_name, Path(out))
    return {"index": index_name, "documents": n, "encoder": encoder.describe(), "identity": encoder.id,
            "dim": encoder.dim, "out": str(out)}


def import_index_vectors(index_dir: str | Path, source: str | Path, system: Any | None = None) -> dict[str, Any]:
    """Vectors made elsewhere (``source``: ``docids.txt`` + ``vectors.npy``) taken into the index's
    store for the references (or ``system``), after :func:`nteval.encoders.store.import_vectors`'
    check against a sample encoded here; refused in one line when they are not this encoder's."""
    from .encoders.store import import_vectors

    index_dir = Path(index_dir)
    fingerprint = read_manifest(index_dir)["fingerprint"]
    index_name, encoder = _one_job(index_dir, system)
    vec = import_vectors(index_dir, index_name, fingerprint, encoder, Path(source))
    return {"index": index_name, "documents": len(vec.docids), "encoder": encoder.describe(), "cache": str(vec.dir),
            **vec.meta["imported"]}
