"""report.html is a page a person reads, checked in a real headless browser (Debian's chromium):
the page is rendered, screenshotted and its computed layout read back. report.tex is valid booktabs
with escaped names. All on a real `nteval correlate` run over the bundled SciFact slice."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import HANG

from nteval.report.agreement import write_reports
from nteval.report.document import booktabs, latex_escape

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]

#: Appended to a copy of the page: reads the computed layout once everything is loaded.
PROBE = """<script>
addEventListener('load', () => {
  const cs = el => getComputedStyle(el), all = q => [...document.querySelectorAll(q)];
  const out = {
    rem: parseFloat(cs(document.documentElement).fontSize), bodyFont: parseFloat(cs(document.body).fontSize),
    viewport: innerWidth, pageWidth: document.documentElement.scrollWidth,
    images: all('figure img').map(i => ({shown: i.getBoundingClientRect().width, natural: i.naturalWidth,
                                         top: Math.round(i.getBoundingClientRect().top + scrollY)})),
    tablesFit: all('.scroll').map(d => d.scrollWidth <= d.clientWidth + 1),
    firstColumn: all('table:not(.kv) tr > :first-child').map(c => cs(c).textAlign),
    numbers: all('table:not(.kv) td').map(c => cs(c).textAlign),
    headings: all('h2').map(h => h.textContent), text: document.body.innerText,
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("chromium is not installed (Debian: apt-get install chromium); .ci/run installs it")


def _browse(page: Path, width: int, height: int, *action: str) -> str:
    """Run headless chromium on ``page`` with a fresh profile; its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                            *action, page.as_uri()], capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _layout(report: Path, tmp_path: Path, width: int) -> dict:
    probe = tmp_path / f"probe_{width}.html"
    probe.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _browse(probe, width, 1200, "--dump-dom")
    m = re.search(r"<pre id=\"probe\">(.*?)</pre>", dom, re.S)
    assert m, "the layout probe did not run"
    return json.loads(html.unescape(m.group(1)))


def test_report_html_reads_well_in_a_real_browser(correlated, tmp_path):
    r, out = correlated
    assert r.exit_code == 0, r.output + r.stderr
    rep = json.loads((out / "report.json").read_text())
    page = out / "report.html"

    wide = _layout(page, tmp_path, 1280)
    assert wide["bodyFont"] >= 16
    assert len(wide["images"]) == len(rep["pairs"])
    for img in wide["images"]:  # decoded, one per row at the page's full width (issue 40: 290 px thumbnails
        # in a grid before), never wider than the window
        assert img["natural"] >= 600 and min(img["natural"], 50 * wide["rem"]) <= img["shown"] <= wide["viewport"]
    rows = [img["top"] for img in wide["images"]]
    assert len(set(rows)) == len(rows)  # no two figures side by side
    assert wide["tablesFit"] and all(wide["tablesFit"])  # every table fits the 1,280 px page: nothing clipped
    heads = wide["headings"]  # bottom line, caveats, verdicts (with their biases, disagreements), figures, tables
    assert heads[0].startswith("Read with care") and heads[1].startswith("Verdicts")
    assert heads.index("NT scores against human scores") < heads.index("Agreement of NT rankings with human judgments")
    lines = [x for x in wide["text"].splitlines() if x.strip()]
    assert lines[2].startswith("Bottom line:"), lines[:4]  # after the title and the provenance line
    assert wide["firstColumn"] and set(wide["firstColumn"]) == {"left"}  # names, header included
    assert wide["numbers"] and set(wide["numbers"]) == {"right"}
    assert {"Settings", "Versions"} <= set(wide["headings"])
    text = wide["text"]
    assert "In plain words: for a random pair of systems" in text
    assert rep["provenance"]["generated"] in text and "Generated" in text
    for tool in ("nteval", "python", "lucene", "anserini_jar"):
        assert tool in text
    assert rep["provenance"]["index_versions"]["lucene"] in text and "seed" in text
    assert all(name in text for name in rep["systems"])

    narrow = _layout(page, tmp_path, 420)  # a phone: images shrink, wide tables scroll inside themselves
    assert narrow["pageWidth"] <= narrow["viewport"]
    assert all(0 < img["shown"] <= narrow["viewport"] for img in narrow["images"])

    shot = tmp_path / "report.png"
    _browse(page, 1280, 2400, f"--screenshot={shot}")
    from PIL import Image, ImageStat

    with Image.open(shot) as im:
        assert im.format == "PNG" and im.size == (1280, 2400)
        gray = im.convert("L")
        assert ImageStat.Stat(gray).stddev[0] > 20  # not a blank page
        dark = sum(gray.histogram()[:128]) / (1280 * 2400)
        assert 0.005 < dark < 0.5  # text and figures on a light page


def _tabulars(tex: str) -> list[str]:
    return re.findall(r"\\begin\{tabular\}\{([lr]+)\}\n(.*?)\\end\{tabular\}", tex, re.S)


def _check_booktabs(tex: str) -> None:
    """Every table: rules in order, as many cells per row as columns, no special left unescaped."""
    assert tex.count(r"\begin{table}") == tex.count(r"\end{table}") >= 1
    assert tex.count(r"\begin{document}") == tex.count(r"\end{document}") == 1 and r"\usepackage{booktabs}" in tex
    for spec, body in _tabulars(tex):
        lines = body.strip().splitlines()
        assert spec[0] == "l" and set(spec[1:]) <= {"r"}
        assert lines[0] == r"\toprule" and lines[2] == r"\midrule" and lines[-1] == r"\bottomrule"
        for row in [lines[1]] + lines[3:-1]:
            assert row.endswith(r" \\")
            cells = re.split(r"(?<!\\)&", row[:-3])
            assert len(cells) == len(spec), row
            for c in cells:
                text = re.sub(r"\$[^$]*\$", "", c.replace(r"\$", ""))  # outside math ($\tau_{AP}$)
                assert not re.search(r"(?<!\\)[_%#&$]", text) and "|" not in text, c


def test_report_tex_is_booktabs(correlated):
    r, out = correlated
    assert r.exit_code == 0, r.output + r.stderr
    tex = (out / "report.tex").read_text(encoding="utf-8")
    _check_booktabs(tex)
    assert len(_tabulars(tex)) >= 5 and r"bm25\_k1.2\_b0.75" in tex and r"$\tau_{\mathrm{AP}}$" in tex
    focused = (out / "focused" / "results.tex").read_text(encoding="utf-8")
    _check_booktabs(focused)
    assert "sorted by RR" in focused and r"disjunctive\_1" in focused


def _rename(obj, names: dict[str, str]):
    """The same report with its systems renamed everywhere (keys and values)."""
    if isinstance(obj, dict):
        return {names.get(k, k): _rename(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename(v, names) for v in obj]
    return names.get(obj, obj) if isinstance(obj, str) else obj


HOSTILE = ["R&D_50% #1", "a|b {x}", "back\\slash ~^", "<i>bold</i>", "café $5", "<!-- hides the rest"]


def test_hostile_system_names_are_escaped_in_every_report(correlated, tmp_path):
    r, out = correlated
    rep = json.loads((out / "report.json").read_text())
    rep = _rename(rep, dict(zip(rep["systems"], HOSTILE)))
    write_reports(rep, tmp_path)
    tex = (tmp_path / "report.tex").read_text(encoding="utf-8")
    _check_booktabs(tex)
    assert r"R\&D\_50\% \#1" in tex and r"a\textbar{}b \{x\}" in tex
    assert r"back\textbackslash{}slash \textasciitilde{}\textasciicircum{}" in tex and r"café \$5" in tex
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<i>bold</i>" not in page and "&lt;i&gt;bold&lt;/i&gt;" in page
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| a\\|b {x} |" in md  # a | in a name does not split its table cell
    assert "<i>" not in md and "<!--" not in md and "&lt;i&gt;bold&lt;/i&gt;" in md  # raw HTML would render
    assert "&lt;!-- hides the rest" in md
    if shutil.which("pdflatex"):
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=HANG)
        assert done.returncode == 0 and (tmp_path / "report.pdf").stat().st_size > 1000, done.stdout[-3000:]


def test_a_name_cannot_be_a_live_link_in_report_md():
    """Hostile re-run: a system named like a Markdown link was a live javascript: link in report.md."""
    from nteval.report.document import to_markdown

    name = "bm25`code`*em*[l](javascript:alert(1))"
    md = to_markdown([("table", ["system", "RR [95% CI]"], [[name, "0.5 [0.4, 0.6]"]]), ("p", f"best: {name}")],
                     escape_html=True)
    assert "](javascript" not in md and md.count("[l]\\(javascript:alert(1))") == 2
    assert "0.5 [0.4, 0.6]" in md  # the intervals read as before


def test_booktabs_table_and_escapes():
    assert latex_escape("bm25_k1.2 50% R&D #3 {a} ~ ^ \\") == \
        r"bm25\_k1.2 50\% R\&D \#3 \{a\} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    assert latex_escape("τ_AP −0.2 [-0.138, 0.6]") == r"$\tau_{\mathrm{AP}}$ $-$0.2 [$-$0.138, 0.6]"
    assert latex_escape("**bold** a-1") == "bold a-1"  # markdown emphasis dropped, a hyphen in a name kept
    t = booktabs(["system", "RR"], [["a_b", "0.5000"]], "focused: 50 % of topics")
    assert t.splitlines()[3:] == [r"\caption{focused: 50 \% of topics}", r"\begin{tabular}{lr}", r"\toprule",
                                  r"system & RR \\", r"\midrule", r"a\_b & 0.5000 \\", r"\bottomrule", r"\end{tabular}",
                                  r"\end{table}"]
