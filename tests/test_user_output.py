"""What a user reads: the summary, counterexamples, errors that point at their code, the fast commands.

Each test here can fail: the grouping must merge the same failure across dtypes and
keep different failures apart; a signature mismatch must name the user's file, not the
harness's; the static property index must agree with the imported registry; shrinking
must stop at the budget and say so; ``replay`` must save inputs that reproduce the failure; the call a
failure block prints, pasted into a fresh interpreter, must answer wrongly on the buggy file and rightly
on the correct one (a call whose answer was right, the last one made, fails that test).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from conftest import run_row
from specformer.runner.cli import build_parser, main
from specformer.runner.loading import ImplementationLoadError, load_implementation
from specformer.runner.plugin import bounded_shrinking, describe_failure
from specformer.property import load_properties
from specformer.property_index import static_properties
from specformer.protocol import AttentionOutput
from specformer.report.summary import grouped_failures, render_call, render_value, shorten_tensors, summary_lines

FORMULA = "attention.output_matches_the_formula"


def _row(dtype: str, message: str, prop: str = FORMULA, outcome: str = "fail") -> dict:
    return {"claim": "attention.scaled-dot-product", "property": prop, "implementation": "mine", "device": "cpu",
            "dtype": dtype, "outcome": outcome, "as_expected": False, "message": message, "family": "attention"}


# -- the summary ---------------------------------------------------------------------------


def test_the_same_failure_on_two_dtypes_is_one_block_and_different_failures_stay_apart() -> None:
    rows = [_row("float32", "attention output: 3 of 3 entries out of tolerance; got 0.12, expected 0.5"),
            _row("float64", "attention output: 2 of 3 entries out of tolerance; got 0.125, expected 0.51"),
            _row("float64", "attention weights: NaN at index (0, 1)")]
    groups = grouped_failures(rows)
    assert [len(g) for g in groups] == [2, 1]
    text = "\n".join(line for line, _ in summary_lines(rows, [], True, 3))
    assert "3 rows did not end as expected (2 distinct failures)" in text
    assert "implementation: mine on cpu/float32, cpu/float64" in text
    assert text.count("FAIL  attention.scaled-dot-product\n") == 2


def _op_row(claim: str, op: str, message: str, impl: str = "mine", size: int = 10) -> dict:
    return {"claim": claim, "property": claim.replace(".", "_"), "implementation": impl, "device": "cpu",
            "dtype": "float64", "outcome": "fail", "as_expected": False, "message": message,
            "call": f"impl.{op}(" + "x" * size + ")", "family": "blocks"}


def test_blocks_come_in_the_order_of_causes_and_a_composite_folds_under_its_failing_part() -> None:
    """A wrong layer_norm fails its own claim and every layer and stack claim; the layer_norm block comes first,
    the layers' and the stack's failures fold under it, and another implementation's are left alone."""
    from specformer.report.summary import ordered_failures

    rows = [_op_row("decoder.sublayer-order", "decoder_layer", "12 of 12 entries out of tolerance", size=4000),
            _op_row("encoder.stack", "encoder_stack", "stack output: 9 of 9 entries", size=3000),
            _op_row("encoder.post-norm", "encoder_layer", "layer output: 6 of 6 entries", size=2000),
            _op_row("ffn.formula", "feed_forward", "ffn output: 1 of 4 entries", size=50),
            _op_row("layernorm.formula", "layer_norm", "layer_norm: 3 of 3 entries", size=100),
            _op_row("encoder.post-norm", "encoder_layer", "layer output: 6 of 6 entries", impl="theirs")]
    ordered = ordered_failures(grouped_failures(rows))
    shown = [(g[0]["claim"], g[0]["implementation"], [f[0]["claim"] for f in folded]) for g, folded in ordered]
    # feed_forward and layer_norm both rank 0 (shorter block first); the composites of "mine" fold under the
    # lowest-ranked failing part, whichever it is; "theirs" has no failing part and stays a block of its own
    assert shown[0][0] == "ffn.formula" and shown[1][0] == "layernorm.formula", shown
    assert sorted(shown[0][2] + shown[1][2]) == ["decoder.sublayer-order", "encoder.post-norm", "encoder.stack"]
    assert shown[2] == ("encoder.post-norm", "theirs", []) and len(shown) == 3, shown
    lines = [line for line, _ in summary_lines(rows, [], True, len(rows))]
    heads = [a for a, b in zip(lines, lines[1:]) if b.startswith("  property:")]  # each block's first line
    assert heads == ["FAIL  ffn.formula", "FAIL  layernorm.formula", "FAIL  encoder.post-norm"], heads
    assert any("which may call the failing feed_forward" in line for line in lines), lines


