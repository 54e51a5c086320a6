-- privileges: service
-- memex.configure_vector_index: choose the approximate-nearest-neighbour index that
-- memex.search uses for tenants in the ANN index (tenants.ann, see memex.index_tenant).
-- The index is partial (where ann): small tenants' rows, ranked by exact scans, stay out
-- of it. This is how a DBA tunes the index, from a migration or psql:
--
--   kind 'hnsw'    (default m 12, ef_construction 64; works on an empty table, keeps
--                   its recall as rows arrive; query knob: settings.hnsw_ef_search;
--                   m 12 since revision 0038: 8 elements of 384 halfvec dimensions a
--                   page instead of 7 at m 16)
--   kind 'ivfflat' (lists default rows/1000, or sqrt(rows) above 1M rows, counting the
--                   indexed rows; learns its lists from the rows present, so it refuses
--                   to build before any tenant is in the ANN index, and should
--                   be rebuilt, by calling this again, after the table has grown a lot;
--                   query knob: settings.ivfflat_probes)
--   kind 'none'    (no ANN index: large tenants' candidates come from a scan)
--
-- Drops every other hnsw/ivfflat index on memex.memories, builds the requested one unless
-- an identical hnsw index is already there (ivfflat is always rebuilt, to retrain its
-- lists), and records the choice in settings.vector_index, which memex.search reads to set
-- the matching session settings (hnsw.* or ivfflat.*). CREATE INDEX blocks writes to
-- memex.memories (not searches) while it runs; it uses the caller's maintenance_work_mem
-- and max_parallel_maintenance_workers, so set those first for a large table.
create or replace function memex.configure_vector_index(
    p_kind text,
    p_m integer default null,
    p_ef_construction integer default null,
    p_lists integer default null
)
returns memex.vector_index_result
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_kind     text := lower(btrim(p_kind));
    v_name     text;
    v_sql      text;
    v_params   jsonb;
    v_rows     bigint;
    v_lists    integer;
    v_current  text[];
    v_keep     boolean;
    v_old      text;
    v_started  timestamptz;
    v_result   memex.vector_index_result;
begin
    perform memex._authorize(null, null, 'admin');
    if v_kind is null or v_kind not in ('hnsw', 'ivfflat', 'none') then
        perform memex._invalid('kind', 'must be one of hnsw, ivfflat, none');
    end if;
    if v_kind <> 'hnsw' and p_m is not null then
        perform memex._invalid('m', 'applies to kind hnsw only');
    end if;
    if v_kind <> 'hnsw' and p_ef_construction is not null then
        perform memex._invalid('ef_construction', 'applies to kind hnsw only');
    end if;
    if v_kind <> 'ivfflat' and p_lists is not null then
        perform memex._invalid('lists', 'applies to kind ivfflat only');
    end if;

    -- Serialise concurrent calls; the index build itself locks out writers.
    lock table memex.memories in share row exclusive mode;

    if v_kind = 'hnsw' then
        if coalesce(p_m, 12) not between 2 and 100 then
            perform memex._invalid('m', 'must be between 2 and 100');
        end if;
        if coalesce(p_ef_construction, 64) not between 4 and 1000 then
            perform memex._invalid('ef_construction', 'must be between 4 and 1000');
        end if;
        if coalesce(p_ef_construction, 64) < 2 * coalesce(p_m, 12) then
            perform memex._invalid('ef_construction',
                format('must be at least 2 * m (%s)', 2 * coalesce(p_m, 12)));
        end if;
        v_name := 'memories_embedding_hnsw_idx';
        v_params := jsonb_build_object('kind', 'hnsw', 'm', coalesce(p_m, 12),
                                       'ef_construction', coalesce(p_ef_construction, 64));
        v_sql := format('create index %%I on memex.memories using hnsw'
                        ' (embedding public.halfvec_cosine_ops) with (m = %s, ef_construction = %s)'
                        ' where ann',
                        coalesce(p_m, 12), coalesce(p_ef_construction, 64));
    elsif v_kind = 'ivfflat' then
        if p_lists is not null and p_lists not between 1 and 32768 then
            perform memex._invalid('lists', 'must be between 1 and 32768');
        end if;
        select count(*) into v_rows from memex.memories m where m.ann;
        if v_rows = 0 then
            perform memex._invalid('kind',
                'ivfflat learns its lists from the rows present and no memory is in the ANN'
                ' index yet (no tenant has passed exact_scan_max_rows; see'
                ' memex.index_tenant); use hnsw, or build ivfflat later');
        end if;
        v_lists := coalesce(p_lists,
                            case when v_rows <= 1000000 then greatest(v_rows / 1000, 1)
                                 else ceil(sqrt(v_rows)) end);
        if v_lists not between 1 and 32768 then
            perform memex._invalid('lists', 'must be between 1 and 32768');
        end if;
        if v_lists > v_rows then
            perform memex._invalid('lists',
                format('must not exceed the number of indexed memories (%s)', v_rows));
        end if;
        v_name := 'memories_embedding_ivfflat_idx';
        v_params := jsonb_build_object('kind', 'ivfflat', 'lists', v_lists, 'rows', v_rows);
        v_sql := format('create index %%I on memex.memories using ivfflat'
                        ' (embedding public.halfvec_cosine_ops) with (lists = %s) where ann', v_lists);
    else
        v_params := jsonb_build_object('kind', 'none');
    end if;

    -- The ANN indexes there now (any name: a DBA may have built one by hand), and whether
    -- one of them already is the hnsw index asked for.
    select coalesce(array_agg(c.relname::text order by c.relname), '{}'),
           coalesce(bool_or(c.relname = v_name and a.amname = 'hnsw'
                            and i.indnatts = 1 and i.indexprs is null
                            and pg_get_expr(i.indpred, i.indrelid) = 'ann'
                            and att.attname = 'embedding'
                            and i.indclass[0] = (select o.oid from pg_opclass o
                                                 join pg_am oa on oa.oid = o.opcmethod
                                                 where o.opcname = 'halfvec_cosine_ops'
                                                   and oa.amname = 'hnsw')
                            and array(select x from unnest(c.reloptions) x order by x)
                                = array[format('ef_construction=%s', v_params->'ef_construction'),
                                        format('m=%s', v_params->'m')]), false)
    into v_current, v_keep
    from pg_index i
    join pg_class c on c.oid = i.indexrelid
    join pg_am a on a.oid = c.relam
    left join pg_attribute att on att.attrelid = i.indrelid and att.attnum = i.indkey[0]
    where i.indrelid = 'memex.memories'::regclass and a.amname in ('hnsw', 'ivfflat');

    v_result.kind := v_kind;
    v_result.index_name := v_name;
    v_result.parameters := v_params;
    v_result.rebuilt := false;
    v_result.build_seconds := 0;

    if v_kind = 'hnsw' and v_keep then
        v_sql := null;  -- exactly the index asked for is there: keep it, drop any others
        v_current := array_remove(v_current, v_name);
    end if;

    -- Build first under a temporary name, then swap: DROP INDEX locks the table against
    -- readers until commit, so searches keep using the old index while the new one builds.
    if v_sql is not null then
        if v_name || '_new' = any (v_current) then  -- left over from an earlier attempt
            execute format('drop index memex.%I', v_name || '_new');
            v_current := array_remove(v_current, v_name || '_new');
        end if;
        v_started := clock_timestamp();
        execute format(v_sql, v_name || '_new');
        v_result.rebuilt := true;
        v_result.build_seconds :=
            extract(epoch from clock_timestamp() - v_started)::double precision;
    end if;
    foreach v_old in array v_current loop
        execute format('drop index memex.%I', v_old);
    end loop;
    if v_sql is not null then
        execute format('alter index memex.%I rename to %I', v_name || '_new', v_name);
    end if;
    if v_name is not null then
        v_result.index_bytes := pg_relation_size(format('memex.%I', v_name)::regclass);
    end if;

    insert into memex.settings as s (name, value) values ('vector_index', v_params)
    on conflict (name) do update set value = excluded.value, updated_at = now();
    return v_result;
end
$$;

comment on function memex.configure_vector_index(text, integer, integer, integer) is
    'Build the ANN index memex.search uses (hnsw | ivfflat | none) and record the choice.';
