"""A real English corpus of at least 10 MB, built from text that is already installed.

Tokenizer training needs natural text, and this project downloads nothing. Python itself
and the packages installed beside it ship plenty of English: documentation, docstrings,
licence texts and READMEs. :func:`build_corpus` collects them, in this fixed order, until
the corpus holds at least ``min_bytes`` bytes of UTF-8:

1. ``seeds`` -- the ``*.txt`` documents of a folder given as an argument (the teaching
   documents in ``/work/shared/seeds``), optional;
2. ``pydoc-topics`` -- the help topics of ``pydoc_data.topics`` (the language reference
   text behind ``help("if")``);
3. ``stdlib-docstrings`` -- the docstrings of the standard library's modules, classes and
   functions, read from the source files with :mod:`ast` (nothing is imported, so no module
   runs: ``antigravity``, ``this``, ``turtle``, ``idlelib`` are harmless);
4. ``package-texts`` -- prose files in site-packages: licences, READMEs, ``METADATA`` long
   descriptions, ``.txt``, ``.rst`` and ``.md`` files;
5. ``package-docstrings`` -- the docstrings of the ``.py`` files in site-packages, again
   through :mod:`ast`.

Only English prose is kept (see :func:`looks_like_prose`): test data, word lists, tables of
numbers and code are dropped; doctest examples (``>>>`` up to the next blank line) and
fenced code blocks are cut out of what is kept. Exact duplicates (the same licence shipped
by twenty packages, an inherited docstring) are kept once. Test folders are skipped.

Deterministic: every folder is walked in sorted order and the same installed files give
the same bytes. The corpus is cached in memory for the life of the process (nothing is
cached on disk; pass ``output`` to write a copy). What it is not: a balanced or a clean
corpus. It is technical English, heavy in words such as ``return``, ``None`` and
``parameter``, with some markup left (reStructuredText roles, Markdown links).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sysconfig
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_MIN_BYTES", "Corpus", "SourceStats", "build_corpus", "looks_like_prose", "strip_code"]

#: At least 10 MB, read as the larger 10 MiB: 10 * 2**20 bytes of UTF-8.
DEFAULT_MIN_BYTES = 10 * 2**20

#: Folders never entered: tests and their data, caches, other interpreters' packages.
_SKIPPED_FOLDERS = frozenset({"__pycache__", "test", "tests", "testing", "idle_test", "site-packages",
                              "dist-packages", "node_modules", ".git"})
#: Source files larger than this are generated tables or vendored bundles, not prose.
_MAX_SOURCE_BYTES = 1_000_000
#: Text files larger than this are data (word lists, test fixtures).
_MAX_TEXT_BYTES = 500_000
#: Names (without suffix) of prose files that often have no suffix.
_PROSE_NAMES = ("LICENSE", "LICENCE", "COPYING", "README", "NOTICE", "AUTHORS", "METADATA", "PKG-INFO")
_PROSE_SUFFIXES = frozenset({".txt", ".rst", ".md"})
#: The most frequent English function words; prose is full of them, data and code are not.
_FUNCTION_WORDS = frozenset(
    "the of and to a in is it that for as with be on by this are or an not from at which if can "
    "will all but have has was were their its there these when you your than then also may".split()
)

_FENCED_CODE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_PUNCTUATION = "\"'`*_()[]{}<>.,;:!?"


@dataclass(frozen=True)
class SourceStats:
    """What one source contributed: documents kept and their UTF-8 bytes (separators excluded)."""

    documents: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Corpus:
    """The corpus text and, per source name (in order), what that source contributed."""

    text: str
    sources: dict[str, SourceStats] = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        """Length of :attr:`text` in UTF-8 bytes."""
        return len(self.text.encode("utf-8"))


def looks_like_prose(text: str, *, min_words: int = 5) -> bool:
    """Whether ``text`` reads as English prose rather than data or code.

    Three tests, all cheap and deterministic: at least ``min_words`` whitespace-separated
    words; letters make up at least 70% of the non-space characters; and at least 10% of the
    words (lower-cased, outer punctuation stripped) are common English function words
    (``the``, ``of``, ``and``, ...). Running English has 30-50%; word lists, tables of
    numbers, identifiers and source code have almost none. It cannot tell English from
    another language that shares those words, and it is not a grammar check.
    """
    words = text.split()
    if len(words) < min_words:
        return False
    visible = sum(len(word) for word in words)
    letters = sum(char.isalpha() for char in text)
    if letters < 0.7 * visible:
        return False
    function_words = sum(word.strip(_PUNCTUATION).lower() in _FUNCTION_WORDS for word in words)
    return function_words >= 0.1 * len(words)


def strip_code(text: str) -> str:
    """``text`` without fenced code blocks (Markdown ```` ``` ```` / ``~~~``) and doctest examples.

    A doctest example starts at a line whose first non-blank characters are ``>>>`` and runs
    to the next blank line (its expected output included), as :mod:`doctest` reads it.
    Indented reStructuredText literal blocks are not recognised and stay.
    """
    text = _FENCED_CODE.sub("", text)
    kept: list[str] = []
    in_example = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(">>>"):
            in_example = True
        elif not stripped:
            in_example = False
        if not in_example:
            kept.append(line)
    return "\n".join(kept).strip()


def build_corpus(*, seeds: str | os.PathLike[str] | None = None, min_bytes: int = DEFAULT_MIN_BYTES,
                 output: str | os.PathLike[str] | None = None) -> Corpus:
    """Collect at least ``min_bytes`` bytes of English text from installed files (see the module).

    ``seeds``: a folder whose ``*.txt`` files come first (optional). Sources are read in the
    module's order and collection stops after the document that reaches ``min_bytes``, so
    the corpus is a prefix of the full stream and a little larger than ``min_bytes``.
    Documents are joined by a blank line. The result is cached for this process per
    ``(seeds, min_bytes)``; ``output``, when given, receives the text as UTF-8.

    Raises ``ValueError`` for ``min_bytes < 1`` and ``RuntimeError`` when every source
    together holds fewer than ``min_bytes`` bytes.
    """
    if min_bytes < 1:
        raise ValueError(f"min_bytes must be positive, got {min_bytes}")
    seeds_key = None if seeds is None else str(Path(seeds).resolve())
    corpus = _build_cached(seeds_key, min_bytes)
    if output is not None:
        Path(output).write_text(corpus.text, encoding="utf-8")
    return corpus


@functools.lru_cache(maxsize=None)
def _build_cached(seeds: str | None, min_bytes: int) -> Corpus:
    """:func:`build_corpus` without the argument checks and the output file, cached per process."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    packages = sorted({Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")})
    sources: list[tuple[str, Iterable[str]]] = [
        ("seeds", _seed_documents(Path(seeds)) if seeds is not None else ()),
        ("pydoc-topics", _pydoc_topics()),
        ("stdlib-docstrings", _docstrings([stdlib])),
        ("package-texts", _prose_files(packages)),
        ("package-docstrings", _docstrings(packages)),
    ]
    documents: list[str] = []
    stats: dict[str, SourceStats] = {}
    seen: set[str] = set()
    total = 0
    for name, stream in sources:
        count = size = 0
        for document in stream:
            if total >= min_bytes:
                break
            if document in seen:
                continue
            seen.add(document)
            documents.append(document)
            length = len(document.encode("utf-8"))
            count, size = count + 1, size + length
            total += length + (2 if len(documents) > 1 else 0)  # the "\n\n" before it
        stats[name] = SourceStats(count, size)
    if total < min_bytes:
        raise RuntimeError(f"only {total} bytes of English text found in the installed files, "
                           f"{min_bytes} asked for")
    return Corpus("\n\n".join(documents), stats)


def _seed_documents(folder: Path) -> Iterator[str]:
    """The ``*.txt`` files of ``folder`` (sorted by name), whole; ``ValueError`` if it is no folder."""
    if not folder.is_dir():
        raise ValueError(f"seeds folder {str(folder)!r} does not exist or is not a folder")
    for path in sorted(folder.glob("*.txt")):
        text = _read_text(path)
        if text and text.strip():
            yield text.strip()


def _pydoc_topics() -> Iterator[str]:
    """The help topics of ``pydoc_data.topics``, by topic name; nothing if it is not installed."""
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions split it off
        return
    for name in sorted(topics):
        text = strip_code(topics[name])
        if looks_like_prose(text):
            yield text


def _docstrings(roots: list[Path]) -> Iterator[str]:
    """Prose docstrings of every ``.py`` file under ``roots``, file by file in sorted order.

    Within a file: the module's docstring, then its classes' and functions' in the order
    of the source (nested definitions after their parent's own docstring).
    """
    for path in _walk(roots, lambda p: p.suffix == ".py"):
        try:
            if path.stat().st_size > _MAX_SOURCE_BYTES:
                continue
            source = path.read_bytes()
            with warnings.catch_warnings():  # invalid escapes, "is" with a literal, ...
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # unreadable, Python 2, null bytes, too deeply nested
        for docstring in _tree_docstrings(tree):
            text = strip_code(docstring)
            if looks_like_prose(text):
                yield text


def _tree_docstrings(node: ast.AST) -> Iterator[str]:
    """Docstrings of ``node`` and of the definitions nested in it, depth first, in source order."""
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        docstring = ast.get_docstring(node, clean=True)
        if docstring:
            yield docstring
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)):  # definitions live in statements
            yield from _tree_docstrings(child)


def _prose_files(roots: list[Path]) -> Iterator[str]:
    """Prose text files under ``roots``: ``.txt``/``.rst``/``.md`` and licence/README/METADATA files."""
    def is_text_file(path: Path) -> bool:
        return path.suffix.lower() in _PROSE_SUFFIXES or path.name.upper().startswith(_PROSE_NAMES)

    for path in _walk(roots, is_text_file):
        try:
            if path.stat().st_size > _MAX_TEXT_BYTES:
                continue
        except OSError:
            continue
        text = _read_text(path)
        if text is None:
            continue
        if path.name in ("METADATA", "PKG-INFO"):  # e-mail style headers, then the long description
            text = text.partition("\n\n")[2]
        text = strip_code(text)
        if looks_like_prose(text, min_words=50):
            yield text


def _walk(roots: list[Path], wanted: Callable[[Path], bool]) -> Iterator[Path]:
    """Files under ``roots`` for which ``wanted(path)`` holds, sorted by path; symlinks not followed.

    Folders named in ``_SKIPPED_FOLDERS`` are not entered (below a root; the root itself may
    be ``site-packages``).
    """
    for root in roots:
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = sorted(name for name in subfolders if name not in _SKIPPED_FOLDERS)
            for name in sorted(files):
                path = Path(folder, name)
                if wanted(path) and not path.is_symlink():
                    yield path


def _read_text(path: Path) -> str | None:
    """The file as UTF-8 text (a BOM dropped, line ends normalised); ``None`` if it is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
