-- Revision 0038: fewer bytes per memory in memex.memories' indexes (issue 39: at most
-- 3.0 kB a memory at 200,000 memories, heap and every index).
--
-- 1. memories_tsv_idx (GIN on the tsvector) with gin_pending_list_limit 256 kB instead of
--    the server's 4 MB. An insert appends its lexemes to the index's pending list, merged
--    into the tree in bulk by the insert that fills it (or by vacuum), and the merged
--    list's pages stay in the index, empty, for the next one: up to 4 MB of the index
--    (~20 bytes a memory at 200,000 memories, ~4 at 1,000,000). The tsvectors of the
--    200,000-memory bench tenant inserted in its order into a GIN index take 124.9 bytes
--    a memory with the default, 105.3 with 256 kB and 104.0 with fastupdate off, whose
--    inserts took 12 times as long as the default's (256 kB: 2.3 times, ~0.04 ms a
--    memory; bench/RESULTS.md, "Leaner indexes"). Every text search scans the whole
--    pending list too: at most 32 pages now instead of 512. ALTER INDEX ... SET
--    takes a SHARE UPDATE EXCLUSIVE lock (reads and writes go on) and changes the catalog
--    only; an existing index keeps its size until rebuilt
--    (`REINDEX INDEX CONCURRENTLY memex.memories_tsv_idx`, online; docs/scaling.md).
--
-- 2. The HNSW index's m from 16 to 12 (memex.configure_vector_index's default, same
--    revision). An element of the index (its halfvec and 10 heap pointers, ~850 bytes)
--    and its level-0 neighbour list (2 m pointers of 6 bytes) then take ~1,000 bytes
--    instead of ~1,050, so that 8 of them fit an 8 kB page instead of 7: 1,047 bytes a
--    memory instead of 1,170. Recall@10 of the default request against the exact path
--    stays as measured in bench/RESULTS.md. A table of at most
--    memex.hnsw_rebuild_max_rows rows (a session setting; default 10,000; every new
--    database) has its m 16 HNSW index (as revision 0001 built it, or
--    memex.configure_vector_index's old default) rebuilt with m 12 here, under the lock
--    CREATE INDEX takes (writes wait: a second or two at 10,000 memories); a bigger one
--    keeps its index, and settings.vector_index keeps saying m 16, until the operator
--    calls memex.configure_vector_index('hnsw') (docs/scaling.md). Any other index a DBA
--    chose is left as it is.
--
-- Revision ID: 0038
-- Revises: 0037
-- Create Date: 2026-12-06

alter index memex.memories_tsv_idx set (gin_pending_list_limit = 256);

do $$
declare
    v_rows bigint;
    v_max  bigint := coalesce(nullif(current_setting('memex.hnsw_rebuild_max_rows', true),
                                     '')::bigint, 10000);
    v_def  text;
begin
    select pg_catalog.pg_get_indexdef(c.oid) into v_def
    from pg_catalog.pg_class c
    where c.oid = to_regclass('memex.memories_embedding_hnsw_idx')
      and array(select x from unnest(c.reloptions) x order by x)
          = array['ef_construction=64', 'm=16'];
    if v_def is null then
        return;  -- no index, or one a DBA built with other parameters: theirs
    end if;
    select count(*) into v_rows
    from (select from memex.memories limit v_max + 1) r;
    if v_rows > v_max then
        raise notice 'memex.memories holds more than % rows: its HNSW index keeps m 16;'
                     ' select memex.configure_vector_index(''hnsw'') rebuilds it with m 12'
                     ' (docs/scaling.md)', v_max;
        return;
    end if;
    drop index memex.memories_embedding_hnsw_idx;
    execute replace(v_def, 'm=''16''', 'm=''12''');
    update memex.settings s
    set value = s.value || '{"m": 12}', updated_at = now()
    where s.name = 'vector_index' and s.value ->> 'kind' = 'hnsw'
      and (s.value ->> 'm')::integer = 16 and (s.value ->> 'ef_construction')::integer = 64;
end
$$;
