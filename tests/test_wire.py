"""The wire codec carries the implementation's answers unchanged, whatever text they hold.

JSON reads a high surrogate escaped next to a low one (``"\\ud800\\udc00"``) as one
character, U+10000: a tokenizer that returns two lone surrogates would reach the checker
as one valid character. Strings that hold a surrogate cross as UTF-32 code units instead.
"""

from __future__ import annotations

import pytest
import torch

from specformer.runner.wire import _HEADER, MAX_STRING, WireError, decode, encode


@pytest.mark.parametrize("value", [
    "\ud800\udc00",  # a high then a low surrogate: two code points, not U+10000
    "a\udfffb\ud83d",
    "\U00010000 plain \u2581text",
    ["x\ud800", ("\udc00", {"k\ud800": "\ud800\udc00"}), b"\xff", 1.5, None],
])
def test_strings_come_back_code_point_for_code_point(value: object) -> None:
    back = decode(encode(value))
    assert back == value
    assert [len(s) for s in _strings(back)] == [len(s) for s in _strings(value)]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    return []


def test_a_long_string_with_a_surrogate_is_cut_like_any_other() -> None:
    back = decode(encode("\ud800" * (MAX_STRING + 5)))
    assert back == "\ud800" * MAX_STRING + " [cut]"
    plain = decode(encode("a" * (MAX_STRING + 5)))
    assert plain == "a" * MAX_STRING + " [cut]"


def test_a_tagged_string_of_broken_code_units_is_a_wire_error() -> None:
    message = encode(["\ud800", torch.zeros(1)])
    (length,) = _HEADER.unpack_from(message)
    header = message[_HEADER.size:_HEADER.size + length]
    broken_header = header.replace(b'"n": 4', b'"n": 3', 1)  # the string's 4 bytes read as 3
    assert broken_header != header
    broken = _HEADER.pack(len(broken_header)) + broken_header + message[_HEADER.size + length:]
    with pytest.raises(WireError, match="UTF-32"):
        decode(broken)