def test_without_a_failing_part_a_composite_keeps_its_block_and_parts_come_first() -> None:
    from specformer.protocol.dependencies import parts_of, rank
    from specformer.report.summary import ordered_failures

    assert rank("layer_norm") == 0 < rank("multihead_attention") < rank("encoder_layer") < rank("encoder_stack")
    assert {"attention", "layer_norm", "feed_forward", "multihead_attention"} <= parts_of("encoder_stack")
    rows = [_op_row("encoder.stack", "encoder_stack", "stack output wrong"),
            _op_row("multihead.formula", "multihead_attention", "heads wrong", size=5000)]
    ordered = ordered_failures(grouped_failures(rows))
    # multihead_attention is a part of the stack (through its layers): the stack folds under it
    assert [(g[0]["claim"], [f[0]["claim"] for f in folded]) for g, folded in ordered] == [
        ("multihead.formula", ["encoder.stack"])]
    alone = ordered_failures(grouped_failures(rows[:1]))
    assert [g[0]["claim"] for g, _ in alone] == ["encoder.stack"]


def test_a_claim_held_back_by_another_familys_operation_is_named_with_that_operation() -> None:
    row = {"claim": "alibi.no-position-embeddings", "property": "p", "implementation": "mine", "device": "cpu",
           "dtype": "float64", "outcome": "not-applicable", "as_expected": True, "family": "positions",
           "message": "mine does not provide: count_parameters"}
    own = {**row, "claim": "alibi.slopes", "message": "mine does not provide: alibi_bias"}
    ops = {"positions": ["alibi_bias"], "blocks": ["count_parameters"]}
    lines = [line for line, _ in summary_lines([row, own], [], True, 2, family_operations=ops)]
    named = [line for line in lines if "also needs" in line]
    assert named == ["  –   alibi.no-position-embeddings also needs count_parameters (the blocks family): provide it "
                     "too, in the same implementation, to run this claim"], lines


def test_the_summary_names_only_the_selected_families_in_one_line() -> None:
    impl = {"name": "mine", "spec": "mine.py", "status": "loaded", "operations": ["attention"],
            "omitted_families": ["blocks", "embeddings", "positions", "tokenization"]}
    ops = {"attention": ["attention", "multihead_attention", "score"], "blocks": ["layer_norm"]}
    lines = [line for line, _ in summary_lines([], [impl], True, 0, families=["attention"], family_operations=ops)]
    provides = [line for line in lines if "does not provide" in line]
    assert provides == ["  –   mine does not provide: multihead_attention, score (its rows are not applicable or absent)"]
    assert not any("blocks" in line for line in lines)


def test_a_load_failure_says_so_in_the_verdict() -> None:
    impl = {"name": "x.py", "spec": "x.py", "status": "load-error", "message": "it defines Mine",
            "operations": [], "omitted_families": []}
    lines = [line for line, _ in summary_lines([], [impl], True, 0)]
    assert "it defines Mine" in lines[0] and "x.py could not be loaded" in lines[-1]


# -- counterexamples and tensors -----------------------------------------------------------


def test_small_tensors_render_as_python_that_evaluates_to_the_same_values() -> None:
    for t in (torch.tensor([[0.1, -2.5], [3.0, 1e-8]], dtype=torch.float64), torch.randn(2, 3),
              torch.tensor([1, 2, 3]), torch.tensor([True, False]), torch.zeros(0, 2)):
        text = render_value(t)
        back = eval(text, {"torch": torch})  # noqa: S307 - our own rendering
        assert back.dtype == t.dtype and back.shape == t.shape and torch.equal(back, t), text


def test_seeded_tensors_render_as_the_expression_that_draws_them() -> None:
    from specformer.properties.strategies import _seeded

    t = _seeded((3, 4, 5), 2.0, 7)
    text = render_value(t)
    assert "manual_seed(7)" in text and "(3, 4, 5)" in text
    assert torch.equal(eval(text, {"torch": torch}), t)  # noqa: S307


