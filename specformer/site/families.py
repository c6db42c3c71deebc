"""The site by family, in the order a transformer processes text: navigation and landing pages.

:data:`FAMILY_ORDER` puts the five families of ``spec/`` in the order data flows through
a model (tokenization, embeddings, positional encodings, attention, the transformer
block); the scaling laws are a topic of embeddings and come last within it. Within a
family, topics follow the documents (:data:`TOPIC_ORDER`; a topic not listed there
follows, sorted). :func:`family_page` writes a family's landing page: what it covers, its
verdict counts, its topics, and its most striking false or imprecise claims with the
counterexample a refutation found or a figure. :func:`nav` is the MkDocs navigation of
the whole site.

This module does not read reports from disk; it is given rows already loaded and escapes
every value of theirs it writes (:func:`specformer.site.tables.text`, :func:`fence`).
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from specformer.claims import DOCUMENTS, NEEDS_REFUTATION, Claim
from specformer.site.spectext import spec_inline, spec_markdown, title_link
from specformer.site.tables import badge, count_table, fence, plain, text

#: Families in the order a transformer processes text, with the title the site gives each.
FAMILY_ORDER: dict[str, str] = {
    "tokenization": "Tokenization",
    "embeddings": "Embeddings",
    "positions": "Positional encodings",
    "attention": "Attention",
    "blocks": "The transformer block",
}

#: What each family covers, for its landing page and the home page.
FAMILY_SUMMARY: dict[str, str] = {
    "tokenization": ("How text becomes a sequence of integer ids: splitting into words, building a "
                     "vocabulary, and the subword algorithms (byte pair encoding, WordPiece, the unigram "
                     "language model, SentencePiece), checked on the reference tokenizers and on Hugging Face "
                     "`tokenizers`, `sentencepiece` and `tiktoken`."),
    "embeddings": ("How ids become vectors: one-hot codes, word2vec, GloVe and fastText, cosine similarity "
                   "and analogies, contextual embeddings from a real pretrained model, and the scaling laws "
                   "quoted beside them (parameters, tokens, compute)."),
    "positions": ("How a model learns where a token is: sinusoidal encodings, learned absolute positions, "
                  "rotary position embeddings (RoPE) and ALiBi's linear biases; periodicity, relative "
                  "offsets, extrapolation."),
    "attention": ("How tokens look at each other: scaled dot-product attention, why the scores are divided "
                  "by the square root of the key dimension, causal and padding masks, and multi-head "
                  "attention."),
    "blocks": ("How attention becomes a model: layer normalization, the position-wise feed-forward network, "
               "encoder and decoder layers with their residual connections, and what a transformer's size "
               "and cost are in parameters and operations."),
}

#: Topics of each family in the order the documents present them.
TOPIC_ORDER: dict[str, tuple[str, ...]] = {
    "tokenization": ("words", "vocabulary", "bpe", "wordpiece", "unigram", "sentencepiece"),
    "embeddings": ("onehot", "initialisation", "word2vec", "glove", "fasttext", "similarity", "contextual", "laws"),
    "positions": ("sinusoidal", "absolute", "rope", "alibi"),
    "attention": ("attention", "scaling", "masking", "multihead"),
    "blocks": ("layernorm", "ffn", "encoder", "decoder", "size", "cost"),
}

#: How many false or imprecise claims a landing page shows in full.
STRIKING = 4


def families(claims: Mapping[str, Claim]) -> list[str]:
    """The families that hold claims, in :data:`FAMILY_ORDER` (unknown ones after, sorted)."""
    found = {c.family for c in claims.values()}
    return [f for f in FAMILY_ORDER if f in found] + sorted(found - FAMILY_ORDER.keys())


def family_title(family: str) -> str:
    """The title the site gives a family."""
    return FAMILY_ORDER.get(family, family.capitalize())


def family_topics(family: str, claims: Mapping[str, Claim]) -> list[str]:
    """The topics of a family in the documents' order (unlisted ones after, sorted)."""
    found = {c.topic for c in claims.values() if c.family == family}
    order = TOPIC_ORDER.get(family, ())
    return [t for t in order if t in found] + sorted(found - set(order))


def document_title(document: str) -> str:
    """A source document's title (its first heading), or its file name when unknown."""
    return DOCUMENTS.get(document, document)


def source_line(document: str, section: str, says: str = "") -> str:
    """A citation: the document's title (file name in its tooltip), the section and what
    it says (spec text: :func:`specformer.site.spectext.spec_inline`)."""
    cite = f'<span class="sf-doc" title="{html.escape(document)}">{html.escape(document_title(document))}</span>'
    return f"*{cite}*, section “{spec_inline(section)}”" + (f": {spec_inline(says)}" if says else "")


