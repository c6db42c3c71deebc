"""The example adapters of ``examples/`` conform, checked through the real command line.

Each example is a user's adapter for one family, written from ``specformer new FAMILY``
and the protocol's documentation alone. One ``specformer run`` checks all five on a
small selection of their families' claims (one process: the suite's start-up is paid
once), so the examples cannot rot. The skeleton itself is checked too: every family's
skeleton imports, provides nothing until an operation is written, and an operation left
marked is reported once as not provided, never as an error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specformer.runner.loading import ImplementationLoadError, load_implementation
from specformer.protocol import FAMILIES, provided_operations
from specformer.runner.skeleton import not_implemented, skeleton

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: Family -> (the example's operations, the claims the test runs it on).
SELECTION = {
    "attention": (["attention", "multihead_attention"], ["attention.scaled-dot-product", "multihead.concat-heads"]),
    "positions": (["positional_encoding", "rotary"], ["sinusoidal.formula", "rope.rotation"]),
    "blocks": (["feed_forward", "layer_norm"], ["layernorm.formula", "ffn.formula"]),
    "tokenization": (["bpe_encode", "bpe_train"], ["bpe.most-frequent-pair"]),
    "embeddings": (["cosine_similarity", "embedding_lookup"], ["onehot.orthogonal-equidistant",
                                                               "similarity.cosine-formula"]),
}


def test_there_is_one_example_per_family() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted(FAMILIES) == sorted(SELECTION)


@pytest.mark.parametrize("family", sorted(SELECTION))
def test_each_example_loads_with_its_operations(family: str) -> None:
    impl = load_implementation(str(EXAMPLES / f"{family}.py"))
    assert impl.operations == SELECTION[family][0]
    assert impl.name == f"example-{family}"


def test_the_examples_conform_through_the_command_line(tmp_path: Path) -> None:
    impls = [a for family in sorted(SELECTION) for a in ("--impl", str(EXAMPLES / f"{family}.py"))]
    claims = ",".join(c for _, wanted in SELECTION.values() for c in wanted)
    done = subprocess.run([sys.executable, "-m", "specformer", "run", *impls, "--claims", claims,
                           "--report", str(tmp_path / "R.json")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert report["summary"]["state"] == "complete" and report["summary"]["ok"]
    passed = {(r["implementation"], r["claim"]) for r in report["rows"] if r["outcome"] == "pass"}
    for family, (_, wanted) in SELECTION.items():
        for claim in wanted:
            assert (f"example-{family}", claim) in passed, f"example-{family} did not pass {claim}"
    assert not any(r["implementation"] == "math" for r in report["rows"])  # a user's run: only its own rows


# -- the skeleton ----------------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_skeleton_lists_every_operation_and_provides_none(family: str, tmp_path: Path) -> None:
    path = tmp_path / f"my_{family}.py"
    path.write_text(skeleton(family), encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    for op in FAMILIES[family].operations:
        assert f"    def {op.method}(" in text
    with pytest.raises(ImplementationLoadError, match="still marked @not_implemented"):
        load_implementation(str(path))


def test_a_written_operation_is_provided_and_a_marked_one_is_not() -> None:
    class Half:
        name = "half"

        def embedding_lookup(self, ids, table):  # type: ignore[no-untyped-def]
            return table[ids]

        @not_implemented
        def cosine_similarity(self, a, b):  # type: ignore[no-untyped-def]
            return a  # never runs: the marker discards the body

    assert provided_operations(Half()) == {"embedding_lookup"}
    with pytest.raises(NotImplementedError):
        Half().cosine_similarity(1, 2)


def test_an_unmarked_operation_raising_not_implemented_is_still_provided() -> None:
    class Raises:
        name = "raises"

        def cosine_similarity(self, a, b):  # type: ignore[no-untyped-def]
            raise NotImplementedError  # an error of the implementation, checked like any other

    assert provided_operations(Raises()) == {"cosine_similarity"}


def test_new_writes_a_skeleton_and_never_overwrites(tmp_path: Path) -> None:
    from specformer.runner.cli import main

    target = tmp_path / "mine.py"
    assert main(["new", "attention", "-o", str(target)]) == 0
    assert "class MyAttention" in target.read_text(encoding="utf-8")
    target.write_text("# mine", encoding="utf-8")
    assert main(["new", "attention", "-o", str(target)]) == 2
    assert target.read_text(encoding="utf-8") == "# mine"


# -- implementations written the plain way -------------------------------------------------


@pytest.mark.parametrize("family", ["tokenization", "embeddings"])
def test_the_plain_implementations_pass_every_row_of_their_family(family: str, tmp_path: Path) -> None:
    """benchmarks/simple/: the documents' own algorithms written from the protocol (naive BPE, Python-loop
    Viterbi, loop-based skip-gram). A property that fails them fails a correct implementation; one that
    makes a row slow shows in benchmarks/simple_rows.py."""
    done = subprocess.run([sys.executable, "-m", "specformer", "run", "--impl",
                           str(ROOT / "benchmarks" / "simple" / f"{family}.py"), "--report", str(tmp_path / "R.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    outcomes = {r["outcome"] for r in report["rows"]}
    assert report["summary"]["ok"] and "pass" in outcomes, outcomes
