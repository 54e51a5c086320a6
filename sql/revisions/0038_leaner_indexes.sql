-- Revision 0038: fewer bytes per memory in memex.memories' indexes (issue 39: at most
-- 3.0 kB a memory at 200,000 memories, heap and every index).
--
-- 1. memories_tsv_idx (GIN on the tsvector) with fastupdate off. With it on (the default),
--    every insert appends its lexemes to a pending list of up to gin_pending_list_limit
--    (4 MB), merged into the tree in bulk by the insert that fills it or by vacuum; the
--    merged list's pages are kept for the next one, and the tree merged into in bulk is
--    less dense than one that takes each row's entries as it comes: 147 bytes a memory at
--    200,000 bulk-loaded memories with it on, ~105 with it off (bench/RESULTS.md, "Leaner
--    indexes"). Searches no longer scan a pending list either; each insert pays its
--    entries at once instead of in the bulk merge. ALTER INDEX ... SET (fastupdate) takes
--    a SHARE UPDATE EXCLUSIVE lock (reads and writes go on) and changes the catalog only;
--    the pending list there now is merged into the tree by gin_clean_pending_list (no
--    lock on writes), and an existing index keeps its size until rebuilt
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

alter index memex.memories_tsv_idx set (fastupdate = off);

select pg_catalog.gin_clean_pending_list('memex.memories_tsv_idx'::regclass);

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
