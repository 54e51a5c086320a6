"""Only large tenants in the ANN index.

Tenants up to settings.exact_scan_max_rows are ranked by an exact scan, so an ANN index
over their rows is never read, yet every insert paid for it: an HNSW insert was ~90 % of
memex.store's database time (2.2 of 2.5 ms CPU, bench/RESULTS.md "Load test"), and the
filtered index scan of a large tenant waded through everybody else's rows.

- memories.ann: the row is in the ANN index. The index becomes partial (where ann).
- tenants.ann: the tenant is ranked through the ANN index. Its new rows get ann = true
  on insert (trigger, sql/020_tenant_counts.sql); memex.index_tenant() sets it and
  moves the existing rows in; memex.maintenance() does so for tenants that have grown
  past exact_scan_max_rows. A tenant with ann = false is always ranked exactly.
- maintenance_result.tenants_indexed: how many tenants maintenance moved in.

Here, tenants already past the threshold are moved in at once and the ANN index there is
(if any) is rebuilt as a partial index over their rows.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0005_ann_indexed_tenants.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    _rebuild_ann_indexes("regexp_replace(v_def, ' WHERE ann$', '')")
    op.execute("alter type memex.maintenance_result drop attribute tenants_indexed")
    op.execute("alter table memex.tenants drop column ann")
    op.execute("alter table memex.memories drop column ann")


def _rebuild_ann_indexes(new_definition: str) -> None:
    """Drop each hnsw/ivfflat index on memex.memories and create it again from
    `new_definition`, an SQL expression over its definition v_def (pg_get_indexdef)."""
    op.execute(
        f"""
        do $$
        declare
            v_name text;
            v_def  text;
        begin
            for v_name, v_def in
                select c.relname::text, pg_get_indexdef(c.oid)
                from pg_index i
                join pg_class c on c.oid = i.indexrelid
                join pg_am a on a.oid = c.relam
                where i.indrelid = 'memex.memories'::regclass
                  and a.amname in ('hnsw', 'ivfflat')
            loop
                execute format('drop index memex.%I', v_name);
                execute {new_definition};
            end loop;
        end
        $$
        """
    )
