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
    assert "Attention & Transformers (slides)" in page and "`004_47c0b0031f022460.txt`" in page
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
    assert "No results yet: run `specformer run`" in page


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
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "claims" / "index.html").is_file()
    for claim in claims.values():
        assert (site / "claims" / claim.id / "index.html").is_file()
    assert (site / "assets" / "mathjax" / "tex-mml-chtml.js").is_file()
    overview = unescape((site / "claims" / "index.html").read_text(encoding="utf-8"))
    assert "torch-sdpa" in overview  # docs/results/cuda-h100.json is listed in mkdocs.yml, so published
    assert "Partial results" not in overview
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
