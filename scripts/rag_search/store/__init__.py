"""The index on disk: the store (the only door to it), its writer, catalog, vectors and generations."""
