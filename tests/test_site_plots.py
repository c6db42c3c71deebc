"""The figures of the documentation site: rendered, attached to real claims, shown on their pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from specformer.claims import load_claims  # noqa: E402
from specformer.site.pages import PLOTS_DIR, claim_page, generate, plot_markdown  # noqa: E402
from specformer.site.plots import PLOTS, plots, render_plots  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parent.parent

#: The families' plots, registered by specformer.site.plots.positions and _blocks on first use.
FAMILY_PLOTS = {
    "sinusoidal.formula", "sinusoidal.similarity-monotone", "alibi.bias-distance", "rope.relative-offset",
    "ffn.against-collapse", "cost.attention-vs-ffn", "encoder.pre-norm",
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("plots")
    files = render_plots(out)
    return out, files


def test_render_plots_writes_a_png_per_plot(rendered):
    out, files = rendered
    assert files.keys() == PLOTS.keys()
    for claim, plot_list in PLOTS.items():
        assert files[claim] == [p.file for p in plot_list]
    for plot in plots():
        data = (out / plot.file).read_bytes()
        assert data.startswith(PNG_MAGIC), plot.file
        assert 1_000 < len(data) < 80_000, f"{plot.file}: {len(data)} bytes"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (700, 400), plot.file
    assert sorted(p.name for p in out.iterdir()) == sorted(p.file for p in plots())


def test_rendering_is_deterministic(tmp_path):
    claim = "attention.gaussian-score-sign"
    first = render_plots(tmp_path / "a", only=[claim])
    second = render_plots(tmp_path / "b", only=[claim])
    assert first == second == {claim: [f"{claim}.png"]}
    assert (tmp_path / "a" / f"{claim}.png").read_bytes() == (tmp_path / "b" / f"{claim}.png").read_bytes()


def test_every_plot_has_a_caption():
    for plot in plots():
        caption = plot.caption.strip()
        assert caption.endswith(".") and "\n" not in caption and len(caption) < 300, plot.name


@pytest.mark.parametrize("claim_id", sorted({p.claim for p in plots()}))  # plots(): the families' too
def test_plotted_claims_exist(claim_id):
    if claim_id not in load_claims():
        pytest.skip(f"{claim_id} is not in the spec yet")
    assert PLOTS[claim_id]


def test_claim_page_shows_its_plots():
    claims = load_claims()
    claim_id = next(c for c in PLOTS if c in claims)
    pairs = [(p.file, p.caption) for p in PLOTS[claim_id]]
    page = claim_page(claims[claim_id], [], None, plots=pairs)
    for file, caption in pairs:
        assert f"](../{PLOTS_DIR}/{file})" in page
        assert plot_markdown(file, caption) in page
    assert page.index("## Plots") < page.index("## Properties")
    if "## Discussion" in page:
        assert page.index("## Discussion") < page.index("## Plots")
    assert "## Plots" not in claim_page(claims[claim_id], [], None)


def test_plot_markdown_escapes_the_caption():
    text = plot_markdown("x.png", "A *bold* [link] with d_k and\n  a line break.")
    caption = "A \\*bold\\* \\[link\\] with d\\_k and a line break."
    assert text == (f'<figure class="sf-figure" markdown="1">\n\n![{caption}](../assets/plots/x.png)\n\n'
                    f'<figcaption markdown="span">{caption}</figcaption>\n\n</figure>')


def test_generate_embeds_plots_only_for_their_claims():
    claims = load_claims()
    claim_id = next(c for c in PLOTS if c in claims)
    pairs = {claim_id: [(p.file, p.caption) for p in PLOTS[claim_id]]}
    pages = generate(None, plots=pairs)
    assert "## Plots" in pages[f"claims/{claim_id}.md"]
    assert all("## Plots" not in text for path, text in pages.items() if path != f"claims/{claim_id}.md")


def test_plots_include_the_families_plots():
    claims = {p.claim for p in plots()}
    assert FAMILY_PLOTS <= claims
    assert FAMILY_PLOTS <= PLOTS.keys()  # plots() filled the registry itself
    assert [p.name for p in plots(only=["rope.relative-offset"])] == ["rope.relative-offset"]


def test_plots_of_claims_not_in_the_spec_are_left_out_of_the_site():
    claims = load_claims()
    shown = {p.claim for p in plots(only=claims.keys())}  # what specformer.site.hooks renders
    assert shown <= claims.keys()
    assert {c for c in FAMILY_PLOTS if c in claims} <= shown
    pairs = {c: [(p.file, p.caption) for p in PLOTS[c]] for c in PLOTS}  # every plot, spec or not
    pages = generate(None, plots=pairs)
    assert all(f"claims/{c}.md" not in pages for c in PLOTS.keys() - claims.keys())
    assert all("## Plots" in pages[f"claims/{c}.md"] for c in shown)


@pytest.mark.parametrize("module", ["specformer.site.plots.positions", "specformer.site.plots.blocks"])
def test_a_family_module_imported_first_registers_once(module):
    code = (f"import {module}\n"
            "from specformer.site.plots import plots\n"
            "names = [p.name for p in plots()]\n"
            "assert len(names) == len(set(names)), names\n"
            "print(len(names))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(plots())
