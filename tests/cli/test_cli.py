"""The CLI shell: fast start, nothing heavy imported until a command needs it."""
from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIRST100

from nteval.cli import main


def test_help_lists_commands():
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0
    for cmd in ("index", "demo", "manifest"):
        assert cmd in r.output


def test_help_imports_no_jvm_and_no_torch():
    code = ("import sys\nfrom nteval.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "bad=[m for m in ('jnius','torch','pyserini','transformers','scipy','lxml') if m in sys.modules]\n"
            "print('BAD', bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("BAD []"), out


def test_manifest_command_on_a_non_index(tmp_path):
    r = CliRunner().invoke(main, ["manifest", str(tmp_path)])
    assert r.exit_code == 2 and "not an nteval index directory" in r.stderr


@pytest.mark.parametrize("cmd", ["manifest", "focused", "update"])
def test_a_missing_index_directory_is_said_so(tmp_path, cmd):
    missing = str(tmp_path / "nope")
    args = {"manifest": ["manifest", missing], "focused": ["focused", "--index", missing, "--out", str(tmp_path / "o")],
            "update": ["index", "--update", missing, str(FIRST100)]}[cmd]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and f"{missing}: no such index directory" in r.stderr and len(r.stderr.splitlines()) == 1


def test_manifest_of_a_beir_corpus_says_nothing_of_pubmed(scifact_index, sample_index):
    """PubMed's deletions and MeSH are not listed for a BEIR corpus ("0 PMIDs listed", "MeSH on 0
    documents"); a PubMed index keeps them. The topic filter is named beside the documents with both."""
    from conftest import cli

    beir = cli("manifest", scifact_index).output
    assert "PMIDs" not in beir and "deleted-listed" not in beir and "MeSH" not in beir, beir
    pubmed = cli("manifest", sample_index).output
    assert "PMIDs listed" in pubmed and "MeSH on" in pubmed
    assert "with both (by default, topics are drawn from those with 3+ abstract sentences and 3+ title words)" in pubmed
