"""``nteval encode``: encode what the fair references (or a dense system) need for a whole
collection, ahead of any pin or gate, here or on a Dask cluster (issue 58).

The first fair pin of an index reads every record with a transformer once; later pins and gates
reuse the vectors (cached beside the index, or under ``$NTEVAL_DENSE_CACHE``). That first encoding
is the cost that has a floor on a CPU; ``encode`` lets it run before, and elsewhere:

- **what**: the default references' neural encoder over ``all`` (what a pin's topical judgments need),
  or, with ``systems``, each dense system's encoder over ``nt`` (what a gate of that candidate needs);
- **on a cluster** (``scheduler``): the parts of :data:`nteval.encoders.store.PART` documents go to
  the workers in tasks of at most :data:`nteval.encoders.parts.TASK` documents, each worker loads the
  encoder once (and keeps it), and the client writes each part as it arrives, as a local encoding
  would (:class:`ClusterParts`; here, one-thread processes do the same: :mod:`nteval.encoders.parts`). The vectors are
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
from pathlib import Path
from typing import Any

import numpy as np

from .encoders.parts import PartsPool, encode_part
from .errors import InputError
from .index import read_manifest
from .progress import talking

__all__ = ["ClusterParts", "encode_index", "encode_part", "export_index_texts", "import_index_vectors"]


class ClusterParts(PartsPool):
    """Parts of an encoding computed on a Dask cluster's workers (``client``): tasks of at most
    :data:`~nteval.encoders.parts.TASK` documents, each worker's encoder loaded once."""

    def __init__(self, client: Any, spec: dict[str, Any], address: str):
        from distributed import as_completed

        self.client, self.spec, self.address = client, spec, address
        self.finished = as_completed([], loop=client.loop)   # (every task submitted, as it finishes)

    def workers(self) -> int:
        return len(self.client.nthreads())

    def submit(self, texts: list[str]) -> Any:
        from .cluster import RETRIES

        future = self.client.submit(encode_part, self.spec, texts, pure=False, retries=RETRIES)
        self.finished.add(future)
        return future

    def first_done(self, pending: set[Any]) -> Any:
        return next(self.finished)   # (each task once: every pending one was added when submitted)

    def result(self, future: Any, what: str) -> tuple[str, np.ndarray]:
        from .cluster import result_of

        return result_of(future, what)

    def not_one_identity(self, ident: str, encoder: Any) -> Exception:
        return InputError(None, f"--scheduler {self.address}: a worker encodes with {ident}, this process with "
                                f"{encoder.id}: not one model identity (another backend, CPU class or GPU), so its "
                                "vectors are not these; give the workers the same install and device, or encode here")

    def meta(self) -> dict[str, Any]:
        return {"cluster": {"scheduler": self.address, "workers": self.workers()}}


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
                                                        "docs_per_s", "cluster", "processes")}})
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
