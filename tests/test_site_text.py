"""Spec and protocol text on the site: tags shown as text, whole titles, documents by title, formulas.

Fast checks run on the generated Markdown and the spec files; one ``specformer site``
build without a report (no plots, about fifteen seconds) is shared by the checks of the
rendered pages: no ``</w>`` or ``<s>`` swallowed as an element, titles whole, no document
cited by its bare number, protocol docstrings with no stray backtick and no formula line
turned into a list item, and claim pages that say the site has no report.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from specformer.claims import DOCUMENTS, ClaimError, cut_by_comment, load_claims, parse_spec_file, spec_files
from specformer.site.spectext import DOCUMENT_NUMBER, escape_html, name_documents, segments, spec_markdown

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed")

#: Elements that spec text would make if a tag-like token reached a page unescaped.
SPEC_TOKENS_AS_TAGS = {"w", "s", "unk", "mask", "pad", "cls", "sep", "eos", "bos"}


# --- escaping and naming ------------------------------------------------------------------


@pytest.mark.parametrize(("source", "shown"), [
    ("words as characters plus </w>, the most", "words as characters plus &lt;/w>, the most"),
    ("<s> and </s> and <mask>", "&lt;s> and &lt;/s> and &lt;mask>"),
    ("`a b</w>` stays code", "`a b</w>` stays code"),
    ("``x </w>`` stays code too", "``x </w>`` stays code too"),
    ("$a < b$ and $$\n\\text{a</w>}\n$$ and \\(x<y\\)", "$a < b$ and $$\n\\text{a</w>}\n$$ and \\(x<y\\)"),
    ("```python\n<b>\n```\nthen <b>", "```python\n<b>\n```\nthen &lt;b>"),
    (">>> f('</w>')\n['</w>']\n\nthen <w>", ">>> f('</w>')\n['</w>']\n\nthen &lt;w>"),
    ("a < b, 3 <= 4, \\$5 <i>", "a < b, 3 <= 4, \\$5 &lt;i>"),
])
def test_escape_html_shows_tags_as_text_outside_code_and_math(source, shown):
    assert escape_html(source) == shown
    assert "".join(piece for _, piece in segments(source)) == source


def test_documents_cited_by_number_are_named_by_title_and_numbers_are_left_alone():
    named = name_documents("002's code, (000, 004), 001 says; 1,000 and 37{,}000 and 0.001 and `003` and 009")
    assert named.count('class="sf-doc"') == 4
    assert '<span class="sf-doc" title="002_7a3e4e0c20e9295d.txt">Day 4: Embeddings &amp; Representation Learning' \
           "</span>'s code" in named
    assert "1,000 and 37{,}000 and 0.001 and `003` and 009" in named
    formula = name_documents("$$\n\\text{after the FFN (000, 004)}\\quad 000\n$$")
    assert "\\text{after the FFN (C-4: Transformer Architecture, Attention \\& Transformers)}\\quad 000" in formula


def test_document_titles_are_the_documents_own_first_headings():
    if not SEEDS.is_dir():
        pytest.skip(f"the source documents are not at {SEEDS}")
    for name, title in DOCUMENTS.items():
        lines = [line.strip() for line in (SEEDS / name).read_text(encoding="utf-8").splitlines()]
        body = lines[lines.index("---", 1) + 1:] if lines[0] == "---" else lines  # a slide deck's YAML settings
        # a saved web page opens with its "Skip to content" link, then its title
        first = next(line for line in body if line and line != "Skip to content")
        assert title == first.removeprefix("# "), name


def test_the_catalogue_cites_only_known_documents_and_every_number_has_a_title():
    numbers = {name[:3] for name in DOCUMENTS}
    for claim in load_claims().values():
        text = " ".join([claim.title, claim.note, claim.prose, claim.contradiction, claim.as_written])
        assert {m.group(1) for m in DOCUMENT_NUMBER.finditer(text)} <= numbers, claim.id


# --- titles whole -------------------------------------------------------------------------


def test_every_claim_title_is_the_title_as_written():
    claims = load_claims()
    seen = 0
    for path in spec_files():
        for block in re.findall(r"^```yaml claim[ \t]*\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M):
            raw = next(line for line in block.splitlines() if line.startswith("title:"))[len("title:"):].strip()
            written = yaml.safe_load(raw) if raw[:1] in "\"'" else raw  # a quoted scalar is never cut
            claim_id = yaml.safe_load(block)["id"]
            assert claims[claim_id].title == written, (path.name, claim_id)
            seen += 1
    assert seen == len(claims)
    assert claims["sentencepiece.markers-track-boundaries"].title.startswith("The ## and ▁ markers recover")


def test_a_value_cut_at_a_comment_is_refused(tmp_path):
    assert cut_by_comment("id: a.b\ntitle: pieces with ## and more\n") == "pieces with"
    assert cut_by_comment('id: a.b\ntitle: "pieces with ## and more"\n# a comment on its own line\n') is None
    spec = tmp_path / "topic.md"
    spec.write_text("```yaml claim\nid: topic.x\ntitle: The ## marker\n```\n", encoding="utf-8")
    with pytest.raises(ClaimError, match=r"'The' is cut short at ' #'.*quote the whole value"):
        parse_spec_file(spec)


# --- generated Markdown --------------------------------------------------------------------


def test_claim_pages_escape_titles_sources_statements_and_prose():
    from specformer.site.pages import claim_page

    claims = load_claims()
    page = claim_page(claims["bpe.gpt2-byte-level"], [], None)
    assert page.startswith("# transformers' GPT-2 and RoBERTa tokenizers are byte-level BPE, XLM's is character-level "
                           "BPE with &lt;/w>\n")
    page = claim_page(claims["bpe.learn-bpe-merges"], [], None)
    assert "words as characters plus &lt;/w>, the most frequent pair" in page
    prose = "".join(piece for kind, piece in segments(page) if kind == "text")
    assert re.search(r"<(?!/?(span|details|summary)\b)[a-z/]", prose) is None


def test_the_not_applicable_table_of_an_implementation_page_renders():
    from test_site_safety import site_markdown

    from specformer.site.implementations import implementation_page

    claims = load_claims()
    bpe = [c for c in claims.values() if c.topic == "bpe"][:3]
    rows = [{"claim": c.id, "property": "bpe.p", "implementation": "mine", "device": "cpu", "dtype": "float32",
             "outcome": "not-applicable" if n else "pass"} for n, c in enumerate(bpe)]
    page = implementation_page("mine", claims, rows)
    rendered = site_markdown().convert(page)
    folded = rendered[rendered.index('<details class="sf-na"'):]
    assert "<summary>2 claims not applicable</summary>" in folded and "<table>" in folded
    assert "|---|" not in rendered and "](../claims/" not in rendered  # no Markdown left raw
    assert f'<a href="../claims/{bpe[1].id}.md">' in folded


# --- protocol docstrings, at the source ----------------------------------------------------


def protocol_docstrings() -> dict[str, str]:
    """Every docstring of the protocol's modules (module, classes, methods, properties), by name."""
    from specformer.protocol import FAMILIES

    found: dict[str, str] = {}
    for name in ["base", "capabilities", *FAMILIES]:
        module = importlib.import_module(f"specformer.protocol.{name}")
        found[module.__name__] = inspect.getdoc(module) or ""
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                found[f"{module.__name__}.{cls.__name__}"] = inspect.getdoc(cls) or ""
                for member, value in vars(cls).items():
                    if callable(value) or isinstance(value, property):
                        found[f"{module.__name__}.{cls.__name__}.{member}"] = inspect.getdoc(value) or ""
    return found


