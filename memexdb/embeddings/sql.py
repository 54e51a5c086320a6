"""The SQL text of the embeddings domain (sql/embeddings/): the embed queue
(memexdb.runtime.embed_worker), `memexdb reembed` and the embedding models.

The call of each public memex.* function is generated from the SQL catalog into
memexdb/embeddings/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.embeddings.calls import *  # noqa: F403

# May this caller run the embed queue (the operator)? A private function: not generated.
AUTHORIZE_EMBEDDING = "select memex._authorize_embedding()"
