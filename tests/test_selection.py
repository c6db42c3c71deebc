"""Selections that talk back: what matches nothing is a usage error that lists what exists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specformer.runner import cli, devices
from specformer.claims import load_claims
from specformer.runner.cli import build_parser, main
from specformer.runner.selection import selection_problems, topic_selects

CLAIMS = {"masking.padding": "attention", "masking.causal-matrix": "attention", "scaling.variance": "attention"}
PROPS = {"masking.padded_keys": ("masking.padding", "padded_keys"),
         "scaling.variance_is_d_k": ("scaling.variance", "variance_is_d_k")}
CPU = {"cpu": ("float32", "float64")}


def problems(**kwargs: list[str]) -> list[str]:
    return selection_problems(CLAIMS, PROPS, kwargs.get("claims"), kwargs.get("property"), kwargs.get("topic"),
                              kwargs.get("dtype"), kwargs.get("devices", CPU))  # type: ignore[arg-type]


def test_what_matches_is_no_problem() -> None:
    assert problems(claims=["masking.*", "scaling.variance"], property=["masking.padded_keys", "variance_is_d_k"],
                    topic=["masking", "attention/scaling"], dtype=["float64"]) == []


def test_a_claim_glob_that_matches_nothing_lists_the_closest_or_the_topics() -> None:
    (misspelt,) = problems(claims=["maskng.*"])
    assert "'maskng.*' matches no claim" in misspelt and "masking.*" in misspelt
    (unknown,) = problems(claims=["zzz.*"])
    assert "topics: masking, scaling" in unknown


def test_a_property_name_or_topic_or_dtype_that_matches_nothing_says_what_exists() -> None:
    (prop,) = problems(property=["masking.padded"])
    assert "'masking.padded' names no property" in prop and "masking.padded_keys" in prop
    (topic,) = problems(topic=["maskin"])
    assert "'maskin' is not a topic" in topic and "attention/masking" in topic and "scaling" in topic
    (dtype,) = problems(dtype=["float16"])
    assert "cpu: float32, float64" in dtype and "--device cuda" in dtype


def test_a_topic_is_a_plain_name_or_family_slash_topic() -> None:
    assert topic_selects("masking.padding", "attention", ["masking"])
    assert topic_selects("masking.padding", "attention", ["attention/masking"])
    assert not topic_selects("masking.padding", "attention", ["scaling", "other/masking"])
    assert topic_selects("masking.padding", "attention", None)


def _problem(argv: list[str]) -> str | None:
    args = build_parser().parse_args(["run", *argv])
    args.profile = args.profile or "ci"
    return cli._selection_problem(args)


def test_the_command_checks_the_selection_against_the_real_catalogue() -> None:
    topic = next(iter(load_claims().values())).topic
    assert _problem(["--topic", topic, "--claims", f"{topic}.*"]) is None
    assert "--topic 'nonesuch' is not a topic" in (_problem(["--topic", "nonesuch"]) or "")
    assert "matches no claim" in (_problem(["--claims", "nonesuch.*"]) or "")


def test_cuda_without_a_gpu_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "available", lambda device: device == "cpu")
    assert "no CUDA device is available" in (_problem(["--device", "cuda"]) or "")
    assert _problem(["--device", "all"]) is None  # CUDA rows are then skipped


def test_a_misspelt_built_in_implementation_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--impl", "torch-mah"]) == 2
    assert main(["run", "--impl", "refrence"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'torch-mha'?" in err and "did you mean 'reference'?" in err


@pytest.mark.parametrize("argv, problem", [
    (["--threads", "0"], "--threads must be between 1 and"),
    (["--row-timeout", "0"], "--row-timeout must be a finite positive"),
    (["--seed", "-1"], "--seed must be between 0 and"),
])
def test_numbers_are_checked_before_the_run(argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *argv]) == 2
    assert problem in capsys.readouterr().err


def test_report_and_junit_paths_are_checked_before_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", "--report", str(tmp_path)]) == 2
    assert main(["run", "--junit", str(blocker / "sub" / "j.xml")]) == 2
    err = capsys.readouterr().err
    assert f"--report {str(tmp_path)!r} is a directory" in err
    assert "--junit" in err and "cannot be created or written" in err


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    import specformer

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"specformer {cli.version()}"
    assert cli.version() == specformer.__version__  # pyproject and the package agree


def test_a_selection_that_matches_nothing_exits_2_before_anything_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "specformer", "run", "--claims", "maskng.*", "--report", "R.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "matches no claim" in done.stderr and "masking.*" in done.stderr
    assert not (tmp_path / "R.json").exists()
