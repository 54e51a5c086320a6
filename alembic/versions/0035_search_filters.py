"""memex.search's filters as one value (issue 35).

- memex.search_filters: the filters of a search (memory types, embedding model,
  metadata, include_archived, as_of, valid_at, created_after, created_before), built once
  by memex.search and passed as one argument to the helpers that find its candidates;
  memex._filtered_memories (new) is the one place that applies them. A new filter is
  an attribute added here (alter type ... add attribute, in a revision of its own), a
  parameter of memex.search and a condition in memex._filtered_memories; the helpers in
  between pass the value on unchanged.
- memex._supersession_heads, memex._candidates_exact, memex._candidates_ann and
  memex._ann_heads take it instead of one argument per filter: their old forms are
  dropped, the re-applied SQL layer creates the new ones. memex._live_memories keeps its
  signature (count, list_memories, get_memory and the writes call it), now a wrapper of
  memex._filtered_memories.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

_NEW_SIGNATURES = (
    "memex._candidates_ann(text, text, vector, text[], timestamptz, integer, integer,"
    " memex.search_filters, integer, double precision, double precision, integer, boolean)",
    "memex._candidates_exact(text, text, vector, text[], timestamptz, boolean,"
    " memex.search_filters)",
    "memex._ann_heads(text, text, vector, timestamptz, boolean, memex.search_filters, uuid[],"
    " double precision[], double precision[])",
    "memex._supersession_heads(text, text, timestamptz, memex.search_filters, uuid[])",
    "memex._filtered_memories(text, text, timestamptz, boolean, memex.search_filters)",
)


def upgrade() -> None:
    # sql/revisions/0035_search_filters.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # the re-applied SQL layer of the revision downgraded to creates its own again
    for signature in _NEW_SIGNATURES:
        op.execute(f"drop function if exists {signature}")
    op.execute("drop type if exists memex.search_filters")
