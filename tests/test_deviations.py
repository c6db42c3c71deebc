"""Known deviations: the file format, its errors, how rows are relabelled, the shipped file, a real run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specformer.report import deviations
from specformer.runner.cli import main
from specformer.runner.row import RowResult

ROOT = Path(__file__).resolve().parent.parent
PROP = "masking.later_positions_do_not_change_earlier_outputs"


def row(outcome: str, **kwargs: object) -> RowResult:
    fields: dict[str, object] = dict(claim="masking.causal-no-future", property=PROP, implementation="mine",
                                     device="cpu", dtype="float64", expect="hold", outcome=outcome)
    fields.update(kwargs)
    return RowResult(**fields)  # type: ignore[arg-type]


def entry(**kwargs: str) -> deviations.Deviation:
    kwargs.setdefault("implementation", "mine")
    return deviations.parse(
        "[[deviation]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in kwargs.items()), "t.toml")[0]


def test_a_file_parses_into_entries_with_globs_and_lists() -> None:
    entries = deviations.parse(textwrap.dedent("""
        [[deviation]]
        claim = "masking.*"
        implementation = ["mine", "theirs"]
        dtype = ["float16", "bfloat16"]
        reason = "  half   precision  "

        [[deviation]]
        property = "scaling.*"
        implementation = "mine"
        device = "cuda"
        reason = "r2"
        """), "f.toml")
    assert [e.reason for e in entries] == ["half precision", "r2"]
    assert entries[0].claim == ("masking.*",) and entries[0].dtype == ("float16", "bfloat16")
    assert entries[0].implementation == ("mine", "theirs") and entries[1].device == ("cuda",)
    assert entries[0].matches(row("fail", dtype="bfloat16")) and not entries[0].matches(row("fail"))


@pytest.mark.parametrize("text, problem", [
    ("[[deviation]]\nclaim = 'a.b'\n", "'reason' is mandatory"),
    ("[[deviation]]\nclaim = 'a.b'\nreason = ''\n", "'reason' is mandatory"),
    ("[[deviation]]\nreason = 'r'\n", "needs a 'claim' or a 'property'"),
    ("[[deviation]]\nclaim = 'a.b'\nreason = 'r'\ndtpye = 'float16'\n", "unknown key(s) ['dtpye']"),
    ("[[deviation]]\nclaim = 'a.b'\nreason = 'r'\n", "needs 'implementation'"),
    ("[[deviation]]\nclaim = '*'\nimplementation = 'x'\nreason = 'r'\n", "must name its topic"),
    ("[[deviation]]\nproperty = '*.p'\nimplementation = 'x'\nreason = 'r'\n", "must name its topic"),
    ("[[deviation]]\nclaim = 'a.b'\nimplementation = 'm*'\nreason = 'r'\n", "matches 'math'"),
    ("[[deviation]]\nclaim = 3\nreason = 'r'\n", "'claim' must be a non-empty string"),
    ("[[deviation]]\nclaim = 'a.b'\nimplementation = 'x'\nreason = 'r'\n[[deviation]]\nclaim = []\nreason = 'r'\n",
     "entry 2"),
    ("deviation = 'x'\n", "array of tables"),
    ("[[deviations]]\nclaim = 'a'\n", "unknown top-level key"),
    ("[[deviation]\n", "not valid TOML"),
])
def test_a_malformed_file_names_the_file_the_entry_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(deviations.DeviationError) as info:
        deviations.load_file(path)
    assert str(path) in str(info.value) and problem in str(info.value)
    if "entry" in problem or "reason" in problem:
        assert "entry" in str(info.value)


def test_a_malformed_file_is_a_usage_error_of_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[[deviation]]\nclaim = 'a.b'\n", encoding="utf-8")
    assert main(["run", "--deviations", str(path)]) == 2
    assert main(["run", "--deviations", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: entry 1: 'reason' is mandatory" in err and "missing.toml" in err and "cannot be read" in err


def test_a_failing_listed_row_becomes_a_known_deviation_and_keeps_its_evidence() -> None:
    failing = row("fail", message="got 1, expected 0", counterexample="case=...", seed=7)
    out = deviations.apply(failing, [entry(claim="masking.*", reason="known")])
    assert out.outcome == "known-deviation" and out.as_expected
    assert (out.original_outcome, out.deviation_reason) == ("fail", "known")
    assert out.message == "got 1, expected 0" and out.counterexample == "case=..." and out.seed == 7
    data = out.to_json()
    assert data["as_expected"] is True and "strict_deviations" not in data
    assert deviations.apply(row("error"), [entry(property=PROP, reason="r")]).outcome == "known-deviation"


def test_a_lost_worker_is_never_hidden_by_an_entry() -> None:
    """A listed row whose worker crashed (OpenBLAS could not allocate, say) stays an error: the entry's
    reason is about what the library computes, not about a crash."""
    lost = row("error", message="hf-bert: the worker exited with status 1 while calling attention")
    lost.worker_lost = True
    out = deviations.apply(lost, [entry(claim="masking.*", reason="known")])
    assert out.outcome == "error" and out.deviation_reason is None and not out.as_expected


def test_a_listed_row_that_conforms_is_fixed_and_fails_only_when_strict() -> None:
    listed = [entry(claim="masking.causal-no-future", implementation="mi*", reason="r")]
    fixed = deviations.apply(row("pass"), listed)
    assert fixed.outcome == "fixed" and fixed.original_outcome == "pass" and fixed.as_expected
    strict = deviations.apply(row("refuted", expect="counterexample"), listed, strict=True)
    assert strict.outcome == "fixed" and not strict.as_expected and strict.to_json()["as_expected"] is False


def test_rows_that_did_not_run_or_are_not_listed_are_left_alone() -> None:
    listed = [entry(claim="masking.*", reason="r")]
    for outcome in ("skipped", "not-applicable"):
        assert deviations.apply(row(outcome), listed).outcome == outcome
    for other in (row("fail", claim="scaling.x"), row("fail", device="cuda")):
        kept = deviations.apply(other, [entry(claim="masking.*", device="cpu", reason="r")])
        assert kept.outcome == "fail" and kept.deviation_reason is None
    # the implementation field matches the name or the --impl spec
    assert deviations.apply(row("fail"), [entry(claim="masking.*", implementation="x.py", reason="r")], "x.py").outcome \
        == "known-deviation"


#: Entries the shipped file changed after the published CUDA run: torch-embedding now declares its norm clamp
#: (``cosine_norm_clamp = 1e-8``), under which the zero-vector property judges rows above eps; only float16,
#: where 1e-8 rounds to 0, is still listed. x-transformers now declares ``causal_alignment = bottom-right``, under
#: which the causal-flag-with-a-mask properties compare with the bottom-right mask: their entry is gone.
FIXED_SINCE_THE_PUBLISHED_RUN = {
    ("similarity.a_zero_row_is_refused_and_a_tiny_row_keeps_its_cosine", "torch-embedding"),
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", "x-transformers"),
    ("masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag", "x-transformers"),
}


def test_the_shipped_file_lists_the_cuda_half_precision_flop_counts_of_torch_mha() -> None:
    shipped = deviations.builtin()
    report = json.loads((ROOT / "docs" / "results" / "cuda-h100.json").read_text(encoding="utf-8"))
    relabelled = {}
    for data in report["rows"]:  # each row as it ended before the run applied the shipped file
        if (data["property"], data["implementation"]) in FIXED_SINCE_THE_PUBLISHED_RUN:
            continue
        fields = {k: data[k] for k in ("claim", "property", "implementation", "device", "dtype", "expect")}
        out = deviations.apply(RowResult(**fields, outcome=data.get("original_outcome") or data["outcome"]), shipped,
                               data["implementation"])
        assert (out.outcome, out.deviation_reason) == (data["outcome"], data.get("deviation_reason")), data
        if out.implementation == "torch-mha" and out.outcome == "known-deviation":
            relabelled[out.dtype] = (out.claim, out.deviation_reason)
    assert set(relabelled) == {"float16", "bfloat16"}
    for claim, reason in relabelled.values():
        assert claim == "multihead.cost-equal" and "multiple of 8" in reason and "704" in reason


FULLY_MASKED = "masking.a_query_with_every_key_masked_gets_zeros_or_nan_and_other_rows_are_unaffected"


@pytest.mark.parametrize("impl", ["hf-bert", "hf-gpt2", "hf-llama", "x-transformers"])
def test_the_shipped_fully_masked_row_entries_cover_every_dtype_they_hold_in(impl: str) -> None:
    """The finfo(dtype).min fill gives uniform weights in every dtype (the H100 run failed float16 and bfloat16
    while only float32 and float64 were listed); Llama and x-transformers give NaN in float64 (allowed), whose
    float64 rows their float32-softmax entry lists instead."""
    shipped = deviations.builtin()
    for device, dtype in [("cpu", "float64"), ("cpu", "float32"), ("cuda", "float32"), ("cuda", "float16"),
                          ("cuda", "bfloat16")]:
        failed = row("fail", claim="masking.fully-masked-row", property=FULLY_MASKED, implementation=impl,
                     device=device, dtype=dtype)
        out = deviations.apply(failed, shipped, impl)
        assert out.outcome == "known-deviation", (impl, device, dtype)
        nan_in_float64 = impl in ("hf-llama", "x-transformers") and dtype == "float64"
        assert out.deviation_reason.startswith("The softmax runs in float32") == nan_in_float64, (impl, dtype)


def test_the_shipped_file_lists_torch_nns_tanh_gelu_on_cuda_only() -> None:
    shipped = deviations.builtin()
    prop = "encoder.the_pre_norm_layer_normalises_each_sublayers_input"
    for device, dtype in [("cuda", "float32"), ("cuda", "float16"), ("cpu", "float32"), ("cpu", "float64")]:
        failed = row("fail", claim="encoder.pre-norm", property=prop, implementation="torch-nn", device=device,
                     dtype=dtype)
        out = deviations.apply(failed, shipped, "torch-nn")
        assert out.outcome == ("known-deviation" if device == "cuda" else "fail"), (device, dtype)
        passed = deviations.apply(row("pass", claim="encoder.pre-norm", property=prop, implementation="torch-nn",
                                      device=device, dtype=dtype), shipped, "torch-nn")
        assert passed.outcome == "pass"  # intermittent: a relu draw passes and stays a pass


def test_the_shipped_file_applies_to_built_in_implementations_only() -> None:
    user = [entry(claim="a.*", reason="mine")]
    shipped = deviations.builtin()
    assert deviations.entries_for("torch-mha", user) == user + shipped
    assert deviations.entries_for("my_impl.py", user) == user
    assert deviations.entries_for("torch_mha_copy:implementation", [], shipped) == []


def test_entries_that_match_nothing_known_are_warned_about() -> None:
    warnings = deviations.unmatched_warnings([entry(claim="mask.*", dtype="flaot16", reason="r")],
                                             ["masking.padding"], ["masking.padded"])
    assert any("claim ['mask.*']" in w for w in warnings) and any("flaot16" in w for w in warnings)


MUTANT = textwrap.dedent("""
    import math, torch

    class CausalIncludesNext:
        name = "causal-includes-next"
        def attention(self, q, k, v, mask=None, *, causal=False):
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if causal:
                keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril(1)
                mask = keep if mask is None else mask & keep
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            return scores.softmax(-1) @ v, scores.softmax(-1)

    implementation = CausalIncludesNext()
    """)


def test_a_run_with_a_deviations_file_passes_and_lists_what_is_fixed(tmp_path: Path) -> None:
    (tmp_path / "mutant.py").write_text(MUTANT, encoding="utf-8")
    (tmp_path / "dev.toml").write_text(textwrap.dedent(f"""
        [[deviation]]
        property = "{PROP}"
        implementation = "causal-*"
        reason = "this mutant lets a query see the next key"

        [[deviation]]
        claim = "masking.causal-no-future"
        implementation = "reference"
        reason = "listed to be fixed"
        """), encoding="utf-8")
    args = ["run", "--impl", "mutant.py", "--impl", "reference", "--property", PROP, "--dtype", "float64",
            "--deviations", "dev.toml", "--report", "R.json"]
    done = subprocess.run([sys.executable, "-m", "specformer", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["implementation"]: r for r in json.loads((tmp_path / "R.json").read_text())["rows"]}
    assert rows["causal-includes-next"]["outcome"] == "known-deviation"
    assert rows["causal-includes-next"]["original_outcome"] == "fail" and rows["causal-includes-next"]["message"]
    assert rows["reference"]["outcome"] == "fixed"
    assert "no longer deviate" in done.stdout and "listed to be fixed" in done.stdout
    strict = subprocess.run([sys.executable, "-m", "specformer", "run", *args[3:], "--strict-deviations"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "FIXED  masking.causal-no-future" in strict.stdout


def test_a_row_run_without_shrinking_still_fails_with_a_counterexample() -> None:
    """What listed rows get: the first counterexample found, and the same outcome."""
    from mutants import NO_SCALE

    from specformer.context import LocalBackend
    from specformer.property import load_properties
    from specformer.protocol import provided_operations
    from specformer.runner.row import run_property

    prop = load_properties()["attention.output_matches_the_formula"]
    rows = [run_property(prop, LocalBackend(NO_SCALE), "no-scale", "no-scale", "cpu", "float64", "ci", 60,
                         provided_operations(NO_SCALE), shrink=shrink) for shrink in (True, False)]
    assert [r.outcome for r in rows] == ["fail", "fail"]
    assert all(r.counterexample for r in rows)


def test_an_intermittent_entry_relabels_failures_but_leaves_passing_rows_alone() -> None:
    from specformer.report.deviations import apply, parse
    from specformer.runner.row import RowResult

    entries = parse('[[deviation]]\nclaim = "a.*"\nimplementation = "impl"\nintermittent = true\n'
                    'reason = "float32 inside"\n', "x.toml")
    passing = RowResult("a.b", "a.p", "impl", "cpu", "float64", "hold", "pass")
    failing = RowResult("a.b", "a.p", "impl", "cpu", "float64", "hold", "fail")
    assert apply(passing, entries).outcome == "pass"
    assert apply(failing, entries).outcome == "known-deviation"
    with pytest.raises(Exception, match="intermittent"):
        parse('[[deviation]]\nclaim = "a.*"\nimplementation = "impl"\nintermittent = "yes"\nreason = "r"\n',
              "x.toml")


def test_math_rows_are_never_relabelled_and_a_wildcard_may_match_one_implementation() -> None:
    listed = entry(claim="masking.*", implementation="mi*", reason="r")
    assert deviations.apply(row("fail", implementation="math"), [listed]).outcome == "fail"
    assert deviations.apply(row("fail"), [listed]).outcome == "known-deviation"
    impls = [{"name": "mine", "spec": "mine.py"}, {"name": "reference", "spec": "reference"}]
    assert deviations.implementation_problem([listed], impls) is None
    two = impls + [{"name": "mink", "spec": "mink.py"}]
    assert "matches 2 implementations of this run (mine, mink)" in deviations.implementation_problem([listed], two)


def test_the_shipped_file_loads_under_the_explicit_naming_rules() -> None:
    from specformer.adapters import BUILTIN

    shipped = deviations.builtin()
    assert shipped and all(e.implementation for e in shipped)
    impls = [{"name": name, "spec": name} for name in BUILTIN]
    assert deviations.implementation_problem(shipped, impls) is None
