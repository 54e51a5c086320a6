"""Memories answer with what the client sent, and search results carry the whole record.

- memex.memories.importance becomes double precision: as a real, 1.2 came back as
  1.2000000476837158 on every surface. Stored values are converted through their
  shortest text form (a real's 1.2 becomes the double 1.2, the value the client sent).
  memex.export_memories returned a real too: it is dropped here and the re-applied SQL
  layer creates it with the wider type.
- memex.search_hit gains updated_at and embedding_model (memex.memory_record has them):
  search results were the record without them.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_EXPORT = (
    "memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer, timestamptz)"
)


def upgrade() -> None:
    # sql/revisions/0020_faithful_records.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute(
        "alter type memex.search_hit drop attribute updated_at,"
        " drop attribute embedding_model"
    )
    op.execute(f"drop function if exists {_EXPORT}")
    op.execute("alter table memex.memories alter column importance type real")