def outside_fences(doc: str) -> list[str]:
    """The lines of a docstring outside fenced code blocks."""
    lines, fence = [], None
    for line in doc.splitlines():
        opened = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and opened and opened.group(1).startswith(fence):
            fence = None
        elif fence is None:
            lines.append(line)
    return lines


def test_protocol_docstrings_close_inline_code_on_its_line_and_start_no_line_with_an_operator():
    for name, doc in protocol_docstrings().items():
        for line in outside_fences(doc):
            runs: list[str] = []
            for run in re.findall(r"`+", line):
                runs.pop() if runs and runs[-1] == run else runs.append(run)
            assert not runs, f"{name}: inline code not closed on its line: {line!r}"
            # a wrapped formula whose line starts with an operator becomes a list item
            assert not re.match(r"\s*[-+=]\s", line), f"{name}: a line starts with an operator: {line!r}"
            assert not re.match(r"\s+\*\s", line), f"{name}: an indented '* ' starts a nested list: {line!r}"


# --- the built site ------------------------------------------------------------------------


class Page(HTMLParser):
    """An HTML page's elements and text; ``<title>`` read as text, as browsers do (RCDATA)."""

    CDATA_CONTENT_ELEMENTS = ("script", "style", "title", "textarea")

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.stack: list[str] = []
        self.text: list[tuple[str, str]] = []  # (innermost code/pre/title element or "", text)
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in ("code", "pre", "title", "script", "style"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append((self.stack[-1] if self.stack else "", data))

    def visible(self, outside_code: bool = False) -> str:
        """The page's text (without scripts and styles; without code when asked), whitespace collapsed."""
        skip = {"script", "style", "title"} | ({"code", "pre"} if outside_code else set())
        return " ".join(" ".join(data for where, data in self.text if where not in skip).split())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``specformer site -o DIR --no-plots`` without a report, from a folder outside the checkout."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed")
    folder = tmp_path_factory.mktemp("site-text")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "specformer", "site", "-o", "out", "--no-plots"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "built without a report" in done.stdout
    return folder / "out"


def page(site: Path, path: str) -> Page:
    return Page((site / path / "index.html").read_text(encoding="utf-8"))


