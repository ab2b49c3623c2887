"""`nteval index --update` and `nteval index --force` replace the index directory whole: a user's
own file or folder in it (notes, a results folder) is never deleted. Both are refused in one line
that lists them, with nothing changed; nteval's own entries (its caches) are replaced as before."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIRST200, cli, one_line_error

from nteval.demo import sample_path
from nteval.index import read_manifest

FP = "0123456789abcdef"


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def _copy(sample_index: Path, where: Path) -> Path:
    idx = where / "idx"
    shutil.copytree(sample_index, idx)
    return idx


def _caches(idx: Path) -> None:
    """What nteval leaves inside an index besides it: caches (engine index, answer cache, dense
    vectors), their locks, a reader's lock."""
    (idx / ".nt.lock").write_text("")  # (read_lock of INDEX/nt leaves it)
    pisa = idx / "engines" / f"all-pisa-{FP}"
    (pisa / "pisa").mkdir(parents=True)
    (pisa / "meta.json").write_text('{"files": {"pisa/inv.docs": [0, ""]}}')  # (what the build wrote)
    (pisa / "pisa" / "inv.docs").write_bytes(b"")
    (pisa / "pisa.log").write_text("")
    (pisa / "pisa.log.1").write_text("")
    (pisa / "settings" / "bm25.k1-0.9.b-0.4").mkdir(parents=True)  # (PISA's postings of one setting)
    (pisa / "settings" / "bm25.k1-0.9.b-0.4" / "setting.json").write_text("{}")
    (pisa / "settings" / "bm25.k1-0.9.b-0.4" / "inv.bm25").write_bytes(b"")
    (idx / "engines" / f".all-pisa-{FP}.lock").write_text("")
    (idx / "engines" / "answers").mkdir()
    (idx / "engines" / "answers" / f"es-{FP}.sqlite").write_bytes(b"")
    (idx / "dense" / f"nt-minilm-{FP}").mkdir(parents=True)
    (idx / "dense" / f"nt-minilm-{FP}" / "vectors-float32.npy").write_bytes(b"")
    (idx / "dense" / f"nt-minilm-{FP}" / "meta.json").write_text('{"sha256": {"vectors-float32.npy": ""}}')
    (idx / "dense" / f"nt-minilm-{FP}" / "flat.faiss").write_bytes(b"")


@pytest.mark.parametrize("how", ["update", "force"])
@pytest.mark.parametrize("user", ["NOTES.txt", "mine/", "engines/notes.txt", "dense/mine/",
                                  f"engines/all-pisa-{FP}/pisa/mine/notes.txt", f"engines/all-pisa-{FP}/settings/notes.txt",
                                  "engines/answers/notes.txt", f"dense/nt-minilm-{FP}/mine/"])
def test_user_entries_refuse_the_replacement_and_nothing_changes(sample_index, tmp_path, how, user):
    idx = _copy(sample_index, tmp_path)
    _caches(idx)
    target = idx / user.rstrip("/")
    if user.endswith("/"):
        target.mkdir(parents=True)
        (target / "results.tsv").write_text("q1\t0.5\n")
        user = user if user.rstrip("/").count("/") < 2 else user + "results.tsv"  # (in a cache: its files are listed)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("my notes\n")
    before = _tree(idx)
    args = (["index", "--update", idx, FIRST200] if how == "update"
            else ["index", sample_path(), "--out", idx, "--force"])
    line = one_line_error(cli(*args, "--quiet"), f"--{how} refused", user, "nothing was changed")
    assert "1 entry" in line
    assert _tree(idx) == before  # the user's entry, and everything else, as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no temporary or partial directory left


def test_several_user_entries_are_listed(sample_index, tmp_path):
    idx = _copy(sample_index, tmp_path)
    for name in ("a.txt", "b.txt", ".hidden"):
        (idx / name).write_text("x")
    (idx / "runs").mkdir()
    line = one_line_error(cli("index", "--update", idx, FIRST200), "4 entries", ".hidden", "a.txt", "b.txt", "runs/")
    assert "Traceback" not in line


@pytest.mark.parametrize("how", ["update", "force"])
def test_own_entries_are_replaced_as_before(sample_index, tmp_path, how):
    """Only nteval's entries: the replacement goes ahead and drops the caches keyed on the old
    index (as it always did), leaving exactly a fresh index."""
    idx = _copy(sample_index, tmp_path)
    _caches(idx)
    old = read_manifest(idx)
    args = (["index", "--update", idx, FIRST200] if how == "update"
            else ["index", sample_path(), "--out", idx, "--force"])
    r = cli(*args, "--quiet")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in idx.iterdir()) == ["all", "docs.sqlite", "manifest.json", "nt"]
    new = read_manifest(idx)
    if how == "update":
        assert len(new["updates"]) == 1 and new["fingerprint"] != old["fingerprint"]
    else:
        assert "updates" not in new and new["fingerprint"] == old["fingerprint"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
