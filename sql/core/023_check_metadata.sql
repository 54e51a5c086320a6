-- privileges: tenant-helper
-- memex._check_metadata: validate a memory's metadata (memex._check_memory) or a metadata
-- filter (memex.search, memex.count, memex.list_memories, which keep the memories whose
-- metadata contains it): null or a JSON object of at most 65536 bytes of JSON text.
create or replace function memex._check_metadata(p_metadata jsonb)
returns void
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
begin
    if p_metadata is not null and jsonb_typeof(p_metadata) <> 'object' then
        perform memex._invalid('metadata', 'must be a JSON object');
    end if;
    if octet_length(p_metadata::text) > 65536 then
        perform memex._invalid('metadata', 'must be at most 65536 bytes of JSON');
    end if;
end
$$;

comment on function memex._check_metadata(jsonb) is
    'Raise MX422 unless metadata (or a metadata filter) is null or a JSON object of <= 64 KiB.';