@needs_mkdocs
def test_no_page_swallows_spec_text_as_an_element(site):
    for path in site.rglob("*.html"):
        tags = {tag.lstrip("/") for tag in Page(path.read_text(encoding="utf-8")).tags}
        assert not tags & SPEC_TOKENS_AS_TAGS, (path.relative_to(site), tags & SPEC_TOKENS_AS_TAGS)
    for claim in ("bpe.learn-bpe-merges", "bpe.gpt2-byte-level", "bpe.longest-match"):
        source = (site / "claims" / claim / "index.html").read_text(encoding="utf-8")
        assert "&lt;/w&gt;" in source, claim
    learn = page(site, "claims/bpe.learn-bpe-merges").visible()
    assert "words as characters plus </w>, the most frequent pair" in learn
    heading = page(site, "claims/bpe.gpt2-byte-level")
    assert "XLM's is character-level BPE with </w>" in heading.visible()
    assert "with </w> - specformer" in "".join(data for where, data in heading.text if where == "title")
    assert "(mat.</w>)" in page(site, "claims/vocabulary.unit-table").visible()
    assert "</w>" in page(site, "topics/bpe").visible()
    assert "<s>" in page(site, "claims/vocabulary.special-tokens").visible()


@needs_mkdocs
def test_titles_are_whole_on_their_pages(site):
    shown = page(site, "claims/sentencepiece.markers-track-boundaries")
    assert "The ## and ▁ markers recover the words, unless a word itself begins with the marker" in shown.visible()
    assert 'BERT\'s WordPiece splits "embeddings" into em, ##bed, ##ding, ##s' in \
        page(site, "claims/wordpiece.embeddings-example").visible()


@needs_mkdocs
def test_documents_are_named_by_their_title_never_by_number(site):
    for path in [*sorted((site / "claims").glob("*/index.html")), *sorted((site / "protocol").glob("*/index.html")),
                 *sorted((site / "families").glob("*/index.html"))]:
        text = Page(path.read_text(encoding="utf-8")).visible(outside_code=True)
        left = [text[max(0, m.start() - 30):m.end() + 20] for m in DOCUMENT_NUMBER.finditer(text)]
        assert not left, (path.relative_to(site), left)
    learn = page(site, "claims/bpe.learn-bpe-merges").visible()
    assert "Natural Language Processing's learn_bpe_merges" in learn


@needs_mkdocs
def test_without_a_report_claim_pages_say_so(site):
    from specformer.site.pages import NO_RESULTS

    said = " ".join(NO_RESULTS.replace("`", "").split())
    assert said in page(site, "claims/attention.weights-sum-to-one").visible()
    assert said in page(site, "claims").visible() and said in page(site, "implementations").visible()
    assert (site / "protocol" / "tokenization" / "index.html").is_file()


def bullet_starts() -> set[str]:
    """The first letters and digits of every ``* `` item the protocol pages are written from."""
    from specformer.protocol import FAMILIES
    from specformer.site.protocol import protocol_page

    sources = [*protocol_docstrings().values(), *(protocol_page(f) for f in FAMILIES)]
    starts = set()
    for source in sources:
        for line in outside_fences(re.sub(r":\w+:`~?\.?([^`]+)`", r"\1", source)):
            found = re.match(r"\s*\* (.+)", line)
            if found:
                starts.add(re.sub(r"\W", "", found.group(1))[:24])
    return starts


@needs_mkdocs
def test_protocol_pages_keep_inline_code_and_formulas_whole(site):
    starts = bullet_starts()
    for path in sorted((site / "protocol").glob("*/index.html")):
        source = path.read_text(encoding="utf-8")
        article = source[source.index("<article"):source.index("</article>")]
        shown = Page(article)
        assert "`" not in shown.visible(outside_code=True), path.relative_to(site)  # a stray or broken code span
        for item in re.findall(r"<li>(.*?)(?=</li>|<ul>|<ol>)", article, re.S):
            start = re.sub(r"\W", "", html.unescape(re.sub(r"<[^>]+>", "", item)))[:24]
            assert start in starts, (path.relative_to(site), "a list item no '* ' line of the source starts:", start)
    embeddings = page(site, "protocol/embeddings")
    code = "".join(data for where, data in embeddings.text if where in ("code", "pre"))
    assert "sum_{X_ij > 0} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2" in code
    assert "p(w | w_I) = exp(v'_w . v_I) / sum_u exp(v'_u . v_I)" in code


@needs_mkdocs
def test_the_tokenization_protocol_page_states_the_end_of_word_convention(site):
    shown = page(site, "protocol/tokenization")
    code = " ".join("".join(data for where, data in shown.text if where in ("code", "pre")).split())
    assert ">>> bpe_encode('low', []) ['l', 'o', 'w', '</w>']" in code
    assert ">>> bpe_encode('low', [('w', '</w>')]) ['l', 'o', 'w</w>']" in code
    assert 'bpe_encode("low", []) == ["l", "o", "w", "</w>"]' in code  # the module docstring, in the reference part
    assert "The end-of-word marker is a symbol of its own" in shown.visible()


def test_spec_markdown_is_idempotent_on_what_it_escapes():
    once = spec_markdown("a </w> b")
    assert spec_markdown(once) == once
