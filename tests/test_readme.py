"""The README's example implementation loads by path and conforms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import run_row
from specformer.runner.loading import load_implementation

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example(tmp_path: Path) -> Path:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(# my_attention\.py\n.*?)```", text, re.DOTALL)
    assert block, "the README has no `# my_attention.py` example"
    path = tmp_path / "my_attention.py"
    path.write_text(block.group(1), encoding="utf-8")
    return path


@pytest.mark.parametrize("qualname", ["attention.output_matches_the_formula",
                                      "masking.later_positions_do_not_change_earlier_outputs",
                                      "attention.weights_lie_strictly_between_zero_and_one_as_written"])
def test_the_readme_example_conforms(tmp_path: Path, qualname: str) -> None:
    impl = load_implementation(str(readme_example(tmp_path)))
    assert impl.name == "mine" and impl.operations == ["attention"]
    row = run_row(qualname, impl.obj, "float32")
    assert row.as_expected, f"{qualname}: {row.outcome}: {row.message}"


def test_the_readme_names_every_operation_of_the_protocol() -> None:
    """A user of the wheel reads the README and `specformer protocol`: every operation is named there with
    its call, so none is missed."""
    from specformer.protocol import FAMILIES

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [op.method for family in FAMILIES.values() for op in family.operations if f"`{op.method}(" not in text]
    assert not missing, f"the README does not name {missing}"
