"""The documentation site: generated pages and an end-to-end ``mkdocs build --strict``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from specformer.claims import Claim, Source, load_claims
from specformer.property import Property
from specformer.site.pages import claim_page, generate, overview_page, topic_index

ROOT = Path(__file__).resolve().parent.parent
SUMS = "attention.weights-sum-to-one"
VAR = "attention.scaling-variance"


def rows_sum_to_one(ctx, case):
    """Every row of the weights sums to one."""
    weights = ctx.weights(case.q, case.k, case.v)
    ctx.assert_close(weights.sum(-1), 1.0)


def variance_is_always_one(ctx, d_k):
    """The claim as written: scaled scores always have unit variance."""
    assert d_k > 0


def make_claims() -> dict[str, Claim]:
    sums = Claim(
        id=SUMS, title="Attention weights sum to one", topic="attention", file="attention.md",
        sources=(Source("004_47c0b0031f022460.txt", "Attention weights", "rows are distributions"),),
        kind="exact identity", verdict="holds",
        statement=r"\sum_j A_{ij} = 1", prose="Softmax normalises each row; see [masks](masks.md).",
    )
    var = Claim(
        id=VAR, title="Scaling gives unit variance", topic="attention", file="attention.md",
        sources=(Source("000_4860f8a30b907c6c.txt", "Scaled attention"),),
        kind="statistical", verdict="false as stated",
        statement=r"\operatorname{Var}(q \cdot k / \sqrt{d_k}) = 1",
        as_written="the scaled scores always have unit variance",
        corrected=r"\operatorname{Var} = 1 \text{ for i.i.d. unit-variance entries}",
        false_alarm="chi-square test at alpha = 1e-6",
    )
    return {c.id: c for c in (sums, var)}


def make_props() -> dict[str, Property]:
    hold = Property(claim=SUMS, function=rows_sum_to_one, expect="hold", needs=("attention",),
                    dtypes=None, max_examples=None, module="attention", name="rows_sum_to_one",
                    doc="Every row of the weights sums to one.")
    refute = Property(claim=VAR, function=variance_is_always_one, expect="counterexample", needs=(),
                      dtypes=None, max_examples=None, module="attention", name="variance_is_always_one")
    return {p.qualname: p for p in (hold, refute)}


def row(claim: str, prop: str, impl: str, outcome: str, **extra) -> dict:
    base = {"claim": claim, "property": prop, "implementation": impl, "device": "cpu",
            "dtype": "float32", "expect": "hold", "outcome": outcome,
            "as_expected": outcome in ("pass", "refuted"), "examples": 25, "duration_s": 0.5,
            "message": "", "counterexample": None, "reproduce": ""}
    return {**base, **extra}


FAIL = row(SUMS, "attention.rows_sum_to_one", "torch", "fail",
           message="row sums of A differ from 1 by 0.3",
           counterexample="Falsifying example: rows_sum_to_one(\n    ctx=Context(torch, cpu, float32),\n)",
           reproduce="specformer run --impl torch --claims attention.weights-sum-to-one")
REFUTED = row(VAR, "attention.variance_is_always_one", "math", "refuted", expect="counterexample",
              dtype="float64", counterexample="Falsifying example: d_k=1")


def make_report(rows: list[dict]) -> dict:
    return {
        "schema": "specformer-report", "schema_version": 1,
        "environment": {"specformer": "0.1.0", "python": "3.11.7", "torch": "2.13.0+cpu",
                        "devices": ["cpu"], "cuda": None, "commit": "abc123",
                        "created": "2025-01-01T00:00:00Z", "profile": "ci", "command": "specformer run"},
        "implementations": [{"name": "reference", "spec": "reference", "operations": ["attention"]},
                            {"name": "torch", "spec": "torch", "operations": ["attention"]}],
        "summary": {"rows": len(rows), "by_outcome": {}, "ok": False, "complete": True, "duration_s": 1.0},
        "rows": rows,
    }


def test_claim_page_renders_sources_statement_code_and_failure():
    claims, props = make_claims(), make_props()
    page = claim_page(claims[SUMS], [props["attention.rows_sum_to_one"]],
                      [row(SUMS, "attention.rows_sum_to_one", "reference", "pass"), FAIL],
                      known_topics=["attention", "masks"])
    assert page.startswith("# Attention weights sum to one")
    assert "Attention &amp; Transformers</span>" in page and 'title="004_47c0b0031f022460.txt"' in page
    assert "Attention weights" in page and "rows are distributions" in page
    assert "$$\n\\sum_j A_{ij} = 1\n$$" in page
    assert "```python\n" in page and "def rows_sum_to_one(ctx, case):" in page
    assert "Checks the claim" in page
    assert "???+ failure" in page and '<td class="sf-cell sf-o-fail"' in page
    assert '<a href="#sf-row-1">fail</a>' in page and '<div class="sf-anchor" id="sf-row-1"></div>' in page
    assert '<td class="sf-cell sf-o-pass" title="pass: 25 examples, 0.50 s">pass</td>' in page
    assert "    Falsifying example: rows_sum_to_one(" in page
    assert "    ```bash\n    specformer run --impl torch --claims attention.weights-sum-to-one\n    ```" in page
    assert "](../topics/masks.md)" in page
    assert "(masks.md)" in claim_page(claims[SUMS], [], None)  # unknown topic: left alone


def test_claim_page_shows_refutation_and_correction():
    claims, props = make_claims(), make_props()
    page = claim_page(claims[VAR], [props["attention.variance_is_always_one"]], [REFUTED])
    assert "Refutes the claim as written" in page
    assert '<td class="sf-cell sf-o-refuted"' in page and "??? success" in page
    assert '<span class="sf-role">refutes the claim as written</span>' in page
    assert "## As written" in page and "## Corrected" in page and "## False-alarm bound" in page
    assert "Falsifying example: d_k=1" in page


def test_claim_page_without_report():
    page = claim_page(make_claims()[SUMS], [], None)
    assert "No results yet: this site was built without a report. `specformer run --report R.json`" in page


def test_overview_lists_every_claim_and_implementation():
    claims, props = make_claims(), make_props()
    page = overview_page(claims, props, make_report([FAIL, REFUTED]))
    for claim_id in claims:
        assert f"({claim_id}.md)" in page
    header = next(line for line in page.splitlines() if line.startswith("| Claim |"))
    for impl in ("reference", "torch", "math"):
        assert f"| {impl} " in header + " "
    assert '<span class="sf-outcome sf-o-fail">fail 1/1</span>' in page
    assert '<span class="sf-outcome sf-o-refuted">refuted</span>' in page
    assert "false as stated" in page and "abc123" in page
    assert "## False or imprecise as stated" in page and "Scaling gives unit variance" in page


def test_overview_without_report():
    page = overview_page(make_claims(), {}, None)
    assert "No results yet" in page


def test_topic_index_links_its_claims():
    page = topic_index("attention", make_claims(), "Attention")
    assert page.startswith("# Attention")
    assert f"(../claims/{SUMS}.md)" in page and f"(../claims/{VAR}.md)" in page


def test_generate_without_report(tmp_path):
    pages = generate(tmp_path / "absent.json")
    claims = load_claims()
    assert "claims/index.md" in pages
    for claim in claims.values():
        assert "No results yet" in pages[f"claims/{claim.id}.md"] or not claim.checkable
        assert f"topics/{claim.topic}.md" in pages
    assert generate(None).keys() == pages.keys()


def test_generate_rejects_a_foreign_report(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": "something-else", "schema_version": 1}))
    with pytest.raises(ValueError, match="specformer-report"):
        generate(path)


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed")
def test_mkdocs_build_strict(tmp_path):
    claims = load_claims()
    rows = [row(c.id, "x.y", "reference", "fail", message="boom", counterexample="Falsifying example: x=1",
                reproduce=f"specformer run --claims {c.id}") for c in list(claims.values())[:3]]
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(rows)))
    site = tmp_path / "site"
    env = {**os.environ, "SPECFORMER_REPORT": str(report), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "claims" / "index.html").is_file()
    for claim in claims.values():
        assert (site / "claims" / claim.id / "index.html").is_file()
    assert [p.name for p in (site / "assets" / "mathjax").iterdir()] == ["tex-svg-full.js"]  # one component
    overview = unescape((site / "claims" / "index.html").read_text(encoding="utf-8"))
    assert "torch-sdpa" in overview  # docs/results/cuda-h100.json is listed in mkdocs.yml, so published
    # the published H100 run stopped at its time limit: the site says so, of that run only (the second file
    # holds the three claims it had not finished)
    partial = re.findall(r"Run \d+ \(([^)]*\))[^)]*\) did not complete", overview)
    assert len(partial) == 1 and "cuda-h100.json" in overview and "interrupted" in overview, partial
    assert not re.search(r"cuda-h100-rest\.json\) did not complete", overview)
    page = next((site / "claims").glob("*/index.html"), site / "conventions" / "index.html")
    assert "arithmatex" in page.read_text(encoding="utf-8")
    for html in site.rglob("*.html"):
        assert not re.search(r"<script[^>]*src=\"https?:", html.read_text(encoding="utf-8")), html


def test_reports_of_several_runs_merge_into_one_matrix():
    from specformer.site.pages import merge_reports

    cpu = {**make_report([row(SUMS, "attention.p", "reference", "pass")]), "schema_version": 2}
    cuda_row = {**row(SUMS, "attention.p", "reference", "fail"), "device": "cuda", "dtype": "float16",
                "_specformer_run": 7}
    cuda = make_report([cuda_row])
    cuda["environment"] = {**cuda["environment"], "torch": "2.11.0+cu130", "devices": ["cpu", "cuda"],
                           "cuda": {"device_name": "NVIDIA H100"}, "created": "2026-11-22T11:21:55+00:00"}
    merged = merge_reports([cpu, cuda], ["report.json", "cuda-h100.json"])
    assert {r["device"] for r in merged["rows"]} == {"cpu", "cuda"}
    assert {(r["device"], r["_specformer_run"]) for r in merged["rows"]} == {("cpu", 1), ("cuda", 2)}
    assert "_specformer_run" not in cuda_row or cuda_row["_specformer_run"] == 7  # the input is not changed
    assert [r["source"] for r in merged["runs"]] == ["report.json", "cuda-h100.json"]
    assert merge_reports([]) is None
    assert merge_reports([cpu])["runs"][0]["devices"] == ["cpu"]

    page = claim_page(make_claims()[SUMS], [], merged["rows"], runs=merged["runs"])
    head = page[page.index('<table class="sf-matrix">'):page.index("</thead>")]
    assert '<th colspan="1" scope="colgroup">cpu</th><th colspan="1" scope="colgroup">cuda</th>' in head
    assert '<th scope="col">float32</th><th scope="col">float16</th>' in head
    assert '>pass<sup class="sf-run" title="run 1">1</sup></td>' in page
    assert '>fail<sup class="sf-run" title="run 2">2</sup></td>' in page
    legend = page[page.index('<table class="sf-runs">'):]
    assert "<td>cpu</td><td>2&#46;13&#46;0&#43;cpu</td><td>ci</td><td>2025-01-01</td><td>report&#46;json</td><td>1</td>" \
        in legend
    assert "<td>cuda &#40;NVIDIA H100&#41;</td><td>2&#46;11&#46;0&#43;cu130</td><td>ci</td><td>2026-11-22</td>" \
        "<td>cuda&#45;h100&#46;json (report schema v1)</td><td>1</td>" in legend


def test_one_run_has_a_legend_but_no_run_numbers(tmp_path):
    path = tmp_path / "only.json"
    path.write_text(json.dumps(make_report([FAIL, REFUTED])))
    page = generate(path)[f"claims/{SUMS}.md"]
    assert '<table class="sf-runs">' in page and "<td>only&#46;json (report schema v1)</td><td>1</td>" in page
    assert '<a href="#sf-row-1">fail</a></td>' in page
    assert '<sup class="sf-run"' not in page


# --- families, implementations, protocol ---------------------------------------------------


def test_navigation_follows_the_families_in_the_order_a_transformer_works():
    from specformer.site.families import FAMILY_ORDER, TOPIC_ORDER
    from specformer.site.pages import nav

    claims = load_claims()
    entries = nav(claims)
    top = [next(iter(e)) for e in entries]
    assert top == ["Home", *FAMILY_ORDER.values(), "Implementations", "Protocol", "Reference"]
    for entry, family in zip(entries[1:6], FAMILY_ORDER):
        pages = [next(iter(p.values())) for p in next(iter(entry.values()))]
        assert pages[0] == f"families/{family}.md"
        topics = [p.removeprefix("topics/").removesuffix(".md") for p in pages[1:]]
        assert topics == [t for t in TOPIC_ORDER[family] if t in topics]  # the documents' order
        assert set(topics) == {c.topic for c in claims.values() if c.family == family}
    assert not any("claims/" in json.dumps(e) and "claims/index.md" not in json.dumps(e) for e in entries)


def test_a_family_page_gives_counts_and_its_false_claims_with_their_counterexample():
    from specformer.site.families import family_page

    claims = load_claims()
    wrong = next(c for c in claims.values() if c.family == "attention" and c.verdict == "false as stated")
    rows = {wrong.id: [row(wrong.id, "attention.x", "reference", "refuted", counterexample="Falsifying example: d_k=1")]}
    page = family_page("attention", claims, {}, rows, {})
    assert page.startswith("# Attention\n")
    assert "## Verdicts" in page and "| false as stated |" in page
    assert f"](../claims/{wrong.id}.md)" in page
    assert "Falsifying example: d_k=1" in page


def test_sources_are_cited_by_title_with_the_file_in_a_tooltip():
    page = claim_page(make_claims()[VAR], [], None)
    assert '<span class="sf-doc" title="000_4860f8a30b907c6c.txt">C-4: Transformer Architecture' in page
    assert "section “Scaled attention”" in page


def test_not_applicable_rows_are_folded_with_their_count():
    na = [row(SUMS, "attention.rows_sum_to_one", "hf-bloom", "not-applicable", dtype=d) for d in ("float32", "float64")]
    page = claim_page(make_claims()[SUMS], [], [row(SUMS, "attention.rows_sum_to_one", "reference", "pass"), *na])
    page = unescape(page)
    folded = page[page.index('<details class="sf-na">'):]
    assert "2 rows not applicable (1 implementation" in folded
    assert "hf-bloom" in folded and "hf-bloom" not in page[:page.index('<details class="sf-na">')]


def test_a_property_that_calls_no_implementation_says_what_it_is_about():
    import dataclasses

    refute = make_props()["attention.variance_is_always_one"]
    labelled = dataclasses.replace(refute, about="published-numbers")
    assert "checked on the mathematics, arithmetic on published numbers" in claim_page(make_claims()[VAR], [labelled], None)
    assert "no implementation (runs once" in claim_page(make_claims()[VAR], [refute], None)


def test_implementation_pages_and_the_compatibility_table_escape_names_and_count_claims():
    from specformer.site.implementations import compatibility_page, implementation_page, page_names

    claims = load_claims()
    first = next(c for c in claims.values() if c.family == "attention")
    hostile = "<b>x</b> | y"
    rows = [row(first.id, "attention.p", hostile, "fail", message="boom"),
            row(first.id, "attention.q", "reference", "pass"),
            row(first.id, "attention.q", "reference", "known-deviation", deviation_reason="it differs <i>")]
    stems = page_names([hostile, "reference", "Reference"])
    assert len(set(stems.values())) == 3 and all(re.fullmatch(r"[a-z0-9-]+", s) for s in stems.values())
    table = compatibility_page(claims, [hostile, "reference"], rows)
    assert "<b>" not in table and "&lt;b&gt;" in table
    assert "fail 0/1" in unescape(re.sub(r"<[^>]+>", "", table)) or "0/1" in table
    page = implementation_page("reference", claims, rows,
                               {"name": "reference", "operations": ["attention"],
                                "capabilities": {"operations": None, "dtypes": ["float64"], "devices": None,
                                                 "conventions": {"pairing": ["half"]}}})
    assert "## Declared capabilities" in page and "<code>float64</code>" in page and "every device" in page
    assert "it differs &lt;i&gt;" in page and "## Deviations" in page
    assert f"](../claims/{first.id}.md)" in page


def test_protocol_pages_list_operations_and_parameter_fields():
    from specformer.site.protocol import protocol_families, protocol_page

    assert protocol_families()[:5] == ["tokenization", "embeddings", "positions", "attention", "blocks"]
    page = protocol_page("attention")
    assert "`multihead_attention(query: torch.Tensor" in page
    assert "### `MultiHeadParams`" in page and "| `w_q` | `torch.Tensor` | (d_model, h * d_k) |" in page
    assert "::: specformer.protocol.attention" in page


def test_short_citations_by_file_number_become_titles():
    from specformer.site.pages import cite_ids

    cited = cite_ids("as the web notes' code (002) does, unlike (999)")
    assert '(<span class="sf-doc" title="002_7a3e4e0c20e9295d.txt">Day 4: Embeddings &amp; Representation' in cited
    assert "(999)" in cited


def test_a_title_inside_a_formula_escapes_what_tex_would_read_as_markup():
    """Document 002's title holds "&": inside ``\\text{...}`` TeX reads a bare ``&`` as an alignment tab and
    MathJax shows the whole formula as raw TeX."""
    from specformer.site.spectext import name_documents

    named = name_documents(r"$\text{for 002's ELMo}(50000)$")
    assert r"\text{for Day 4: Embeddings \& Representation Learning's ELMo}" in named, named


def test_a_statement_on_several_lines_keeps_its_lines_but_never_breaks_a_group_or_a_matrix():
    """Joined into one line, a long statement ran wider than the column; broken inside ``\\frac{..}{..}`` or a
    matrix, it would not typeset at all."""
    from specformer.site.pages import display_math, formula_lines

    tex = ("P = N\\,(E + D),\\quad E = A,\\\n"
           "F = \\frac{a}{\nb};\\quad\n"
           "M = \\begin{pmatrix} 1 & 0 \\\\\n0 & 1 \\end{pmatrix}\n"
           "\\left( x\n\\right) \\text{ (a note {in} braces)}")
    assert formula_lines(tex) == ["P = N\\,(E + D),\\quad E = A,\\", "F = \\frac{a}{ b};\\quad",
                                  "M = \\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}",
                                  "\\left( x \\right) \\text{ (a note {in} braces)}"]
    shown = display_math(tex)
    assert shown.startswith("$$\n\\displaylines{P = N") and shown.endswith("braces)}}\n$$"), shown
    assert shown.count(" \\\\\n") == 3, shown
    assert display_math("a + b") == "$$\na + b\n$$"


def test_a_heading_keeps_its_trailing_hashes():
    from specformer.site.spectext import heading_text

    assert heading_text("marks non-initial pieces with ##") == "marks non-initial pieces with \\#\\#"
    assert heading_text("no hashes") == "no hashes"
    import markdown

    html = markdown.markdown("# " + heading_text("pieces with ##"))
    assert html == "<h1>pieces with ##</h1>", html


def test_a_row_whose_outcome_differs_between_reports_is_marked():
    from specformer.site.pages import merge_reports

    prop = "attention.rows_sum_to_one"
    cpu = make_report([row(SUMS, prop, "torch", "error", message="OpenBLAS: out of memory"),
                       row(SUMS, prop, "reference", "pass"),
                       row(SUMS, prop, "torch", "pass", dtype="float64")])
    cuda = make_report([{**row(SUMS, prop, "torch", "pass"), "device": "cuda"},
                        {**row(SUMS, prop, "reference", "pass"), "device": "cuda"},
                        {**row(SUMS, prop, "torch", "fail"), "device": "cuda", "dtype": "float16",
                         "_specformer_differs": [[1, "<script>"]]}])  # a report's own value is replaced
    merged = merge_reports([cpu, cuda], ["cpu.json", "cuda.json"])
    marked = {(r["implementation"], r["device"], r["dtype"]) for r in merged["rows"] if r["_specformer_differs"]}
    assert marked == {("torch", "cpu", "float32"), ("torch", "cuda", "float32")}
    page = claim_page(make_claims()[SUMS], [], merged["rows"], runs=merged["runs"])
    mark = '<span class="sf-differs" title="differs between reports: run 1: error, run 2: pass">differs</span>'
    assert page.count(mark) == 4  # both torch float32 cells, and their lines in the table of every row
    assert '>error</a><sup class="sf-run" title="run 1">1</sup> ' + mark + "</td>" in page
    assert "A cell marked *differs* has an outcome that differs between the reports" in page
    assert "&lt;script&gt;" not in page and "<script>" not in page

    # the same device in both reports: the later row is shown, marked, as the earlier one differed
    again = merge_reports([cpu, make_report([row(SUMS, prop, "torch", "pass")])])
    shown = [r for r in again["rows"] if r["implementation"] == "torch" and r["dtype"] == "float32"]
    assert [r["_specformer_differs"] for r in shown] == [[[1, "error"], [2, "pass"]]]
    # one report alone, or reports that agree: nothing is marked, whatever a report says
    for merged in (merge_reports([cuda]), merge_reports([cuda, cuda])):
        page = claim_page(make_claims()[SUMS], [], merged["rows"], runs=merged["runs"])
        assert "sf-differs" not in page and "*differs*" not in page


def test_an_implementation_page_lists_its_operations_and_each_failures_call_and_replay_command(tmp_path):
    """A user's implementation in the first of two merged reports keeps its operations; a failing cell links to
    the call ``specformer run`` printed and the ``specformer replay`` command, the call fenced as it is."""
    claims = load_claims()
    first = next(c for c in claims.values() if c.family == "attention")
    hostile = "import torch\nimpl.attention(torch.tensor([1.]), '```</code><b>x</b>')"
    failing = row(first.id, "attention.p", "mine", "fail", message="attention output: 1 of 1 <i>entries</i>",
                  call=hostile, reproduce="specformer run --impl mine.py --claims x --property attention.p")
    glimpse = row(first.id, "attention.q", "mine", "fail", message="other", dtype="float64",
                  call="import torch\nimpl.attention(<tensor shape (2, 40) float32: 1, 2, ...>, causal=True)",
                  reproduce="specformer run --impl mine.py --claims x --property attention.q")
    mine = {**make_report([failing, glimpse]),
            "implementations": [{"name": "mine", "spec": "mine.py", "operations": ["attention", "multihead_attention"]}]}
    other = {**make_report([row(first.id, "attention.p", "torch", "pass")]),
             "implementations": [{"name": "torch", "spec": "torch", "operations": ["attention"]}]}
    paths = [tmp_path / "mine.json", tmp_path / "torch.json"]
    for path, report in zip(paths, (mine, other)):
        path.write_text(json.dumps(report))
    page = generate(paths)["implementations/mine.md"]
    assert "does not list this implementation's operations" not in page
    assert "[<code>multihead&#95;attention</code>](../protocol/attention.md)" in page
    assert "## Failing calls" in page and "· [the failing call](#failure-1)" in page and 'id="failure-1"' in page
    # the call as Python, in a fence longer than any backtick run in it; everything else escaped
    assert "````python\nimport torch\nimpl.attention(torch.tensor([1.]), '```</code><b>x</b>')\n````" in page
    assert "<i>entries</i>" not in page.replace("```text\nattention output: 1 of 1 <i>entries</i>", "")
    assert ("specformer replay mine.json 'attention.p[mine/cpu/float32]' --impl mine.py" in page
            and "REPORT`: the report file" not in page)
    # a value too large to print is read from the file the replay command writes, never shown as <tensor ...>
    assert "saved = torch.load('replay/attention.q-mine-cpu-float64.pt', weights_only=False)" in page
    assert "impl.attention(saved['call']['args'][0], causal=True)" in page and "<tensor" not in page
    assert "## Failing calls" not in generate(paths)["implementations/torch.md"]
