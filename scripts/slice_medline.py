#!/usr/bin/env python3
"""Cut a byte-exact slice of a PubMed XML file: its header, the first N <PubmedArticle> records
exactly as they appear in the source, optionally its <DeleteCitation> block, and the closing tag.

Used to make the bundled demo sample and the test slices (see their PROVENANCE.md):
    python scripts/slice_medline.py SRC.xml.gz N OUT.xml.gz [--with-deletions]
"""
from __future__ import annotations

import argparse
import gzip
import re


def slice_medline(data: bytes, n: int, with_deletions: bool) -> bytes:
    start = data.index(b"<PubmedArticle>")
    header = data[:start]
    ends = [m.end() for m in re.finditer(rb"</PubmedArticle>\n?", data)]
    if len(ends) < n:
        raise SystemExit(f"source has only {len(ends)} records")
    body = data[start:ends[n - 1]]
    tail = b""
    if with_deletions:
        m = re.search(rb"[ \t]*<DeleteCitation>.*?</DeleteCitation>\n?", data, re.S)
        if m:
            tail = m.group(0)
    return header + body + tail + b"</PubmedArticleSet>\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("src")
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--with-deletions", action="store_true")
    a = ap.parse_args()
    opener = gzip.open if a.src.endswith(".gz") else open
    with opener(a.src, "rb") as fh:
        data = fh.read()
    out = slice_medline(data, a.n, a.with_deletions)
    if a.out.endswith(".gz"):
        with open(a.out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(out)
    else:
        with open(a.out, "wb") as fh:
            fh.write(out)


if __name__ == "__main__":
    main()
