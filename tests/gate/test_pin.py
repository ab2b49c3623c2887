"""Pinned topic sets across releases: byte-identical pins, edited pins refused, and what happens to
pinned topics when `nteval index --update` deletes or revises their documents; fresh topics from
the documents added since the pin; extensions that keep the pinned topics."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIRST100, FIRST200, cli, one_line_error

from nteval.errors import InputError
from nteval.gate.pin import PinSpec, apply_pin, extend_pin, fresh_topics, pin_topics, read_pin


@pytest.fixture(scope="module")
def base_index(tmp_path_factory) -> Path:
    """pubmed20n0014's first 100 records (the release's index before the update)."""
    from nteval.index import build_index

    out = tmp_path_factory.mktemp("pin") / "idx"
    build_index([FIRST100], out)
    return out


@pytest.fixture(scope="module")
def pinned(base_index, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pins") / "pin"
    pin_topics(base_index, out, PinSpec(n_topics=30, seed=7))
    return out


def _update_file(pin: Path, where: Path) -> tuple[Path, str, str]:
    """A Medline update file made from the pin's own (real) records: a DeleteCitation of one pinned
    topic's document, and a revised version (one more abstract sentence) of another's."""
    from lxml import etree

    topics = [line.split("\t")[0] for line in (pin / "focused" / "topics.tsv").read_text().splitlines()]
    deleted, revised = topics[0], topics[1]
    root = etree.fromstring(gzip.decompress(FIRST100.read_bytes()))
    out = etree.Element("PubmedArticleSet")
    for art in root.iter("PubmedArticle"):
        if art.findtext("MedlineCitation/PMID") == revised:
            text = art.find(".//Abstract/AbstractText")
            text.text = (text.text or "") + " This sentence was added by a revision of the record."
            out.append(art)
    dc = etree.SubElement(out, "DeleteCitation")
    etree.SubElement(dc, "PMID", Version="1").text = deleted
    path = where / "update.xml.gz"
    path.write_bytes(gzip.compress(etree.tostring(out, xml_declaration=True, encoding="utf-8"), mtime=0))
    return path, deleted, revised


def test_pin_is_deterministic_and_verified(base_index, pinned, tmp_path):
    again = tmp_path / "again"
    meta = pin_topics(base_index, again, PinSpec(n_topics=30, seed=7))
    first = json.loads((pinned / "pin.json").read_text())
    assert meta["id"] == first["id"] and meta["digest"] == first["digest"]
    for name in first["files"]:
        assert (again / name).read_bytes() == (pinned / name).read_bytes(), name
    p = read_pin(pinned)
    assert set(p.topic_set("focused")[0]) == set(p.topic_set("focused")[1])
    hr_topics, hr_qrels, sources = p.topic_set("highrecall")
    assert all(q.endswith("-s3") and sources[q] == q[:-3] for q in hr_topics) and set(hr_qrels) == set(hr_topics)
    # an edited pin is refused in one line naming the file
    edited = tmp_path / "edited"
    shutil.copytree(pinned, edited)
    t = edited / "focused" / "topics.tsv"
    t.write_text(t.read_text().replace("\t", "\tedited ", 1))
    r = cli("gate", "--index", base_index, "--pin", edited, "--task", "known-item", "--baseline", "bm25",
            "--candidate", "qld_mu1000", "--out", tmp_path / "g")
    one_line_error(r, "topics.tsv", "changed since it was made")
    # pin.json itself: a changed seed, or a file taken off its list so that the file goes unchecked
    for edit in (lambda m: m["spec"].update(seed=8), lambda m: m["files"].pop("focused/topics.tsv"),
                 lambda m: m.update(digest="0" * 16), lambda m: (m.pop("seal"), m["spec"].update(seed=7))):
        meta_edited = tmp_path / "meta_edited"
        shutil.rmtree(meta_edited, ignore_errors=True)
        shutil.copytree(pinned, meta_edited)
        m = json.loads((meta_edited / "pin.json").read_text())
        edit(m)
        (meta_edited / "pin.json").write_text(json.dumps(m))
        with pytest.raises(InputError, match="pin.json changed since it was made"):
            read_pin(meta_edited)
    one_line_error(cli("gate", "--index", base_index, "--pin", tmp_path, "--task", "known-item", "--baseline", "bm25",
                       "--candidate", "qld_mu1000", "--out", tmp_path / "g"), "not a pin directory")


def test_pinned_topics_survive_an_update(base_index, pinned, tmp_path):
    """After --update deletes one pinned document and revises another: the deleted topic is
    retired, the revised one kept as pinned; fresh topics come only from the added documents."""
    from nteval.index import update_index

    idx = tmp_path / "idx"
    shutil.copytree(base_index, idx)
    upd, deleted, revised = _update_file(pinned, tmp_path)
    update_index(idx, [FIRST200, upd])
    p = read_pin(pinned)
    # a pin made on the updated index is not one of the index before the update (its judged
    # documents would look deleted): one line, here as in extensions
    later = tmp_path / "later-pin"
    pin_topics(idx, later, PinSpec(n_topics=30, seed=7))
    with pytest.raises(InputError, match="made on another index, or on a later version"):
        apply_pin(read_pin(later), base_index.absolute(), "focused")
    one_line_error(cli("pin", "--index", base_index, "--extend", later, "--topics", 40, "--out", tmp_path / "x"),
                   "made on another index")
    focused = apply_pin(p, idx.absolute(), "focused")
    assert focused.status["retired"] == [deleted] and focused.status["revised"] == [revised]
    assert "1 retired" in focused.status["note"] and "1 revised" in focused.status["note"]
    for proto, deleted_qid in (("focused", deleted), ("highrecall", f"{deleted}-s3")):
        a = apply_pin(p, idx.absolute(), proto)
        topics, qrels, _ = p.topic_set(proto)
        assert deleted_qid not in a.topics and deleted_qid in a.status["retired"] or deleted_qid not in topics
        rev = revised if proto == "focused" else f"{revised}-s3"
        if rev in topics:
            assert rev in a.topics and rev in a.status["revised"] and a.topics[rev] == topics[rev]
        assert all(a.qrels[q] == {d: r for d, r in qrels[q].items() if d != deleted} for q in a.topics)
    assert p.known() >= set(p.topic_set("focused")[0])
    fresh = fresh_topics(p, idx.absolute(), "focused", 25, tmp_path / "w")
    assert fresh.topics and not set(fresh.topics) & p.known()
    assert len(fresh.topics) == 25 and fresh.status["eligible_new_documents"] >= 25
    # the same pin on the unchanged index: nothing retired, nothing fresh
    same = apply_pin(p, base_index.absolute(), "focused")
    assert same.status["retired"] == [] and same.status["revised"] == []
    assert not fresh_topics(p, base_index.absolute(), "focused", 10, tmp_path / "w2").topics


def test_extend_keeps_the_pinned_topics(base_index, pinned, tmp_path):
    ext = tmp_path / "ext"
    meta = extend_pin(pinned, base_index, ext, 40)
    old, new = read_pin(pinned), read_pin(ext)
    for proto in ("focused", "highrecall"):
        ot, oq, _ = old.topic_set(proto)
        nt, nq, _ = new.topic_set(proto)
        assert all(nt[q] == ot[q] and nq[q] == oq[q] for q in ot)
        assert len(nt) > len(ot)
    assert meta["extended_from"] == old.id and new.known() == old.known()
    one_line_error(cli("pin", "--index", base_index, "--extend", pinned, "--topics", 10, "--out", tmp_path / "x"),
                   "must sample more documents")


def test_force_replaces_only_a_pin_nteval_made(base_index, pinned, tmp_path):
    """`pin --force` replaces a sealed pin with nothing else in it; a directory with a pin.json
    nteval did not seal, or a pin holding a user's files, is refused and left as it was."""
    fake = tmp_path / "fake"
    (fake / "src").mkdir(parents=True)
    (fake / "pin.json").write_text('{"pinned_versions": {}}')
    (fake / "src" / "main.py").write_text("code")
    one_line_error(cli("pin", "--index", base_index, "--topics", 20, "--out", fake, "--force"), "--force refused")
    assert (fake / "src" / "main.py").read_text() == "code"
    mine = tmp_path / "mine"
    shutil.copytree(pinned, mine)
    (mine / "NOTES.md").write_text("notes")
    one_line_error(cli("pin", "--index", base_index, "--topics", 20, "--out", mine, "--force"), "NOTES.md")
    assert (mine / "NOTES.md").read_text() == "notes" and read_pin(mine).id == read_pin(pinned).id
    # an extension keeps its pin's seed: a --seed beside --extend is refused, not ignored
    one_line_error(cli("pin", "--index", base_index, "--extend", pinned, "--topics", 40, "--seed", 8, "--out",
                       tmp_path / "x"), "--seed")