def test_a_large_tensor_of_one_value_is_written_once_and_a_printed_call_never_holds_a_glimpse() -> None:
    from specformer.report.summary import printed_call

    for t in (torch.zeros(2, 4, 14, dtype=torch.float64), torch.full((40,), -0.0), torch.ones(50, dtype=torch.bool),
              torch.full((5, 9), float("nan"), dtype=torch.float16), torch.full((40,), 0.1, dtype=torch.bfloat16)):
        text = render_value(t)
        back = eval(text, {"torch": torch})  # noqa: S307 - our own rendering
        assert text.startswith("torch.full(") and back.dtype == t.dtype and back.shape == t.shape, text
        assert torch.equal(back.signbit(), t.signbit()) and torch.equal(back.isnan(), t.isnan()), text
        assert torch.equal(back.nan_to_num(), t.nan_to_num()), text
    row = {**_row("float32", "bad"), "call": "import torch\nimpl.attention(<tensor shape (2, 40) float32: 1, 2, ...>, "
           "'<', {'w': <tensor shape (9, 9) float32: 1, ...>}, mask=<tensor shape (5, 5) bool: True, ...>)"}
    call, _ = printed_call(row)
    assert call == ["import torch", "saved = torch.load('replay/attention.output_matches_the_formula-mine-cpu-float32.pt',"
                    " weights_only=False)  # `specformer replay REPORT ROW` writes it",
                    "impl.attention(saved['call']['args'][0], '<', saved['call']['args'][2], "
                    "mask=saved['call']['kwargs']['mask'])"], call


def test_large_tensors_show_shape_dtype_and_first_values() -> None:
    text = render_value(torch.arange(100, dtype=torch.float32).reshape(4, 25))
    assert text.startswith("<tensor shape (4, 25) float32: 0, 1, 2, 3, 4, 5, ...>")
    assert render_call("p", {"ctx": object(), "n": 3}) is None  # an object it cannot write: None
    message = "got " + str(torch.arange(60.0).reshape(3, 4, 5)) + " back"
    short = shorten_tensors(message)
    assert "shape (3, 4, 5)" in short and len(short) < 120 and short.endswith(" back")


# -- errors that point at the user's code --------------------------------------------------


WRONG = '''
import torch

class Mine:
    name = "mine"

    def positional_encoding(self, kind, positions, d_model):
        raise RuntimeError("never reached: the call itself fails")

    def multihead_attention(self, query, key, value, params, mask=None):
        return query * params.heads

implementation = Mine
'''


def test_a_signature_mismatch_names_the_operation_the_keyword_and_the_users_file(tmp_path: Path) -> None:
    path = tmp_path / "wrong.py"
    path.write_text(WRONG, encoding="utf-8")
    impl = load_implementation(str(path)).obj
    row = run_row("sinusoidal.encodings_match_the_formula", impl)
    assert row.outcome == "error"
    assert "positional_encoding() does not accept" in row.message and "dtype" in row.message
    assert f"{path}:7" in row.message and "worker.py" not in row.message


def test_a_wrong_field_of_the_parameters_lists_the_fields_with_a_guess(tmp_path: Path) -> None:
    path = tmp_path / "wrong.py"
    path.write_text(WRONG, encoding="utf-8")
    impl = load_implementation(str(path)).obj
    row = run_row("multihead.output_is_the_concatenation_of_the_heads_times_w_o", impl)
    assert row.outcome == "error"
    assert "has the fields w_q, w_k, w_v, w_o, h" in row.message and "did you mean 'h'" in row.message
    assert f"{path}:11" in row.message


def test_a_misspelt_operation_is_named_in_the_load_error(tmp_path: Path) -> None:
    path = tmp_path / "typo.py"
    path.write_text("class Mine:\n    name = 'm'\n    def atention(self, q, k, v, mask=None):\n        return q\n"
                    "implementation = Mine\n", encoding="utf-8")
    with pytest.raises(ImplementationLoadError, match="its methods are atention; did you mean 'attention'"):
        load_implementation(str(path))


# -- bounded shrinking ---------------------------------------------------------------------


