"""Report files read as data: bounded, checked, and never a reason to import anything.

Every command that reads a report named on its command line (``specformer diff``,
``replay``, ``merge``, ``site`` and ``run --failed``) reads it with :func:`read_report`
(or, for its own checks of the shape, :func:`read_json` and then :func:`report_problem`):

* size: at most :data:`MAX_BYTES` of JSON text, after decompression for a
  gzip-compressed file (told apart by its first two bytes, whatever its name), and a
  gzip file expands at most :data:`MAX_RATIO`-fold past :data:`RATIO_FLOOR`. A plain
  file's size and a gzip file's recorded size are checked before anything is read; the
  text is then read in chunks and reading stops past the bound (a gzip file can lie
  about its size, and a pipe has none);
* depth: at most :data:`MAX_DEPTH` nested arrays and objects, checked on the text before
  it is parsed (a report nests about six deep; Python's parser recurses, and a file of
  100,000 brackets would exhaust its stack);
* shape: a JSON object with ``"schema": "specformer-report"``, a ``schema_version`` of
  :data:`READABLE_VERSIONS`, ``rows`` a list of objects and, where present,
  ``environment`` and ``summary`` objects and ``implementations`` a list.

Every problem is one :class:`ReportFileError` whose one-line message names the file and
the problem. What a report names, an implementation's file or module among it, stays
data: this module imports nothing a report names, and the commands load only
implementations named on their own command line or built in.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import zlib
from pathlib import Path
from typing import Any, BinaryIO

SCHEMA_NAME = "specformer-report"
#: The report schema versions the commands read.
READABLE_VERSIONS = (1, 2)
#: The most JSON text a report file may hold (decompressed), in bytes.
MAX_BYTES = 512 * 2**20
#: The deepest nesting of arrays and objects a report file may hold.
MAX_DEPTH = 100
#: How many times its size a gzip-compressed report may expand once past :data:`RATIO_FLOOR` bytes: a report
#: compresses about 25-fold, a "gzip bomb" about a thousandfold (and can record any size it likes).
MAX_RATIO = 100
RATIO_FLOOR = 64 * 2**20
#: How much is read at a time.
CHUNK_BYTES = 2**20
GZIP_MAGIC = b"\x1f\x8b"

#: Why a file is not a report: :attr:`ReportFileError.reason`.
UNREADABLE, TOO_LARGE, NOT_JSON, TOO_DEEP, NOT_A_REPORT = ("unreadable", "too large", "not JSON", "too deep",
                                                          "not a report")

_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


#: The message of each reason, around its problem.
_MESSAGES = {UNREADABLE: "{}", TOO_LARGE: "too large to be read as a report ({})",
             NOT_JSON: "not a specformer report (not JSON: {})", TOO_DEEP: "not a specformer report ({})",
             NOT_A_REPORT: "not a specformer report ({})"}


class ReportFileError(ValueError):
    """A file that is not a report the commands can read; the message (one line) names the file and the problem.

    ``reason`` is one of :data:`UNREADABLE`, :data:`TOO_LARGE`, :data:`NOT_JSON`, :data:`TOO_DEEP` and
    :data:`NOT_A_REPORT`; ``problem`` says what is wrong (for :data:`NOT_JSON`, the parser's message).
    """

    def __init__(self, path: str | Path, reason: str, problem: str) -> None:
        self.path, self.reason, self.problem = str(path), reason, " ".join(problem.split())
        super().__init__(f"{self.path}: {_MESSAGES[reason].format(self.problem)}")


def _too_large(path: str | Path, limit: int, what: str) -> ReportFileError:
    return ReportFileError(path, TOO_LARGE, f"{what}; a report holds at most {limit:,} bytes of JSON")


def _gzip_size(f: BinaryIO) -> int | None:
    """The size a gzip file records for its (last) member, or ``None`` when the file cannot be seeked."""
    if not f.seekable():
        return None
    f.seek(-4, os.SEEK_END)
    size = int.from_bytes(f.read(4), "little")
    f.seek(0)
    return size


def read_bytes(path: str | Path, limit: int = MAX_BYTES) -> bytes | bytearray:
    """The content of ``path``, decompressed if it is gzip, of at most ``limit`` bytes (:class:`ReportFileError`)."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise ReportFileError(path, UNREADABLE, "is a folder, not a report")
            packed = f.peek(2)[:2] == GZIP_MAGIC
            recorded = _gzip_size(f) if packed and info.st_size >= 18 else None
            if recorded is not None and recorded > limit:
                raise _too_large(path, limit, f"its gzip trailer records {recorded:,} bytes")
            if not packed and stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise _too_large(path, limit, f"it holds {info.st_size:,} bytes")
            stream: Any = gzip.GzipFile(fileobj=f, mode="rb") if packed else f
            expands = packed and stat.S_ISREG(info.st_mode)  # a pipe's compressed size is not known
            bound = min(limit, max(RATIO_FLOOR, MAX_RATIO * info.st_size)) if expands else limit
            data = bytearray()
            while True:
                chunk = stream.read(min(CHUNK_BYTES, bound + 1 - len(data)))
                if not chunk:
                    return data
                data += chunk
                if len(data) > bound:
                    if bound < limit:
                        raise ReportFileError(path, TOO_LARGE, f"decompressed, its {info.st_size:,} bytes expand "
                                                               f"more than {MAX_RATIO}-fold, past {bound:,} bytes; a "
                                                               "report compresses about 25-fold")
                    raise _too_large(path, limit, f"{'decompressed, it holds' if packed else 'it holds'} more than "
                                                  f"{limit:,} bytes")
    except FileNotFoundError:
        raise ReportFileError(path, UNREADABLE, "no such file") from None
    except IsADirectoryError:
        raise ReportFileError(path, UNREADABLE, "is a folder, not a report") from None
    except (OSError, EOFError, zlib.error) as exc:
        why = getattr(exc, "strerror", None) or exc or type(exc).__name__
        raise ReportFileError(path, UNREADABLE, f"cannot be read ({why})") from None


def nesting_problem(text: str, limit: int = MAX_DEPTH) -> str | None:
    """Why ``text`` nests too deep to be parsed, or ``None``; checked without parsing it.

    Strings are taken out, then the brackets alone are kept, and innermost pairs (``[]``,
    ``{}``) are removed a level at a time: JSON within ``limit`` levels is empty after at
    most ``limit`` rounds. Brackets that do not pair up are left to the parser's message
    where they are few enough for it to read safely.
    """
    skeleton = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    for depth in range(limit + 1):
        if not skeleton:
            return None
        inner = _INNERMOST.sub("", skeleton)
        if inner == skeleton:  # brackets that do not pair up: not JSON
            return None if depth + len(skeleton) <= limit else \
                f"{len(skeleton):,} brackets that do not pair up, nested up to {depth + len(skeleton):,} deep"
        skeleton = inner
    return f"arrays and objects nested more than {limit} deep; a report nests about 6 deep"


def read_json(path: str | Path, limit: int = MAX_BYTES, depth: int = MAX_DEPTH) -> Any:
    """The JSON value in ``path`` (plain or gzip), within ``limit`` bytes and ``depth`` levels
    (:class:`ReportFileError`)."""
    data = read_bytes(path, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportFileError(path, NOT_JSON, f"not UTF-8 text: {exc}") from None
    del data
    problem = nesting_problem(text, depth)
    if problem:
        raise ReportFileError(path, TOO_DEEP, problem)
    try:
        return json.loads(text)
    except RecursionError:  # not expected after the check above, but never a traceback
        raise ReportFileError(path, TOO_DEEP, "nested too deep to read") from None
    except ValueError as exc:
        raise ReportFileError(path, NOT_JSON, str(exc)) from None


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    names = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
             type(None): "null"}
    return names.get(type(value), type(value).__name__)


def report_problem(data: Any) -> str | None:
    """Why ``data`` (parsed JSON) is not a report the commands read, or ``None`` (module doc: shape)."""
    if not isinstance(data, dict):
        return f"{_json_type(data)}, not an object"
    if data.get("schema") != SCHEMA_NAME:
        return f'no "schema": "{SCHEMA_NAME}"'
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        shown = json.dumps(version)[:20] if isinstance(version, (int, float, str, type(None))) else _json_type(version)
        return f"schema_version {shown}, not one this version reads ({', '.join(map(str, READABLE_VERSIONS))})"
    rows = data.get("rows")
    if not isinstance(rows, list):
        return f"it needs a list of rows; rows is {_json_type(rows)}"
    for n, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"it needs a list of rows, each an object; rows[{n}] is {_json_type(row)}"
    for key, kind in (("environment", dict), ("summary", dict), ("implementations", list)):
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f"{key} is {_json_type(data[key])}, not {_json_type(kind())}"
    return None


def read_report(path: str | Path, limit: int = MAX_BYTES, depth: int = MAX_DEPTH) -> dict[str, Any]:
    """The report in ``path``: :func:`read_json`, then :func:`report_problem` (:class:`ReportFileError`)."""
    data = read_json(path, limit, depth)
    problem = report_problem(data)
    if problem:
        raise ReportFileError(path, NOT_A_REPORT, problem)
    return data


__all__ = ["MAX_BYTES", "MAX_DEPTH", "READABLE_VERSIONS", "ReportFileError", "nesting_problem", "read_bytes",
           "read_json", "read_report", "report_problem"]
