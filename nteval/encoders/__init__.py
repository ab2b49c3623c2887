"""Encoders: what turns a text into a unit vector, and the vectors an index holds under each.

- :mod:`nteval.encoders.models`: the models (wordllama, all-MiniLM-L6-v2, multilingual-e5-small, any
  local sentence-transformers directory), their backends (torch, ONNX Runtime fp32/int8), threads,
  devices and identities (a digest of the weights, the backend, the device and the cut);
- :mod:`nteval.encoders.onnx`: a sentence-transformers model exported to ONNX and run by ONNX Runtime;
- :mod:`nteval.encoders.store`: every record of an index encoded once per model, cached beside the
  index, resumable, checked by sha256 (the parts encoded here or on a Dask cluster:
  :mod:`nteval.encode`).

The ``dense`` system kind (:mod:`nteval.systems.dense`), the high-recall verdict's neural references
(:mod:`nteval.protocols.highrecall`) and the pooled references (:mod:`nteval.systems.pooled`) all
encode through this package; it imports nothing of theirs.
"""
from __future__ import annotations

from .models import SHIPPED_MODELS, Encoder, encoder_params, load_encoder, model_identity
from .store import PART, Vectors, cache_dir, document_vectors, encoding_plan

__all__ = ["PART", "SHIPPED_MODELS", "Encoder", "Vectors", "cache_dir", "document_vectors", "encoder_params",
           "encoding_plan", "load_encoder", "model_identity"]
