"""A report as a list of blocks, written three ways: Markdown (report.md, the terminal), HTML
(report.html, for a person) and LaTeX booktabs tables (report.tex, for a paper). One source, so the
three never disagree on a number.

A block is ``("h2", text)``, ``("p", text)``, ``("ul", [[line, ...], ...])`` (an item's first
line, then its continuation lines; a continuation that is a list of lines is a nested list, one
bullet per line: a reason's examples under it), ``("table", header, rows)`` (names, then numbers) or
``("kv", [[key, value], ...])`` (settings: text, not numbers; not a table for a paper).
``**x**`` marks bold text.
"""
from __future__ import annotations

import html
import re
from typing import Any

Block = tuple[Any, ...]

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_NEGATIVE = re.compile(r"(?<![\w.])-(?=\d)")


def _md_cell(text: str, esc=str) -> str:
    """A ``|`` inside a name would end its table cell."""
    return esc(str(text)).replace("|", "\\|")


def _md_escape(text: str) -> str:
    """``<``, ``>`` and ``&`` as entities: a Markdown renderer passes raw HTML through, so a system
    named ``<!--`` would hide the rest of the page; and ``](`` broken (``]\\(``), so that a name
    cannot be a live link or image (``[x](javascript:…)``); the report's own figures are written outside it."""
    return html.escape(str(text), quote=False).replace("](", "]\\(")


def to_markdown(blocks: list[Block], escape_html: bool = False) -> str:
    """The blocks as Markdown; ``escape_html`` for a file a renderer will show (report.md), not for
    the terminal."""
    esc = _md_escape if escape_html else str
    lines: list[str] = []
    for b in blocks:
        if b[0] == "h2":
            lines += [f"## {esc(b[1])}", ""]
        elif b[0] == "p":
            lines += [esc(b[1]), ""]
        elif b[0] == "ul":
            for item in b[1]:
                lines.append(f"- {esc(item[0])}")
                for more in item[1:]:
                    lines += [f"  - {esc(x)}" for x in more] if isinstance(more, list) else [f"  {esc(more)}"]
            lines.append("")
        elif b[0] == "kv":
            lines += [f"- **{esc(k)}**: {esc(v)}" for k, v in b[1]] + [""]
        elif b[0] == "table":
            lines += ["| " + " | ".join(_md_cell(c, esc) for c in b[1]) + " |", "|" + "---|" * len(b[1])]
            lines += ["| " + " | ".join(_md_cell(c, esc) for c in row) + " |" for row in b[2]]
            lines.append("")
    return "\n".join(lines)


def inline_html(text: str) -> str:
    """Escaped text with ``**bold**`` as <strong>."""
    return _BOLD.sub(r"<strong>\1</strong>", html.escape(str(text)))


_CI = re.compile(r"(\[[^\]<>]{1,40}\])")
_NOWRAP = r"<span class='ci'>\1</span>"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    """A table that fits the page: cells wrap between a value and its [CI], never inside the CI."""
    head = "".join(f"<th scope='col'>{inline_html(c)}</th>" for c in header)
    body = "\n".join("<tr>" + f"<th scope='row'>{inline_html(row[0])}</th>"
                     + "".join(f"<td>{_CI.sub(_NOWRAP, inline_html(c))}</td>" for c in row[1:])
                     + "</tr>" for row in rows)
    return f"<div class='scroll'><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>"


def _li(item: list[Any]) -> str:
    """A list item's lines (``<br>`` between continuation lines), its nested list last."""
    text = "<br>".join(inline_html(x) for x in item if not isinstance(x, list))
    nested = "".join("<ul>" + "".join(f"<li>{inline_html(y)}</li>" for y in x) + "</ul>" for x in item if isinstance(x, list))
    return text + nested


def to_html(blocks: list[Block]) -> str:
    """Body HTML; a table's first column (names) is a row header, the rest are numbers."""
    out = []
    for b in blocks:
        if b[0] == "h2":
            out.append(f"<h2>{inline_html(b[1])}</h2>")
        elif b[0] == "p":
            out.append(f"<p>{inline_html(b[1])}</p>")
        elif b[0] == "ul":
            out.append("<ul>" + "".join("<li>" + _li(item) + "</li>" for item in b[1]) + "</ul>")
        elif b[0] == "table":
            out.append(_html_table(b[1], b[2]))
        elif b[0] == "kv":
            out.append("<table class='kv'>" + "".join(f"<tr><th scope='row'>{inline_html(k)}</th><td>{inline_html(v)}</td></tr>"
                                                      for k, v in b[1]) + "</table>")
    return "\n".join(out)


