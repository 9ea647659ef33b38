"""rag-search: semantic search over your own context and external documentation."""

__version__ = "0.1.0"
