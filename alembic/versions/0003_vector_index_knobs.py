"""Vector index knobs: the index memex.search uses, recorded in settings, and its query-time
parameters. The default is HNSW (m 16, ef_construction 64), the index revision 0001
already built, so no index is rebuilt here. A DBA changes it with
memex.configure_vector_index() from a migration of their own (docs/sql-api.md); see
bench/RESULTS.md ("Scale benchmark") for the figures behind the default.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # What memex.configure_vector_index() returns.
    op.execute(
        """
        create type memex.vector_index_result as (
            kind          text,
            index_name    text,
            parameters    jsonb,
            rebuilt       boolean,
            build_seconds double precision,
            index_bytes   bigint
        )
        """
    )
    # vector_index records the ANN index there is: on a database 0001 created, the hnsw
    # index (m 16, ef_construction 64) that configure_vector_index('hnsw') would build;
    # an index a DBA built by hand is recorded as found (pgvector's defaults filled in).
    op.execute(
        """
        insert into memex.settings (name, value)
        select 'vector_index', coalesce(
            (select jsonb_build_object('kind', a.amname)
                    || case a.amname when 'hnsw' then '{"m": 16, "ef_construction": 64}'
                                     else '{"lists": 100}' end::jsonb
                    || coalesce((select jsonb_object_agg(split_part(o, '=', 1),
                                                         split_part(o, '=', 2)::integer)
                                 from unnest(c.reloptions) o), '{}')
             from pg_index i
             join pg_class c on c.oid = i.indexrelid
             join pg_am a on a.oid = c.relam
             where i.indrelid = 'memex.memories'::regclass
               and a.amname in ('hnsw', 'ivfflat')
             order by c.relname
             limit 1),
            '{"kind": "none"}')
        on conflict (name) do nothing
        """
    )
    # Query-time knobs, read by memex.search. hnsw_ef_search null: hnsw.ef_search = the
    # candidate depth (ann_candidates). ivfflat_probes null: ivfflat.probes = sqrt(lists).
    op.execute(
        """
        insert into memex.settings (name, value) values
            ('hnsw_ef_search', 'null'),
            ('ivfflat_probes', 'null')
        on conflict (name) do nothing
        """
    )


def downgrade() -> None:
    op.execute(
        "delete from memex.settings"
        " where name in ('vector_index', 'hnsw_ef_search', 'ivfflat_probes')"
    )
    # cascade: also drops memex.configure_vector_index; migrate re-creates what head needs.
    op.execute("drop type memex.vector_index_result cascade")
