"""Griffe extension: render clickrank's reStructuredText docstring markup as Markdown.

clickrank's docstrings are numpy style (sections are parsed by griffe) but use a few
reStructuredText constructs inside the text, as scientific Python code does. mkdocstrings
renders docstring text as Markdown, so before parsing this extension rewrites:

* ``.. math::`` blocks and ``:math:`x``` roles to MathML (``latex2mathml``), which browsers
  render natively: no JavaScript and no network at view time (LaTeX that does not convert
  is shown as code);
* ``.. note::`` / ``.. warning::`` to Material admonitions;
* ``:func:`~pkg.mod.f```, ``:class:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:``,
  ``:exc:``, ``:obj:`` to code spans (``~`` keeps the last name, as in Sphinx);
  ``:cite:p:`key``` to plain text;
* literal blocks introduced by ``::`` to fenced code blocks;
* simple tables (``====  ====`` borders) to Markdown tables.

Used by ``mkdocs.yml`` (mkdocstrings ``extensions``); the source docstrings are not changed.
"""

from __future__ import annotations

import re
import textwrap

from griffe import Extension
from latex2mathml.converter import convert as _latex_to_mathml

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")
_MATH = re.compile(r":math:`([^`]+)`")
_CITE = re.compile(r":cite:[a-z]*:`([^`]+)`")
_DIRECTIVE = re.compile(r"^(\s*)\.\. (math|note|warning)::\s*(.*)$")
_BORDER = re.compile(r"^(\s*)=+(?: +=+)+\s*$")
_TYPED_SECTIONS = {
    "parameters",
    "other parameters",
    "returns",
    "yields",
    "receives",
    "raises",
    "warns",
    "attributes",
}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str], start: int, indent: int) -> int:
    """Index after the block of lines indented deeper than ``indent`` starting at ``start``."""
    end = start
    i = start
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        if _indent(lines[i]) <= indent:
            break
        i += 1
        end = i
    return end


def _mathml(latex: str, display: str) -> str:
    try:
        html = _latex_to_mathml(latex.strip(), display=display).replace("\n", "")
    except Exception:  # noqa: BLE001 - unknown macro etc.: show the source instead
        return f"`{latex.strip()}`"
    # Python-Markdown treats <math> as a block-level tag: a line starting with it would become
    # a block of its own. A span keeps inline math inside its paragraph.
    return html if display == "block" else f'<span class="math">{html}</span>'


def _role(match: re.Match) -> str:
    tilde, target = match.groups()
    name = target.split(".")[-1] if tilde else target
    return f"`{name}`"


def _inline(text: str) -> str:
    text = _MATH.sub(lambda m: _mathml(m.group(1), "inline"), text)
    text = _CITE.sub(lambda m: m.group(1), text)
    return _ROLE.sub(_role, text)


def _table(lines: list[str], start: int) -> tuple[list[str], int] | None:
    """Convert the simple table starting at border line ``start``; None if it is not one."""
    border = lines[start]
    pad = _indent(border)
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    borders = [start]
    i = start + 1
    while i < len(lines) and len(borders) < 3:
        if not lines[i].strip():
            return None
        if _BORDER.match(lines[i]):
            borders.append(i)
        i += 1
    if len(borders) < 3:
        return None

    def cells(line: str) -> list[str]:
        out = []
        for k, (a, _) in enumerate(spans):
            end = spans[k + 1][0] if k + 1 < len(spans) else len(line)
            out.append(line[a:end].strip())
        return out

    header = [cells(ln) for ln in lines[borders[0] + 1 : borders[1]]]
    rows: list[list[str]] = []
    for ln in lines[borders[1] + 1 : borders[2]]:
        if not ln.strip():
            continue
        c = cells(ln)
        if rows and not c[0]:  # continuation line of the previous row
            rows[-1] = [f"{p} {q}".strip() for p, q in zip(rows[-1], c, strict=True)]
        else:
            rows.append(c)
    head = [" ".join(col).strip() for col in zip(*header, strict=True)] if header else []
    prefix = " " * pad

    def md(row: list[str]) -> str:
        return prefix + "| " + " | ".join(_inline(c).replace("|", r"\|") for c in row) + " |"

    out = ["", md(head), prefix + "|" + "---|" * len(spans)] + [md(r) for r in rows] + [""]
    return out, borders[2] + 1


def rst_to_markdown(text: str) -> str:
    """Rewrite the reStructuredText constructs listed in the module docstring as Markdown."""
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()) and line.strip():
            section = line.strip().lower()
        elif section in _TYPED_SECTIONS and line and not line[0].isspace() and " : " in line:
            # "name : type": the type is shown as code already; drop RST literal quotes in it
            name, _, kind = line.partition(" : ")
            line = f"{name} : {kind.replace('``', '')}"
        directive = _DIRECTIVE.match(line)
        if directive:
            pad, kind, first = directive.groups()
            end = _block(lines, i + 1, len(pad))
            body = textwrap.dedent("\n".join(lines[i + 1 : end])).strip("\n").split("\n")
            body = ([first] if first else []) + [b for b in body if b or first or kind != "math"]
            if kind == "math":
                out += ["", pad + _mathml("\n".join(b for b in body if b.strip()), "block")]
            else:
                out.append(f"{pad}!!! {kind}")
                out += [(pad + "    " + _inline(b)) if b.strip() else "" for b in body]
            out.append("")
            i = end
            continue
        if _BORDER.match(line):
            converted = _table(lines, i)
            if converted is not None:
                out += converted[0]
                i = converted[1]
                continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            end = _block(lines, i + 1, _indent(line))
            code = textwrap.dedent("\n".join(lines[i + 1 : end])).strip("\n")
            stem = line.rstrip()[:-2].rstrip()
            if stem.strip():
                out.append(_inline(stem) + ":")
            if code:
                pad = " " * _indent(line)
                out += ["", pad + "```text", *(pad + c for c in code.split("\n")), pad + "```", ""]
            i = end
            continue
        out.append(_inline(line))
        i += 1
    return "\n".join(out)


class RstToMarkdown(Extension):
    """Rewrite each docstring once, when griffe creates the object."""

    def on_instance(self, *, obj, **kwargs) -> None:  # noqa: D102 - griffe hook
        doc = getattr(obj, "docstring", None)
        if doc is not None and doc.value:
            doc.value = rst_to_markdown(doc.value)
