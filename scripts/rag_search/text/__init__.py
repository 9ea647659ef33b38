"""From a file's text to sections and chunks: the section model, JSON and markdown parsers, include stubs, HTML to
markdown, chunking.
"""
