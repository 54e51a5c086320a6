"""Embeddings stored and indexed at half precision (issue 39: half the bytes per memory).

memex.memories.embedding becomes pgvector's halfvec (772 bytes at 384 dimensions instead
of 1,540) and its ANN index is rebuilt with the halfvec operator class. A table of at most
memex.halfvec_rewrite_max_rows rows (default 10,000) is rewritten in place; a bigger one
must have been converted online by `memexdb convert-embeddings` first (memexdb/halfvec.py),
and this revision then only swaps the columns. Otherwise it refuses (SQLSTATE 55000).

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0037_halfvec_embeddings.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # back to float4 in place (a rewrite under an exclusive lock); the values stay those
    # rounded to float16
    op.execute(
        "do $$ declare v_def text; v_defs text[]; v_name text; begin"
        " select coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}') into v_defs"
        " from pg_index i join pg_class c on c.oid = i.indexrelid"
        " join pg_am a on a.oid = c.relam"
        " where i.indrelid = 'memex.memories'::regclass and a.amname in ('hnsw', 'ivfflat');"
        " for v_name in select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid"
        " join pg_am a on a.oid = c.relam where i.indrelid = 'memex.memories'::regclass"
        " and a.amname in ('hnsw', 'ivfflat') loop"
        " execute format('drop index memex.%I', v_name); end loop;"
        " alter table memex.memories alter column embedding type public.vector(384)"
        " using embedding::public.vector(384);"
        " alter table memex.memories alter column embedding set storage main;"
        " foreach v_def in array v_defs loop"
        " execute regexp_replace(v_def, '\\mhalfvec_(cosine|l2|ip|l1)_ops\\M',"
        " 'vector_\\1_ops', 'g'); end loop; end $$"
    )
