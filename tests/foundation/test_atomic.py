"""Atomic writes: complete or absent, never half-written; normal permissions."""
from __future__ import annotations

import os
import stat

import pytest

from nteval.atomic import atomic_dir, write_text


def test_write_text_uses_umask_permissions(tmp_path):
    p = tmp_path / "a" / "f.txt"
    write_text(p, "x\n")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask
    assert p.read_text() == "x\n" and [f.name for f in p.parent.iterdir()] == ["f.txt"]


def test_atomic_dir_has_umask_permissions(tmp_path):
    """Item 17 (F13): `nteval export` (and `index`) made their OUT with mkdtemp's mode 0700."""
    with atomic_dir(tmp_path / "out") as d:
        (d / "v").write_text("1")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o777 & ~mask


def test_atomic_dir_failure_keeps_old_and_leaves_no_temp(tmp_path):
    final = tmp_path / "out"
    with atomic_dir(final) as d:
        (d / "v").write_text("1")
    with pytest.raises(RuntimeError):
        with atomic_dir(final, force=True) as d:
            (d / "v").write_text("2")
            raise RuntimeError("boom")
    assert (final / "v").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(FileExistsError):
        with atomic_dir(final):
            pass


def test_sha256_file_is_the_whole_files_digest(tmp_path):
    """One streaming digest serves the ONNX exports, the dense vectors and the engines' caches."""
    import hashlib
    import os

    from nteval.atomic import sha256_file

    for name, data in (("empty", b""), ("one", b"x"), ("chunks", os.urandom((1 << 20) * 2 + 17))):
        (tmp_path / name).write_bytes(data)
        assert sha256_file(tmp_path / name) == hashlib.sha256(data).hexdigest()
