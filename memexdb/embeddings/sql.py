"""The SQL call text of the embeddings domain (sql/embeddings/): the embed queue
(memexdb.runtime.embed_worker), `memexdb reembed` and the embedding models.

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

# --- The embed queue (memexdb.runtime.embed_worker) and `memexdb reembed` ---

EMBED_QUEUE_TAKE = "select * from memex.embed_queue_take()"
SET_EMBEDDINGS = """
select memex.set_embeddings(
    p_ids => %(ids)s::uuid[], p_contents => %(contents)s::text[],
    p_embeddings => %(embeddings)s::vector[], p_embedding_model => %(embedding_model)s)
"""
EMBED_QUEUE_FAILED = """
select memex.embed_queue_failed(p_ids => %(ids)s::uuid[], p_errors => %(errors)s::text[])
"""
EMBED_QUEUE_DEPTH = "select * from memex.embed_queue_depth()"
STALE_EMBEDDINGS = """
select * from memex.stale_embeddings(
    p_embedding_model => %(embedding_model)s, p_after => %(after)s, p_limit => %(limit)s)
"""
EMBEDDING_MODELS = "select embedding_model, memories from memex.embedding_models()"
AUTHORIZE_EMBEDDING = "select memex._authorize_embedding()"
