"""Devices and the dtypes each runs: CPU always, CUDA when present.

CPU runs float32 and float64 (the reference's exact mode). CUDA runs float32 and the
low-precision dtypes float16 and bfloat16. A requested device that is absent yields
*skipped* rows, never failures.
"""

from __future__ import annotations

import torch

DEVICE_DTYPES: dict[str, tuple[str, ...]] = {
    "cpu": ("float32", "float64"),
    "cuda": ("float32", "float16", "bfloat16"),
}


def available(device: str) -> bool:
    """Whether ``device`` can run here."""
    if device == "cpu":
        return True
    if device == "cuda":
        return torch.cuda.is_available()
    return False


def requested_devices(choice: str) -> list[str]:
    """Devices for ``--device cpu|cuda|all``; ``all`` means every known device."""
    if choice == "all":
        return list(DEVICE_DTYPES)
    if choice not in DEVICE_DTYPES:
        raise ValueError(f"unknown device {choice!r}; choose cpu, cuda or all")
    return [choice]


def describe() -> dict[str, object]:
    """The devices present, for the report's environment header."""
    info: dict[str, object] = {"devices": [d for d in DEVICE_DTYPES if available(d)], "cuda": None}
    if torch.cuda.is_available():
        info["cuda"] = {
            "device_name": torch.cuda.get_device_name(0),
            "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
            "cuda_version": torch.version.cuda,
        }
    return info
