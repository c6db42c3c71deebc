"""Spec and docstring text on the site: raw HTML shown as text, documents named by title.

The spec's titles, statements, notes and prose, and the protocol's docstrings, are
Markdown with LaTeX, written by us; they reach the pages as Markdown, so their emphasis,
links, code and formulas render. Two things in them must not be taken as markup:

* text that looks like an HTML tag: BPE's end-of-word marker ``</w>`` and special tokens
  such as ``<s>`` would be swallowed by the browser as unknown elements.
  :func:`escape_html` writes each ``<`` that opens such a tag as ``&lt;``;
* the documents' file numbers (``000`` to ``004``, as in "002's code" or "(000, 004)"):
  :func:`name_documents` writes each as the document's title (its first heading,
  :data:`specformer.claims.DOCUMENTS`), with the file name in a tooltip.

Both leave code alone (code spans, fenced blocks, ``>>>`` examples: Markdown shows them
literally already) and leave formulas alone (``$...$``, ``$$...$$``, ``\\(...\\)``,
``\\[...\\]``: pymdownx.arithmatex escapes them itself), except that a document number
inside a formula's ``\\text{...}`` is written as the title too. :func:`spec_markdown` does
both. Reports are not spec text: their values go through
:func:`specformer.site.tables.text`, which escapes every Markdown character as well.
"""

from __future__ import annotations

import html
import re
from typing import Callable

from specformer.claims import DOCUMENTS, Claim

__all__ = ["DOCUMENT_NUMBER", "document_by_number", "escape_html", "name_documents", "segments", "spec_inline",
           "spec_markdown", "title_link"]

#: A document's file number standing alone: ``002's``, ``(000, 004)``; never part of a
#: number such as ``1,000``, ``37{,}000`` or ``0.001``.
DOCUMENT_NUMBER = re.compile(r"(?<![\w.,{}$^\\/-])(00\d)(?![\w{}]|[.,]\d)")

#: ``<`` where a browser would start a tag, a closing tag, a comment or a declaration.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_DOCTEST = re.compile(r"^[ \t]*>>>( |$)")
#: Inline code and math, in the order Markdown and arithmatex try them; a backslash
#: escape is matched first so that ``\\$`` opens no formula.
_INLINE = re.compile(
    r"(?P<escape>\\[\\`$])"
    r"|(?P<code>(?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`))"
    r"|(?P<math>\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)|\\begin\{(?P<env>[a-z]+\*?)\}.+?\\end\{(?P=env)\}"
    r"|\$(?!\s)(?:\\.|[^\\$])+?(?<!\s)\$)",
    re.DOTALL)
_TEXT_COMMAND = re.compile(r"\\text(?:tt|rm|it|bf)?\{([^{}]*)\}")


def document_by_number() -> dict[str, str]:
    """The documents' file names by their three-digit number: ``{"000": "000_4860f8a30b907c6c.txt", ...}``."""
    return {name[:3]: name for name in DOCUMENTS}


def _blocks(markdown: str) -> list[tuple[str, str]]:
    """``markdown`` cut into ``("code", ...)`` blocks (fenced code, ``>>>`` examples) and ``("text", ...)``."""
    out: list[tuple[str, str]] = []
    fence: str | None = None
    doctest = False
    for line in markdown.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if fence is not None:
            kind = "code"
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line.strip()[len(opened.group(1)):]:
                fence = None
        elif opened:
            kind, fence = "code", opened.group(1)
        elif doctest and line.strip():
            kind = "code"
        else:
            doctest = bool(_DOCTEST.match(line))
            kind = "code" if doctest else "text"
        if not line.strip():
            doctest = False
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + line)
        else:
            out.append((kind, line))
    return out


