"""Ways into a corpus: turn a book in another shape into the corpus tree of DESIGN §3.

    folder.py    a folder of chapter .md files whose YAML headers give work, part,
                 chapter number and title (the Bastiat sources)
    markdown.py  one Markdown file whose heading levels give work, parts, chapters
    epub.py      an EPUB (Wikisource's export format): TOC → parts and chapters
    html.py      EPUB chapter HTML → Markdown (paragraphs, emphasis, quotes, notes)
    pdf.py       a PDF: outline → parts and chapters, else headings (text.py's rules);
                 pdflayout.py rebuilds its paragraphs, ocr.py reads scans (Tesseract)

Every importer returns the same neutral `tree.Work`; `tree.layout` turns it into
files (`indexer.corpus.source.Changes`) and `writer.write_corpus` puts them under DEST,
so slugs, numbering and frontmatter are decided in one place.
"""
