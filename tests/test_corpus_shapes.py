"""The corpus reader on the shapes and bytes of issue 13: a book without parts, English
labels, a BOM and CRLF, NFD text and paths equal under NFC."""

from __future__ import annotations

import json
import unicodedata

from indexer.corpus.layout import read_corpus, section_heading
from indexer.corpus.source import MemorySource, OverlaySource
from indexer.embedders.fake import FakeEmbedder
from indexer.indexing.sidecars import build

WORK = "corpus/voyage"


def _flat(extra: dict[str, bytes] | None = None) -> MemorySource:
    files = {
        f"{WORK}/summary.md": b"---\ntitle: The Voyage\nlang: en\n---\n",
        f"{WORK}/00-preface/source.md": b"---\ntitle: Preface\n---\nWhy.\n",
        f"{WORK}/chapter-01/source.md": b"---\ntitle: Chapter 1\nnumber: '1'\n---\nOne.\n",
        f"{WORK}/chapter-02-sea/source.md": b"---\ntitle: The Sea\nnumber: '2'\n---\nTwo.\n",
        f"{WORK}/letter-03/source.md": (
            b"---\ntitle: Letter 3\nnumber: '3'\nlabel: Letter\n---\nThree.\n"
        ),
    }
    files.update(extra or {})
    return MemorySource(files)


def test_book_without_parts_reads_as_chapters_under_the_work() -> None:
    corpus = read_corpus(_flat())
    assert [p for p in corpus.problems if p.severity == "error"] == []
    nodes = corpus.in_reading_order()
    assert [(n.level, n.kind, n.heading_path) for n in nodes if n.level > 0] == [
        (3, "work", "The Voyage (summary)"),
        (1, "piece", "The Voyage > Preface (summary)"),
        (1, "chapter", "The Voyage > Chapter 1 (summary)"),
        (1, "chapter", "The Voyage > Chapter 2 (The Sea) (summary)"),
        (1, "chapter", "The Voyage > Letter 3 (summary)"),
    ]
    summary = corpus.nodes[f"{WORK}/chapter-01/summary.md"]
    assert summary.parent_source_file == f"{WORK}/summary.md"
    assert corpus.nodes[f"{WORK}/chapter-01/source.md"].parent_source_file == summary.path


def test_labels_follow_the_language() -> None:
    meta = {"number": "3"}
    assert section_heading("Titre", meta, "fr") == "Chapitre 3 (Titre)"
    assert section_heading("Title", meta, "en-GB") == "Chapter 3 (Title)"
    assert section_heading("Titel", meta, "de") == "Kapitel 3 (Titel)"
    assert section_heading("Kapitel 3", meta, "de") == "Kapitel 3"
    assert section_heading("Title", meta, "xx") == "Chapter 3 (Title)"  # unlisted: English
    corpus = read_corpus(
        MemorySource(
            {
                "corpus/b/summary.md": b"---\ntitle: Buch\nlang: de\n---\n",
                "corpus/b/k1/source.md": b"---\ntitle: Anfang\nnumber: '1'\n---\nText.\n",
            }
        )
    )
    assert corpus.nodes["corpus/b/k1/summary.md"].heading_path == (
        "Buch > Kapitel 1 (Anfang) (Zusammenfassung)"
    )


def test_bom_crlf_nfd_text_is_normalized_and_the_file_keeps_its_style() -> None:
    nfd = unicodedata.normalize("NFD", "Été, déjà.")
    raw = "\ufeff---\r\ntitle: Chapter 1\r\nnumber: '1'\r\n---\r\n" + nfd + "\r\n\r\nTwo.\r\n"
    source = _flat({f"{WORK}/chapter-01/source.md": raw.encode("utf-8")})
    corpus = read_corpus(source)
    node = corpus.nodes[f"{WORK}/chapter-01/source.md"]
    assert "\r" not in node.body and "\ufeff" not in node.body
    assert node.body.startswith("Été, déjà.") and node.body == unicodedata.normalize(
        "NFC", node.body
    )
    fixed = corpus.changes[f"{WORK}/chapter-01/source.md"]
    assert fixed is not None
    assert fixed.startswith(b"\xef\xbb\xbf---\r\n")  # BOM kept
    assert b"parent_source_file: corpus/voyage/chapter-01/summary.md\r\n" in fixed
    assert fixed.count(b"\n") == fixed.count(b"\r\n")  # CRLF everywhere, no mixed endings
    assert fixed.endswith(raw.split("---\r\n", 2)[2].encode("utf-8"))  # the body: byte for byte

    overlay = OverlaySource(source, corpus.changes)
    again = read_corpus(overlay)
    result = build(again, overlay, FakeEmbedder(8))
    data = result.changes[f"{WORK}/chapter-01/source.md.jsonl"]
    assert data is not None
    chunks = [json.loads(line) for line in data.decode().splitlines()[1:]]
    assert [c["text"] for c in chunks] == ["Été, déjà.", "Two."]
    assert chunks[0]["text"] == unicodedata.normalize("NFC", chunks[0]["text"])


def test_paths_equal_under_nfc_are_one_problem_naming_both() -> None:
    text = b"---\ntitle: Caf\xc3\xa9\nnumber: '1'\n---\nText.\n"
    source = _flat(
        {
            f"{WORK}/caf\u00e9/source.md": text,
            f"{WORK}/cafe\u0301/source.md": text,
        }
    )
    corpus = read_corpus(source)
    [problem] = [p for p in corpus.problems if "Unicode normalization" in p.message]
    assert problem.severity == "error"
    assert "caf\\xe9" in problem.message or "cafe\\u0301" in problem.message
