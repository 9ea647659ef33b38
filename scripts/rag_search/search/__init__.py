"""Finding and ordering the chunks that answer a query: retrieval, ranking, the optional cross-encoder."""