def test_pin_command(base_index, tmp_path):
    r = cli("pin", "--index", base_index, "--topics", 20, "--out", tmp_path / "p", "--quiet")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("pin pin-") and "nteval gate" in r.output
    one_line_error(cli("pin", "--index", base_index, "--topics", 20, "--out", tmp_path / "p"), "already exists")
    assert cli("pin", "--index", base_index, "--topics", 20, "--out", tmp_path / "p", "--force").exit_code == 0
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    one_line_error(cli("pin", "--index", base_index, "--out", tmp_path / "mine", "--force"), "--force refused")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    # a user's file or folder put into a pin: --force is refused, listing them, and keeps them
    (tmp_path / "p" / "NOTES.txt").write_text("mine")
    (tmp_path / "p" / "focused" / "runs").mkdir()
    (tmp_path / "p" / "focused" / "runs" / "a.run").write_text("mine")
    one_line_error(cli("pin", "--index", base_index, "--topics", 20, "--out", tmp_path / "p", "--force"),
                   "--force refused", "2 entries", "NOTES.txt", "focused/runs/", "nothing was changed")
    assert (tmp_path / "p" / "NOTES.txt").read_text() == (tmp_path / "p" / "focused" / "runs" / "a.run").read_text() == "mine"


def test_a_reader_that_goes_away_is_not_an_error(base_index, tmp_path):
    """`nteval pin … | head -1`: the reader closes the pipe before nteval writes; the pin is written,
    the status is 0 and nothing is said on stderr (it was "Broken pipe", exit 2)."""
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("nteval")
    proc = subprocess.Popen([str(exe), "pin", "--index", str(base_index), "--topics", "20", "--out", str(tmp_path / "p"),
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # (the reader gone before the pin is written, as `head -1` is by the second line)
    err = proc.stderr.read()
    assert proc.wait() == 0 and err == b"", err
    read_pin(tmp_path / "p")