def segments(markdown: str) -> list[tuple[str, str]]:
    """``markdown`` cut into ``(kind, piece)`` pairs, kind ``"text"``, ``"code"`` or ``"math"``;
    the pieces joined give ``markdown`` back."""
    out: list[tuple[str, str]] = []
    for kind, block in _blocks(markdown):
        if kind == "code":
            out.append((kind, block))
            continue
        # inline code and math never cross a blank line (a paragraph's end)
        for paragraph in re.split(r"(\n[ \t]*\n)", block):
            start = 0
            for match in _INLINE.finditer(paragraph):
                found = next(k for k in ("escape", "code", "math") if match.group(k) is not None)
                if found == "escape":
                    continue
                out.append(("text", paragraph[start:match.start()]))
                out.append((found, match.group(0)))
                start = match.end()
            out.append(("text", paragraph[start:]))
    return [(kind, piece) for kind, piece in out if piece]


def _map_text(markdown: str, on_text: Callable[[str], str],
              on_math: Callable[[str], str] = lambda piece: piece) -> str:
    return "".join(on_text(piece) if kind == "text" else on_math(piece) if kind == "math" else piece
                   for kind, piece in segments(markdown))


def escape_html(markdown: str) -> str:
    """``markdown`` with every ``<`` that would open an HTML tag, outside code and math,
    written ``&lt;``: ``</w>`` and ``<s>`` are shown, never taken as elements."""
    return _map_text(markdown, lambda piece: _TAG_OPEN.sub("&lt;", piece))


def _title_span(match: re.Match[str]) -> str:
    name = document_by_number().get(match.group(1))
    if name is None:
        return match.group(0)
    return f'<span class="sf-doc" title="{html.escape(name)}">{html.escape(DOCUMENTS[name])}</span>'


def _title_in_formula(piece: str) -> str:
    def text_command(match: re.Match[str]) -> str:
        def title(number: re.Match[str]) -> str:
            name = document_by_number().get(number.group(1))
            return latex_text(DOCUMENTS[name]) if name else number.group(0)

        return match.group(0).replace(match.group(1), DOCUMENT_NUMBER.sub(title, match.group(1)))

    return _TEXT_COMMAND.sub(text_command, piece)


#: Characters TeX reads as commands inside ``\\text{...}``, and how to write them as themselves there.
_TEX_SPECIAL = {"&": r"\&", "%": r"\%", "#": r"\#", "_": r"\_", "$": r"\$", "{": r"\{", "}": r"\}"}


def latex_text(text: str) -> str:
    """``text`` for the inside of a formula's ``\\text{...}``: ``&``, ``%``, ``#``, ``_`` and the other
    characters TeX would read as commands escaped (a document title holds ``&``)."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)


def heading_text(text: str) -> str:
    """A Markdown heading's text that keeps a trailing ``#`` (Markdown takes a heading's closing hashes as
    markup and drops them: "... marks pieces with ##" would lose its ``##``)."""
    stripped = text.rstrip()
    trailing = len(stripped) - len(stripped.rstrip("#"))
    return stripped[:len(stripped) - trailing] + "\\#" * trailing if trailing else text


def name_documents(markdown: str) -> str:
    """``markdown`` with each document number outside code written as the document's title
    (the file name in its tooltip); inside a formula only in ``\\text{...}``, as plain text."""
    return _map_text(markdown, lambda piece: DOCUMENT_NUMBER.sub(_title_span, piece), _title_in_formula)


def spec_markdown(markdown: str) -> str:
    """Spec or docstring Markdown as a page writes it: :func:`escape_html`, then :func:`name_documents`."""
    return name_documents(escape_html(markdown))


def spec_inline(value: str) -> str:
    """A one-line spec value (a title, a section, a quotation) for a heading, a link or a
    table cell: whitespace collapsed, then :func:`spec_markdown`."""
    return spec_markdown(" ".join(value.split()))


def title_link(claim: Claim, prefix: str = "") -> str:
    """A Markdown link to a claim's page (``prefix`` leads to the claims' folder), the
    claim's title its text (:func:`spec_inline`; ``|`` written as its HTML entity, which a table cell
    holds and the page shows as ``|``)."""
    return f"[{spec_inline(claim.title).replace('|', '&#124;')}]({prefix}{claim.id}.md)"