class DividesByDK:
    """Scores divided by ``d_k`` instead of ``sqrt(d_k)``."""

    name = "divides-by-d-k"

    def attention(self, q, k, v, mask=None, *, causal=False):  # type: ignore[no-untyped-def]
        scores = q @ k.transpose(-2, -1) / q.shape[-1]
        if mask is not None:
            scores = scores.masked_fill(~mask, -math.inf)
        weights = scores.softmax(-1)
        return AttentionOutput(weights @ v, weights)


def test_shrinking_stops_at_the_budget_and_the_row_says_so() -> None:
    prop = load_properties()[FORMULA]
    with bounded_shrinking(prop, "ci") as budget:
        row = run_row(FORMULA, DividesByDK(), "float64")
    describe_failure(row, prop, budget)
    assert row.outcome == "fail" and budget.limit == 20
    assert budget.after_failure <= budget.limit + 1
    if budget.cut:
        assert "shrinking stopped at the profile's budget of 20 examples" in row.message
    assert row.counterexample and row.counterexample.startswith("output_matches_the_formula(")
    assert "torch.tensor(" in row.counterexample or "manual_seed" in row.counterexample


# -- the fast commands ---------------------------------------------------------------------


def test_the_static_property_index_agrees_with_the_imported_registry() -> None:
    static, imported = static_properties(), load_properties()
    assert static is not None and set(static) == set(imported)
    for name, prop in imported.items():
        assert (static[name].claim, static[name].expect, static[name].needs, static[name].family) == \
            (prop.claim, prop.expect, prop.needs, prop.family), name


def test_claims_with_an_unknown_topic_is_a_usage_error_like_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["claims", "--topic", "rotary"]) == 2
    assert "--topic 'rotary' is not a topic" in capsys.readouterr().err


