-- privileges: tenant
-- memex.missing_memory_ids: which of p_ids the caller sees no memory with (memexdb's
-- import embeds only those before memex.import_memories, so that a re-run embeds nothing).
-- A security definer (tenant roles hold no table privileges); row-level security, forced
-- on memex_owner too, still hides other tenants' memories, so their ids count as missing
-- here (memex.import_memories then skips them: ids are one namespace, and the caller
-- learns only that an id it knows is taken, as from memex.store; docs/sql-api.md).
create or replace function memex.missing_memory_ids(p_ids uuid[])
returns setof uuid
language sql stable security definer set search_path = pg_catalog, pg_temp
as $$
    select i from unnest(p_ids) i
    where not exists (select from memex.memories m where m.id = i)
$$;

comment on function memex.missing_memory_ids(uuid[]) is
    'The ids of p_ids with no memory the caller sees (what an import still has to embed).';
