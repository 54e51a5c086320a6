-- Revision 0037: embeddings stored and indexed at half precision (issue 39: half the bytes
-- per memory).
--
-- memex.memories.embedding becomes pgvector's halfvec (2 bytes a dimension: 772 bytes at
-- 384 dimensions instead of 1,540), and its ANN index (hnsw or ivfflat, whatever name and
-- options it has) is rebuilt with the matching halfvec operator class. Queries stay
-- `vector` at the API; memex.search casts the query once. The int8 MiniLM's vectors lose
-- nothing measurable at float16 (bench/RESULTS.md, "Half-precision embeddings").
--
-- Two ways, neither holding an exclusive lock for long:
--
-- - a table of at most memex.halfvec_rewrite_max_rows rows (a session setting; default
--   10,000; every new database): the column's type is changed in place, which rewrites the
--   table and rebuilds its indexes under an access exclusive lock (a second or two at
--   10,000 memories);
-- - a bigger table must have been converted online first by `memexdb convert-embeddings`
--   (memexdb/halfvec.py: a column embedding_half kept filled by a trigger, a batched
--   backfill, each ANN index built again on it concurrently as <name>_half, a validated
--   not-null check), and this revision then only swaps the columns: the old column (and
--   with it its ANN index) is dropped, embedding_half renamed embedding, its indexes given
--   the old names; catalog changes only, no scan. Without that it refuses (SQLSTATE
--   55000) and says so: nothing is changed.
--
-- Revision ID: 0037
-- Revises: 0036
-- Create Date: 2026-12-06

do $$
declare
    v_dims   integer;
    v_rows   bigint;
    v_max    bigint := coalesce(nullif(current_setting('memex.halfvec_rewrite_max_rows', true),
                                       '')::bigint, 10000);
    v_ann    text[];
    v_def    text;
    v_name   text;
begin
    select a.atttypmod into v_dims
    from pg_catalog.pg_attribute a
    where a.attrelid = 'memex.memories'::regclass and a.attname = 'embedding'
      and not a.attisdropped;

    if exists (select from pg_catalog.pg_attribute a
               where a.attrelid = 'memex.memories'::regclass and a.attname = 'embedding_half'
                 and not a.attisdropped) then
        -- converted online by `memexdb convert-embeddings`: swap the columns
        if not exists (select from pg_catalog.pg_constraint c
                       where c.conrelid = 'memex.memories'::regclass
                         and c.conname = 'memories_embedding_half_filled' and c.convalidated) then
            raise exception using
                errcode = '55000',
                message = 'memex.memories.embedding_half is not filled yet',
                hint = 'run `memexdb convert-embeddings` to its end, then migrate again';
        end if;
        lock table memex.memories in access exclusive mode;
        drop trigger memories_embedding_half_fill on memex.memories;
        drop function memex._embedding_half_fill();
        alter table memex.memories drop column embedding;  -- and its ANN index with it
        alter table memex.memories rename column embedding_half to embedding;
        -- the validated check proves it: no scan
        alter table memex.memories alter column embedding set not null;
        alter table memex.memories drop constraint memories_embedding_half_filled;
        alter table memex.memories alter column embedding set storage main;  -- revision 0007
        for v_name in
            select c.relname from pg_catalog.pg_index i
            join pg_catalog.pg_class c on c.oid = i.indexrelid
            where i.indrelid = 'memex.memories'::regclass and c.relname like '%\_half'
        loop
            execute format('alter index memex.%I rename to %I', v_name,
                           left(v_name, length(v_name) - 5));
        end loop;
        return;
    end if;

    select count(*) into v_rows
    from (select from memex.memories limit v_max + 1) r;
    if v_rows > v_max then
        raise exception using
            errcode = '55000',
            message = format('memex.memories holds more than %s rows: its embeddings are'
                             ' converted to halfvec online, not by this revision', v_max),
            hint = 'run `memexdb convert-embeddings` (no long lock; docs/scaling.md), then'
                   ' migrate again; or set memex.halfvec_rewrite_max_rows to rewrite the'
                   ' table in place under an exclusive lock';
    end if;

    -- the ANN indexes on the column, to build again with the halfvec operator classes
    select coalesce(array_agg(pg_catalog.pg_get_indexdef(i.indexrelid) order by c.relname), '{}')
    into v_ann
    from pg_catalog.pg_index i
    join pg_catalog.pg_class c on c.oid = i.indexrelid
    join pg_catalog.pg_am a on a.oid = c.relam
    where i.indrelid = 'memex.memories'::regclass and a.amname in ('hnsw', 'ivfflat');
    for v_name in
        select c.relname from pg_catalog.pg_index i
        join pg_catalog.pg_class c on c.oid = i.indexrelid
        join pg_catalog.pg_am a on a.oid = c.relam
        where i.indrelid = 'memex.memories'::regclass and a.amname in ('hnsw', 'ivfflat')
    loop
        execute format('drop index memex.%I', v_name);
    end loop;
    execute format('alter table memex.memories alter column embedding type public.halfvec(%s)'
                   ' using embedding::public.halfvec(%s)', v_dims, v_dims);
    alter table memex.memories alter column embedding set storage main;  -- revision 0007
    foreach v_def in array v_ann loop
        execute regexp_replace(v_def, '\mvector_(cosine|l2|ip|l1)_ops\M', 'halfvec_\1_ops', 'g');
    end loop;
end
$$;

drop function if exists memex._candidates_exact(text, text, vector, text[], timestamptz, boolean, memex.search_filters);

drop function if exists memex._candidates_ann(text, text, vector, text[], timestamptz, integer, integer, memex.search_filters, integer, double precision, double precision, integer, boolean);

drop function if exists memex._ann_heads(text, text, vector, timestamptz, boolean, memex.search_filters, uuid[], double precision[], double precision[]);

drop function if exists memex._ann_bounded(integer, vector, text[], memex.memory_type[], jsonb);