CSS = """
:root{color-scheme:light;--ink:#1b1b1b;--muted:#555;--rule:#d0d0d0;--band:#f4f6f8}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:17px;
 line-height:1.55;color:var(--ink);background:#fff;max-width:72rem;margin:0 auto;padding:1.5rem 1.25rem 4rem}
h1{font-size:1.8rem;line-height:1.25;margin:0 0 .25rem}
h2{font-size:1.3rem;margin:2.2rem 0 .6rem;padding-bottom:.2rem;border-bottom:1px solid var(--rule)}
p,li{max-width:48rem}
.meta{color:var(--muted);margin-top:0}
time{white-space:nowrap}
.scroll{overflow-x:auto;margin:.6rem 0 1rem}
table{border-collapse:collapse;font-size:.85rem}
th,td{padding:.25rem .5rem;border-bottom:1px solid var(--rule);vertical-align:top}
thead th{border-bottom:2px solid var(--ink);text-align:right}
td{text-align:right;font-variant-numeric:tabular-nums}
td .ci{white-space:nowrap}
thead th:first-child,tbody th{text-align:left;font-weight:normal}
tbody tr:nth-child(even){background:var(--band)}
table.kv{margin:.6rem 0 1rem}
table.kv th{text-align:left;font-weight:600;padding-right:1.5rem;white-space:nowrap}
table.kv td{text-align:left;white-space:normal;overflow-wrap:anywhere}
figure{margin:1.5rem 0}
figure img{display:block;width:100%;max-width:60rem;height:auto;border:1px solid var(--rule)}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(20rem,1fr));gap:0 1.5rem}
.figures figure{margin:.75rem 0}
.figures figcaption{font-size:.85rem}
figcaption{color:var(--muted);margin-top:.4rem;max-width:48rem}
code{font-size:.92em}
"""


def html_page(title: str, body: str) -> str:
    """A self-contained page (no network): readable measure, responsive images and tables."""
    return ("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n")


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
          ">": r"\textgreater{}", "|": r"\textbar{}", "τ": r"$\tau$", "−": r"$-$", "≥": r"$\geq$", "≤": r"$\leq$",
          "…": r"\ldots{}", "×": r"$\times$", "–": "--", "—": "---", "ρ": r"$\rho$"}


def latex_escape(text: str) -> str:
    """Text safe in a LaTeX table cell (a system name may hold ``_``, ``%``, ``&``, ``#``…)."""
    s = "".join(_LATEX.get(ch, ch) for ch in _BOLD.sub(r"\1", str(text)))
    s = _NEGATIVE.sub(r"$-$", s)  # a minus sign, not a hyphen, before a number
    return s.replace(r"$\tau$\_AP", r"$\tau_{\mathrm{AP}}$")


def booktabs(header: list[str], rows: list[list[str]], caption: str) -> str:
    """One table: first column left-aligned (names), the others right-aligned (numbers)."""
    spec = "l" + "r" * (len(header) - 1)
    row = lambda cells: " & ".join(latex_escape(c) for c in cells) + r" \\"  # noqa: E731
    return "\n".join([r"\begin{table}[htbp]", r"\centering", r"\small", f"\\caption{{{latex_escape(caption)}}}",
                      f"\\begin{{tabular}}{{{spec}}}", r"\toprule", row(header), r"\midrule",
                      *(row(r) for r in rows), r"\bottomrule", r"\end{tabular}", r"\end{table}"])


def to_latex(blocks: list[Block], title: str) -> str:
    """A compilable document of every table, each captioned by the heading above it; copy the
    ``table`` environments into a paper (needs ``booktabs``)."""
    tables, heading = [], title
    for b in blocks:
        if b[0] == "h2":
            heading = b[1]
        elif b[0] == "table":
            tables.append(booktabs(b[1], b[2], heading))
    return "\n".join([r"\documentclass{article}", r"\usepackage[T1]{fontenc}", r"\usepackage[utf8]{inputenc}",
                      r"\usepackage{booktabs}", r"\usepackage[margin=2cm,landscape]{geometry}", r"\begin{document}",
                      f"% {latex_escape(title)}", "", "\n\n".join(tables), "", r"\end{document}", ""])
