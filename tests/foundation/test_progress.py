"""A bar left open by an error stops printing when its command ends (CI found one: an index build
refused a file, and its parse bar's heartbeat printed "nteval: parse: 0 record, 17:01 elapsed" into
every later command's output)."""
from __future__ import annotations

import io
import sys
import time

from nteval.progress import plain_lines, tqdm


def test_an_unclosed_bar_is_silent_after_its_command(monkeypatch):
    monkeypatch.setenv("NTEVAL_PROGRESS_EVERY", "0.5")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with plain_lines(True):
        bar = tqdm(total=None, desc="parse", unit=" record", disable=True)  # (what an error leaves open)
        time.sleep(1.3)
    said = err.getvalue()
    assert said.startswith("nteval: parse: 0 record"), said
    time.sleep(1.3)
    assert err.getvalue() == said
    bar.close()

