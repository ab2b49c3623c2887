"""A sentence-transformers model (a BERT encoder + mean pooling + unit length, as all-MiniLM-L6-v2
is) run by ONNX Runtime on a CPU instead of torch (issue 49: faster encoding, chosen by measurement,
docs/measurements.md "Encoding all-MiniLM-L6-v2 on a CPU").

The ONNX graph is exported once per model, from the model's own local directory (torch and
transformers are there with the neural extra; nothing is downloaded), and kept under
``$NTEVAL_DENSE_CACHE/onnx`` or ``~/.cache/nteval/onnx``, named by the weights' digest, the torch
version that exported it and the variant. ``int8`` is ONNX Runtime's dynamic quantization of that
graph's matrix products (weights int8 per output channel, activations quantized per batch). At run time only ``onnxruntime`` and
``tokenizers`` are used: the text is tokenized as the model's ``tokenizer.json`` says, truncated at
``max_seq_length`` tokens, and the token vectors are mean-pooled over the attention mask and scaled
to length 1, which is what sentence-transformers does with this model.

sentence-transformers' own ONNX backend (``backend="onnx"``) needs optimum-onnx, whose releases
pin transformers < 4.58 while sentence-transformers 6 needs transformers ≥ 5: the two cannot be
installed together, so this module does the same with ONNX Runtime directly.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import file_lock
from ..atomic import sha256_file as _sha256
from ..errors import InputError

#: The ONNX variants (``backend`` of a dense system, after ``onnx-``).
VARIANTS = ("fp32", "int8")
OPSET = 17


def onnx_root() -> Path:
    env = os.environ.get("NTEVAL_DENSE_CACHE")
    return Path(env) / "onnx" if env else Path.home() / ".cache" / "nteval" / "onnx"


def exported(model_dir: Path, weights_tag: str, variant: str) -> Path:
    """The ONNX file of ``model_dir`` in ``variant`` (``fp32`` or ``int8``), exported (and
    quantized) the first time it is asked for; one exporter at a time (a file lock), the file
    appears by one rename."""
    if variant not in VARIANTS:
        raise InputError(None, f"ONNX variant {variant!r}: use one of {', '.join(VARIANTS)}")
    # (torch's version from its metadata: importing torch takes a second, and only the export needs it;
    # it names the export, so an install without torch cannot find one either)
    try:
        exporter = version("torch").split("+")[0]
    except PackageNotFoundError:
        raise InputError(model_dir, "the ONNX backends need torch (it exports the model and names the export): pip "
                                    "install 'nteval[neural]'") from None
    d = onnx_root() / f"{model_dir.name}-{weights_tag}-torch{exporter}"
    path = d / f"model-{variant}.onnx"
    if _checked(path, say=True):
        return path
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(d, f"cannot hold the ONNX export ({err.strerror}): set NTEVAL_DENSE_CACHE to a directory "
                            "you can write") from None
    with file_lock(d / ".lock"):
        if not _checked(path):   # (another process may have made it while this one waited)
            fp32 = d / "model-fp32.onnx"
            if not _checked(fp32, say=variant == "fp32" or fp32.exists()):
                missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
                if missing:   # (only the export needs them; an exported graph runs without)
                    raise InputError(model_dir, f"exporting the model to ONNX needs {' and '.join(missing)}: pip install "
                                                "'nteval[neural]'")
                _written(fp32, lambda tmp: _export(model_dir, tmp))
            if variant == "int8":
                _written(path, lambda tmp: _quantize(fp32, tmp))
    return path


#: what made an export (its sidecar records it with the graph's sha256): another of these is another graph
def _made_by() -> dict[str, Any]:
    def ver(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return ""

    return {"opset": OPSET, "onnx": ver("onnx"), "onnxruntime": ver("onnxruntime"),
            "quantization": "dynamic, int8 weights per channel, MatMul only"}


_VERIFIED: dict[str, tuple[int, int]] = {}


def _checked(path: Path, say: bool = False) -> bool:
    """Whether ``path`` is an export this module finished: its sidecar (``.json``) records the
    graph's sha256, and the file still has it (hostile K4: a truncated or emptied export was an
    "internal error" on every run, and another graph in its place was used without a word). A file
    that fails is removed, and said (``say``), so that it is exported again."""
    if not path.is_file():
        return False
    stat = path.stat()
    if _VERIFIED.get(str(path)) == (stat.st_size, stat.st_mtime_ns):
        return True
    side = path.with_suffix(".json")
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
        ok = meta.get("sha256") == _sha256(path)
        why = "" if ok else "its contents are not the graph nteval wrote (sha256)"
    except (OSError, ValueError, AttributeError):
        ok, why = False, "no record of how it was made"
    if ok:
        _VERIFIED[str(path)] = (stat.st_size, stat.st_mtime_ns)
        return True
    if say:
        print(f"note: the ONNX export {path} is not usable ({why}): exporting it again", file=sys.stderr)
    for p in (path, side):
        p.unlink(missing_ok=True)
    return False


def _written(path: Path, make: Any) -> None:
    """``make(tmp)`` writes the graph to a temporary file beside ``path``, which becomes ``path`` (with
    its sidecar) by one rename; on any failure the temporary files go (hostile K5: a full disk left a
    60 MB partial export, and each retry another), and a full disk is said of this place, not of the
    command's output."""
    import errno

    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}.onnx")
    try:
        make(tmp)
        side = path.with_suffix(".json")
        side_tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}.json")
        side_tmp.write_text(json.dumps({"sha256": _sha256(tmp), **_made_by()}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        os.replace(side_tmp, side)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) and not err.filename:
            raise OSError(err.errno, os.strerror(err.errno), str(path.parent)) from None
        raise
    except Exception as err:  # noqa: BLE001  (a writer's own error for a full disk: protobuf's, onnx's)
        if "No space left" in str(err) or "Disk quota" in str(err):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path.parent)) from None
        raise
    finally:
        for p in path.parent.glob(f".{path.stem}.tmp-{os.getpid()}*"):
            p.unlink(missing_ok=True)
        for p in path.parent.glob("*-inferred.onnx"):  # (ONNX Runtime's shape-inference copy)
            p.unlink(missing_ok=True)


@contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's and the loader's warnings and reports kept off the user's terminal (they speak
    of the export's internals, never of the user's input: the export is checked by its vectors)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()   # (its "Loading weights" bar)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _export(model_dir: Path, out: Path) -> None:
    """The encoder (token ids → last hidden states) as an ONNX graph, from the local weights."""
    import torch
    from transformers import AutoModel

    print(f"note: exporting {model_dir.name} to ONNX once (kept in {out.parent})", file=sys.stderr)
    with _quiet():
        bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()

    class Hidden(torch.nn.Module):  # the inputs by name (their order in forward() changes between releases)
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                             return_dict=True).last_hidden_state

    model = Hidden().eval()
    ids = torch.ones((2, 16), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"last_hidden_state": {0: "batch", 1: "tokens"}}
    with torch.no_grad(), _quiet():
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)


def _quantize(fp32: Path, out: Path) -> None:
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # (its root-logger advice to pre-process, on every quantization)
    # per-channel weights, matrix products only: per-tensor int8 (every op, the default) gave cosine 0.944 with
    # fp32 on PubMed abstracts, this 0.995 at the same speed (docs/measurements.md)
    try:
        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
    finally:
        logging.disable(logging.NOTSET)


class OnnxSentenceEncoder:
    """Texts → unit vectors with an exported graph: tokenized, truncated at ``max_seq_length``,
    sorted by length into batches of ``batch_size`` (the least padding), mean-pooled."""

    def __init__(self, model_dir: Path, onnx_path: Path, max_seq_length: int, batch_size: int, threads: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_seq_length)
        self.tokenizer.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # no busy-waiting between ops: on a machine whose other core was busy, 600 sample abstracts took
        # 10.0-10.5 s and 12.8 CPU-s instead of 12.1-12.3 s and 16.4-17.0 (idle: 6.6 s against 6.3)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(enc)), key=lambda i: -len(enc[i].ids))
        out: np.ndarray | None = None
        for s in range(0, len(order), self.batch_size):
            rows = order[s:s + self.batch_size]
            pooled = self._batch([enc[i] for i in rows])
            if out is None:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def _batch(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for i, e in enumerate(encodings):
            n = len(e.ids)
            ids[i, :n], mask[i, :n], types[i, :n] = e.ids, e.attention_mask, e.type_ids
        feed = {k: v for k, v in (("input_ids", ids), ("attention_mask", mask), ("token_type_ids", types))
                if k in self.inputs}
        hidden = self.session.run(None, feed)[0]
        m = mask[:, :, None].astype(np.float32)
        return (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