def test_help_is_plain_text_and_imports_neither_torch_nor_hypothesis() -> None:
    text = build_parser().format_help()
    assert "``" not in text and ":data:" not in text and "specformer new" in text
    code = ("import sys\nfrom specformer.runner.cli import main\ntry:\n    main(['claims'])\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules, 'hypothesis' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert done.stderr.strip().splitlines()[-1] == "False False", done.stderr


def test_replay_names_the_failing_rows_when_the_row_is_unknown(tmp_path: Path) -> None:
    from specformer.runner.replay import ReplayError, choose_row

    report = {"rows": [_row("float32", "bad"), {**_row("float64", "ok"), "as_expected": True}]}
    assert choose_row(report, "1")["dtype"] == "float32"
    assert choose_row(report, "float32")["dtype"] == "float32"
    with pytest.raises(ReplayError, match="1. attention.scaled-dot-product"):
        choose_row(report, "nothing like it")


def test_a_cut_row_of_a_property_that_draws_inside_its_body_is_a_failure_not_a_flaky_error() -> None:
    example = load_implementation(str(Path(__file__).resolve().parent.parent / "examples" / "attention.py")).obj

    class Buggy(type(example)):  # type: ignore[misc]
        name = "buggy"

        def attention(self, q, k, v, mask=None, *, causal=False, need_weights=True):  # type: ignore[no-untyped-def]
            return DividesByDK().attention(q, k, v, mask)

    qualname = "multihead.with_any_d_v_the_output_matches_the_formula_and_w_o_has_h_d_v_rows"
    prop = load_properties()[qualname]
    with bounded_shrinking(prop, "ci") as budget:
        row = run_row(qualname, Buggy(), "float64")
    describe_failure(row, prop, budget)
    assert row.outcome == "fail", row.message
    assert "Flaky" not in row.message


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: skip-gram's (centre, context) pairs, planted into the embeddings example (which has none): correct, and with
#: the window cut short on the right
SKIPGRAM = """    def skipgram_pairs(self, ids: list[int], window: int) -> list[tuple[int, int]]:
        if window < 1:
            raise ValueError("the window must be at least 1")
        return [(centre, ids[j]) for t, centre in enumerate(ids)
                for j in range(max(0, t - window), min(len(ids), t + window + 1)) if j != t]

    def cosine_similarity("""

#: A planted bug per basic operation, across the five families: (example, text replaced, its replacement, the
#: call the first block must show, the topic that keeps the run short); a ``None`` text plants the correct
#: ``SKIPGRAM`` first, the file compared with. The correct file is the example itself.
PLANTED = {
    # BPE: the merges applied in reverse order
    "bpe_encode": ("tokenization.py", "for pair in merges:", "for pair in reversed(merges):", "impl.bpe_encode(", "bpe"),
    # embeddings: the cosine without the norm of b
    "cosine_similarity": ("embeddings.py", "norms = a.norm(dim=-1) * b.norm(dim=-1)",
                          "norms = a.norm(dim=-1) * a.norm(dim=-1)", "impl.cosine_similarity(", "similarity"),
    # embeddings: skip-gram pairs without the right end of the window
    "skipgram_pairs": ("embeddings.py", None, "min(len(ids), t + window)", "impl.skipgram_pairs(", "word2vec"),
    # attention: scores divided by d_k, not its square root
    "attention": ("attention.py", "/ math.sqrt(q.shape[-1])", "/ q.shape[-1]", "impl.attention(", "attention"),
    # positions: cosines where the sines go
    "positional_encoding": ("positions.py", "pe[:, 0::2] = torch.sin(angles)", "pe[:, 0::2] = torch.cos(angles)",
                            "impl.positional_encoding(", "sinusoidal"),
    # positions: the first of each pair turned the wrong way (position 0 is still the identity)
    "rotary": ("positions.py", "turned_first = first * cos - second * sin", "turned_first = first * cos + second * sin",
               "impl.rotary(", "rope"),
    # blocks: LayerNorm with the unbiased variance
    "layer_norm": ("blocks.py", "var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)",
                   "var = ((x - mu) ** 2).sum(dim=-1, keepdim=True) / max(x.shape[-1] - 1, 1)", "impl.layer_norm(",
                   "layernorm"),
    # blocks: the feed-forward network without its first bias
    "feed_forward": ("blocks.py", "(x @ w_1 + b_1) @ w_2", "(x @ w_1) @ w_2", "impl.feed_forward(", "ffn"),
}


class PlantedRuns:
    """``specformer run --impl`` on each planted bug, run once and kept for the tests that read its output."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: dict[str, tuple[Path, Path, subprocess.CompletedProcess[str]]] = {}

    def files(self, case: str) -> tuple[Path, Path]:
        """The correct and the buggy file of ``case``."""
        example, old, new, _, _ = PLANTED[case]
        source = (EXAMPLES / example).read_text(encoding="utf-8")
        if old is None:  # the operation is planted, then broken
            source = source.replace("    def cosine_similarity(", SKIPGRAM)
            old = "min(len(ids), t + window + 1)"
        assert old in source, case
        correct, buggy = self.root / f"correct_{case}.py", self.root / f"buggy_{case}.py"
        correct.write_text(source, encoding="utf-8")
        buggy.write_text(source.replace(old, new), encoding="utf-8")
        return correct, buggy

    def run(self, case: str) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
        """The correct file, the buggy file and the finished run of ``case`` (in ``root``)."""
        if case not in self.runs:
            correct, buggy = self.files(case)
            done = subprocess.run([sys.executable, "-m", "specformer", "run", "--impl", buggy.name, "--topic",
                                   PLANTED[case][4], "--report", f"r_{case}.json"],
                                  cwd=self.root, capture_output=True, text=True, timeout=1800)
            self.runs[case] = (correct, buggy, done)
        return self.runs[case]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> PlantedRuns:
    return PlantedRuns(tmp_path_factory.mktemp("planted"))


@pytest.mark.parametrize("case", list(PLANTED))
def test_a_planted_bug_shows_its_message_and_a_call_into_the_users_code_in_the_first_30_lines(
        planted: PlantedRuns, case: str) -> None:
    call = PLANTED[case][3]
    _, _, done = planted.run(case)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    first = done.stdout.splitlines()[:30]
    text = "\n".join(first)
    assert any(line.startswith("FAIL  ") for line in first), text
    assert "  message:" in text and call in text, text
    # the first block is the planted operation's own: its call is the first call printed
    calls = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("impl.")]
    assert calls and calls[0].startswith(call), calls[:3]
    # the whole output stays readable
    assert len((done.stdout + done.stderr).encode("utf-8")) < 20_000, len(done.stdout + done.stderr)
    # no printed call holds a glimpse of a value (<tensor ...>) in place of the value
    for block in printed_calls(done.stdout):
        assert not any("<" in without_strings(line) for line in block["code"]), block["code"]
        assert not any("=<tensor" in line for line in block["counterexample"]), block["counterexample"]


def without_strings(line: str) -> str:
    """``line`` without its string literals (a ``'</w>'`` is a value, not a glimpse of one)."""
    return re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "", line)


def printed_calls(output: str) -> list[dict[str, Any]]:
    """Each failure block's printed call (its lines of Python), counterexample and replay command, from a run's
    output."""
    blocks: list[dict[str, Any]] = []
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("  the failing call into ") and line.endswith("as Python:"):
            code = []
            for following in lines[i + 1:]:
                if not following.startswith("    "):
                    break
                code.append(following[4:])
            blocks.append({"code": code, "replay": None, "counterexample": []})
        elif line == "  counterexample:" and blocks:
            for following in lines[i + 1:]:
                if not following.startswith("    "):
                    break
                blocks[-1]["counterexample"].append(following[4:])
        elif line.startswith("  its inputs, for your REPL: ") and blocks:
            blocks[-1]["replay"] = line.split(": ", 1)[1]
    return blocks


#: Runs each printed call against the buggy file and the correct one; prints one line per call.
REPRODUCE = """
import json, sys
import torch
from specformer.runner.loading import load_implementation

def answer(spec, code):
    lines = code.splitlines()
    scope = {"impl": load_implementation(spec).obj}
    exec("\\n".join(lines[:-1]), scope)
    try:
        return eval(lines[-1], scope)
    except Exception as exc:
        return ("raised", type(exc).__name__)

def same(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-7, equal_nan=True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b

for code, saved in json.load(open(sys.argv[3])):
    print("reproduced" if not same(answer(sys.argv[1], code), answer(sys.argv[2], code)) else "same: " + code)
    for path in saved:  # what the counterexample reads from the replayed file is there
        scope = {"torch": torch, "saved": torch.load(path.split(" ", 1)[0], weights_only=False)}
        assert isinstance(eval(path.split(" ", 1)[1], scope), torch.Tensor), path
"""


def test_every_printed_call_of_a_planted_bug_reproduces_the_wrong_answer(planted: PlantedRuns) -> None:
    """Each call printed by a run on a planted bug (of each of the five families), pasted into a fresh interpreter,
    answers differently on the buggy file than on the correct one: the call shown is one whose answer was wrong."""
    import json
    import shlex

    families = set()
    for case in PLANTED:
        correct, buggy, done = planted.run(case)
        blocks = printed_calls(done.stdout)
        assert blocks, done.stdout[-2000:]
        for block in blocks:  # a call that reads its large inputs from replay's file: write the file first
            if any("saved = torch.load(" in line for line in block["code"] + block["counterexample"]):
                assert block["replay"], block
                replayed = subprocess.run([sys.executable, "-m", "specformer", *shlex.split(block["replay"])[1:],
                                           "-o", "replay"], cwd=planted.root, capture_output=True, text=True,
                                          timeout=1800)
                assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
        codes = planted.root / f"calls_{case}.json"
        saved = [[f"{file} {path}" for file in re.findall(r"torch\.load\('([^']+)'",
                                                           "\n".join(block["code"] + block["counterexample"]))[:1]
                  for path in re.findall(r"saved\['counterexample'\](?:\[[^\]]+\]|\.\w+)*",
                                         "\n".join(block["counterexample"]))] for block in blocks]
        codes.write_text(json.dumps([["\n".join(block["code"]), paths] for block, paths in zip(blocks, saved)]),
                         encoding="utf-8")
        script = planted.root / "reproduce.py"
        script.write_text(REPRODUCE, encoding="utf-8")
        ran = subprocess.run([sys.executable, str(script), buggy.name, correct.name, codes.name], cwd=planted.root,
                             capture_output=True, text=True, timeout=900)
        assert ran.returncode == 0, ran.stderr[-3000:]
        verdicts = ran.stdout.splitlines()
        assert len(verdicts) == len(blocks) and all(v == "reproduced" for v in verdicts), (case, ran.stdout)
        families.add(PLANTED[case][0])
    assert len(families) == 5


def test_the_call_shown_is_the_first_whose_answer_differs_from_the_references() -> None:
    """A rotation the wrong way is right at position 0: of a failing example's calls, the one at position 3 is
    shown, not the last; where the comparison cannot tell the calls apart (all agree, all differ, the reference
    refuses), the last one is."""
    from specformer.properties.tolerances import tolerance
    from specformer.runner.shrinking import DRAWN, rejected_call
    from specformer.runner.worker import run_locally

    reference = load_implementation("reference").obj

    class Backwards(type(reference)):  # type: ignore[misc]
        def rotary(self, x, positions, **params):  # type: ignore[no-untyped-def]
            return super().rotary(x, -positions, **params)

    def recorded(impl: object, positions: list[int], method: str = "rotary") -> tuple[dict, dict]:
        request = {"op": "call", "method": method, "args": (torch.ones(1, len(positions), 4, dtype=torch.float64),
                                                            torch.tensor(positions)),
                   "kwargs": {}, "optional": {"pairing": "interleaved"}, "names": (), "device": "cpu",
                   "count_flops": False, "process": 1}
        return request, run_locally(impl, {k: v for k, v in request.items() if k != "process"})

    tol = tolerance("float64")
    wrong, right = recorded(Backwards(), [0, 3]), recorded(Backwards(), [0, 0])
    assert rejected_call([wrong, right], tol) == 0
    assert rejected_call([right, right, wrong], tol) == 2
    assert rejected_call([right, right], tol) is None and rejected_call([wrong, wrong], tol) is None
    assert rejected_call([wrong], tol) is None  # one call: it is the last
    refused = recorded(Backwards(), [0, 3], "no_such_operation")
    assert rejected_call([refused, right], tol) is None
    assert "embedding_init" in DRAWN


def test_replay_writes_the_failing_call_out_and_is_offered_only_where_there_is_one(tmp_path: Path) -> None:
    from specformer.report.summary import failure_block

    source = (EXAMPLES / "tokenization.py").read_text(encoding="utf-8")
    path = tmp_path / "buggy.py"
    path.write_text(source.replace("for pair in merges:", "for pair in reversed(merges):"), encoding="utf-8")
    report = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "specformer", "run", "--impl", str(path), "--topic", "bpe",
                    "--report", str(report)], cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    done = subprocess.run([sys.executable, "-m", "specformer", "replay", str(report), "merge-order", "-o",
                           str(tmp_path / "out"), "--impl", str(path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "result = impl.bpe_encode('" in done.stdout, done.stdout
    row = {"claim": "bpe.x", "property": "bpe.y", "implementation": "mine", "device": "cpu", "dtype": "float64",
           "outcome": "fail", "message": "no counterexample to the claim as written", "as_expected": False}
    assert not any("specformer replay" in line for line in failure_block(row, report="r.json"))
    assert any("specformer replay" in line for line in failure_block({**row, "call": "impl.f(1)"}, report="r.json"))


def test_a_printed_call_is_python_with_its_imports_dtype_and_config_included(tmp_path: Path) -> None:
    """``dtype=torch.float32``, not ``<dtype>``; ``ModelConfig(...)`` with the import that defines it: the
    printed call runs as it is, in a fresh interpreter, against an implementation."""
    from specformer.protocol.blocks import ModelConfig
    from specformer.report.summary import render_implementation_call

    config = ModelConfig(vocab_size=10, d_model=4, heads=2, d_ff=8, encoder_layers=1)
    call = render_implementation_call("count_parameters", [config], {"dtype": torch.float32,
                                                                    "device": torch.device("cpu")})
    assert "<" not in call and "dtype=torch.float32" in call and "device=torch.device('cpu')" in call, call
    assert call.splitlines()[:2] == ["import torch", "from specformer.protocol.blocks import ModelConfig"], call
    (tmp_path / "impl_echo.py").write_text(
        "class Impl:\n    def count_parameters(self, config, dtype=None, device=None):\n"
        "        return (config.d_model, str(dtype), str(device))\nimpl = Impl()\n", encoding="utf-8")
    program = "from impl_echo import impl\n" + call.replace("impl.count_parameters(", "print(impl.count_parameters(") + ")"
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(4, 'torch.float32', 'cpu')", done.stdout
