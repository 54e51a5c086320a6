"""Old signatures dropped once, here: until now the re-applied SQL layer (`sql/`) dropped
the overloads its functions had before they gained a parameter, so that layer carried its
own history. A database that an older memexdb migrated still holds them; `create or
replace` with new parameters adds an overload beside the old one instead of replacing it.

From this revision on the SQL layer only creates: a function whose parameters or result
type change gets a new revision that drops the old signature (the next memexdb migrate
then re-applies the layer and creates the new one, in the same transaction).
`tests/test_catalog.py` checks that a database upgraded step by step ends with exactly the
functions of a fresh one.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# Every signature a released SQL layer created and a later one replaced.
OLD_SIGNATURES = (
    "memex._live_memories(text, text, memex.memory_type[], text, timestamptz)",
    "memex._live_memories(text, text, memex.memory_type[], text, timestamptz, jsonb)",
    "memex.rate_limit_hit(text, integer, double precision, timestamptz)",
    "memex._enforce_rate_limit(text, text)",
    "memex.import_memories(uuid[], text[], text[], text[], vector[], text,"
    " memex.memory_type[], double precision[], jsonb[], timestamptz[], timestamptz[],"
    " timestamptz[])",
    "memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz)",
    "memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, jsonb)",
    "memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, integer)",
    "memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, integer, integer)",
    "memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, integer, integer, jsonb)",
    "memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, integer, integer, jsonb, boolean)",
    "memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, integer, integer, jsonb, boolean, integer, double precision,"
    " double precision)",
    "memex.search(text, text, vector, integer, double precision, double precision,"
    " memex.memory_type[], text, text, text, timestamptz)",
    "memex.search(text, text, vector, integer, double precision, double precision,"
    " memex.memory_type[], text, text, text, timestamptz, double precision)",
    "memex.search(text, text, vector, integer, double precision, double precision,"
    " memex.memory_type[], text, text, text, timestamptz, double precision, jsonb)",
    "memex.count(text, text, memex.memory_type)",
    "memex.count(text, text, memex.memory_type, text, timestamptz)",
    "memex.list_memories(text, text, integer, timestamptz, uuid, memex.memory_type,"
    " timestamptz, timestamptz, jsonb, timestamptz)",
    "memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer,"
    " timestamptz)",
    "memex.dream_tenant(text, text, boolean, boolean, timestamptz, integer)",
    "memex.dream_due(boolean, timestamptz)",
    "memex._dream_files(text, text, timestamptz, boolean)",
)

# Same parameters, another result type: memex._candidates_exact returned memex._candidate
# until best_text_rank was added, and a result type cannot change in place.
OLD_RESULT = (
    "memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text,"
    " timestamptz, jsonb, boolean)",
    "memex._candidate",
)


def upgrade() -> None:
    for signature in OLD_SIGNATURES:
        op.execute(f"drop function if exists {signature}")
    signature, result = OLD_RESULT
    op.execute(
        f"""
        do $$
        begin
            if exists (select from pg_proc p
                       where p.oid = to_regprocedure('{signature}')
                         and p.prorettype = '{result}'::regtype) then
                drop function {signature};
            end if;
        end
        $$
        """
    )


def downgrade() -> None:
    # The old signatures belong to older SQL layers, which re-create them when applied.
    pass
