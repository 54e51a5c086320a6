"""The embeddings domain (sql/embeddings/, the `embeddings` REST tag): POST /v1/embeddings
(OpenAI's API) and the re-embedding models. The embedder adapters it calls are
infrastructure, in memexdb.embedding."""