def _counterexample(rows: Sequence[dict[str, Any]]) -> str:
    """The first counterexample a refutation found among ``rows``, shortened; ``""`` when none."""
    for row in rows:
        if row.get("outcome") == "refuted" and plain(row.get("counterexample")):
            found = plain(row.get("counterexample")).strip()
            lines = found.splitlines()
            return "\n".join(lines[:12]) + ("\n…" if len(lines) > 12 else "")
    return ""


def striking(claims: Sequence[Claim], rows: Mapping[str, Sequence[dict[str, Any]]],
             plots: Mapping[str, Sequence[tuple[str, str]]]) -> list[Claim]:
    """The family's false or imprecise claims, those with a figure or a counterexample first."""
    wrong = [c for c in claims if c.verdict in NEEDS_REFUTATION]
    return sorted(wrong, key=lambda c: (c.verdict != "false as stated", not plots.get(c.id),
                                        not _counterexample(rows.get(c.id, ()))))


def _one_line(value: str) -> str:
    return " ".join(value.split())


def family_page(family: str, claims: Mapping[str, Claim], topic_titles: Mapping[str, str],
                rows: Mapping[str, Sequence[dict[str, Any]]] | None = None,
                plots: Mapping[str, Sequence[tuple[str, str]]] | None = None,
                figure: Any = None) -> str:
    """The landing page of a family: what it covers, verdict counts, topics, striking claims.

    ``rows`` are the report's rows by claim (``None`` without a report); ``plots`` the
    figures by claim; ``figure(file, caption)`` writes one figure's Markdown.
    """
    rows = rows or {}
    plots = plots or {}
    mine = [c for c in claims.values() if c.family == family]
    out = [f"# {family_title(family)}", FAMILY_SUMMARY.get(family, ""),
           f"{len(mine)} claims in {len(family_topics(family, claims))} topics, in the order the documents "
           "present them:"]
    topic_lines = []
    for topic in family_topics(family, claims):
        of_topic = [c for c in mine if c.topic == topic]
        verdicts = Counter(c.verdict for c in of_topic)
        wrong = sum(verdicts[v] for v in NEEDS_REFUTATION)
        link = f"[{spec_inline(topic_titles.get(topic, topic))}](../topics/{topic}.md)"
        topic_lines.append(f"- {link}: {len(of_topic)} claims"
                           + (f", {wrong} false or imprecise as stated" if wrong else ""))
    out.append("\n".join(topic_lines))
    out += ["## Verdicts", count_table(Counter(c.verdict for c in mine), "Verdict")]
    chosen = striking(mine, rows, plots)
    out.append("## False or imprecise as stated")
    if not chosen:
        out.append("None: every checkable claim of this family holds as written.")
    for claim in chosen[:STRIKING]:
        out.append(f"### {title_link(claim, '../claims/')}")
        out.append(badge(claim.verdict, "verdict"))
        if claim.as_written:
            out.append(f"As written: {spec_inline(claim.as_written)}")
        if claim.corrected:
            corrected = _one_line(claim.corrected)
            out.append("Corrected: " + spec_markdown(corrected if "$" in corrected or "\\(" in corrected
                                                     else f"\\({corrected}\\)"))
        found = _counterexample(rows.get(claim.id, ()))
        if found:
            out += ["The counterexample a refutation found:", fence(found, "text")]
        elif plots.get(claim.id) and figure is not None:
            out.append(figure(*plots[claim.id][0]))
    rest = chosen[STRIKING:]
    if rest:
        out.append("Also false or imprecise as stated: " + ", ".join(
            title_link(c, "../claims/") for c in rest) + ".")
    return "\n\n".join(part for part in out if part) + "\n"


def nav(claims: Mapping[str, Claim], topic_titles: Mapping[str, str],
        protocol_families: Iterable[str] = ()) -> list[Any]:
    """The site's navigation: home, a section per family (landing page, then its topics in
    the documents' order), implementations, the claims overview, the protocol and the
    reference pages. Claim pages are reached from their topic and family pages, not
    listed, so that every page's navigation stays small."""
    entries: list[Any] = [{"Home": "index.md"}]
    for family in families(claims):
        pages: list[Any] = [{"Overview": f"families/{family}.md"}]
        pages += [{topic_titles.get(t, t): f"topics/{t}.md"} for t in family_topics(family, claims)]
        entries.append({family_title(family): pages})
    entries.append({"Implementations": [{"Compatibility": "implementations/index.md"},
                                        {"All claims": "claims/index.md"}]})
    protocol = [{family_title(f): f"protocol/{f}.md"} for f in protocol_families]
    entries.append({"Protocol": [{"Overview": "protocol/index.md"}, *protocol]})
    entries.append({"Reference": [{"Conventions": "conventions.md"}, {"Report schema": "report-schema.md"},
                                  {"API": "api.md"}]})
    return entries

