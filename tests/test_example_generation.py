"""Derandomized examples depend on the profile, the strategies and Hypothesis, not on what else is loaded.

Hypothesis mixes in constants collected from modules loaded from outside site-packages:
an editable checkout of specformer, or a module a run happens to import, would change the
examples a ``ci`` run draws. :func:`specformer.runner.profiles.pin_example_generation` turns
that off; this test imports a module full of constants between two identical runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent('''
    import json, sys
    {pin}
    from hypothesis import given, settings, strategies as st
    out = []

    @settings(derandomize=True, database=None, max_examples=80)
    @given(st.text(max_size=6), st.integers(), st.floats(allow_nan=False))
    def draw(s, i, x):
        out.append([s, i, x])

    if sys.argv[1:] == ["with"]:
        sys.path.insert(0, {folder!r})
        import manyconstants  # noqa: F401
    draw()
    print(json.dumps(out))
''')
CONSTANTS = ('WORDS = ["zq", "xy!", "<s>", "ab c", "QQ", "k", "mm", "~~", "xyzzy"] + [f"c{i}" for i in range(50)]\n'
             "NUMBERS = [1234567, -98765, 4242, 31337, 271828]\nFLOATS = [3.25, -7.5e-3, 1e30, 2.5e-9]\n")


def examples(tmp_path: Path, pinned: bool, loaded: bool) -> list:
    (tmp_path / "manyconstants.py").write_text(CONSTANTS, encoding="utf-8")
    script = tmp_path / f"draw_{pinned}.py"
    pin = "import specformer.runner.profiles  # pins example generation" if pinned else "pass"
    script.write_text(SCRIPT.format(pin=pin, folder=str(tmp_path)), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), *(["with"] if loaded else [])], capture_output=True, text=True,
                          timeout=1800, env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
    return json.loads(done.stdout)


def test_a_loaded_module_of_constants_changes_no_example(tmp_path: Path) -> None:
    assert examples(tmp_path, pinned=True, loaded=False) == examples(tmp_path, pinned=True, loaded=True)


def test_without_the_pin_it_would(tmp_path: Path) -> None:
    """The control: Hypothesis releases that collect local constants draw some of them."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # an older Hypothesis (6.100 has no providers module)
        pytest.skip("this Hypothesis collects no local constants: there is nothing to pin")
    if not hasattr(providers, "_get_local_constants"):
        pytest.skip("this Hypothesis collects no local constants: there is nothing to pin")
    assert examples(tmp_path, pinned=False, loaded=False) != examples(tmp_path, pinned=False, loaded=True)
