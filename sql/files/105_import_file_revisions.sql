-- privileges: tenant
-- memex.import_file_revisions: restore exported file revisions (memex.export_history's
-- 'file_revision' records: agent_id, user_id, path, memory_id, revision, operation, actor,
-- at, content, size, details) exactly as they were recorded, who and when included.
-- A revision whose (tenant, path, revision number) exists already is skipped, so an
-- import can be run again. Imported history continues the live history or is refused
-- (MX409, nothing inserted): for a file that has revisions already, the new ones must
-- follow its newest (numbers from the next one on, without gaps; times not before its
-- newest revision's), and the file as it is must be what the last new revision says
-- (its content, or no file after a delete: the file's memory comes with
-- memex.import_memories first, as an export lists it first). Within what an import adds,
-- times never go back as numbers go up. Actors are checked (memex._check_imported_actor).
-- Returns the number inserted. History is append-only for tenants: only the operator or
-- an admin key of each record's tenant may import it (a write key cannot forge a
-- revision). A security definer (owned by memex_owner: row-level security still
-- applies), as memex._record_revision is.
create or replace function memex.import_file_revisions(p_records jsonb)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_count  integer;
    v_file   record;
    v_live   memex.file_revisions;
    v_memory memex.memories;
    v_new    memex.file_revisions[];  -- what is not there yet; id: the record's number
begin
    perform memex._authorize_history(p_records, 'file revisions');
    v_new := array(
        select row(r.ord - 1, r.agent_id, r.user_id, r.path, r.memory_id, r.revision,
                   r.operation, r.actor, r.at, r.content,
                   coalesce(r.size, coalesce(length(r.content), 0)),
                   coalesce(r.details, '{}'))::memex.file_revisions
        from (  -- a revision given twice: the first one
            select distinct on (x.agent_id, x.user_id, x.path, x.revision) x.*, e.ord
            from jsonb_array_elements(p_records) with ordinality e(value, ord),
                 jsonb_populate_record(null::memex.file_revisions, e.value) x
            order by x.agent_id, x.user_id, x.path, x.revision, e.ord
        ) r
        where not exists (
            select from memex.file_revisions f
            where f.agent_id = r.agent_id and f.user_id = r.user_id and f.path = r.path
              and f.revision = r.revision)
        order by r.ord);

    perform memex._check_imported_actor(n.agent_id, n.actor,
                                        format('records[%s].actor', n.id))
    from unnest(v_new) n order by n.id;

    for v_file in
        select n.agent_id, n.user_id, n.path, min(n.revision) as first,
               max(n.revision) as last, count(*) as revisions, min(n.at) as first_at
        from unnest(v_new) n
        group by 1, 2, 3 order by 1, 2, 3 loop
        perform memex._lock_file(v_file.agent_id, v_file.user_id, v_file.path, null);
        if exists (  -- a time before the one of a lower number
            select from unnest(v_new) a join unnest(v_new) b
                on (a.agent_id, a.user_id, a.path) = (b.agent_id, b.user_id, b.path)
               and a.revision < b.revision and a.at > b.at
            where (a.agent_id, a.user_id, a.path)
                  = (v_file.agent_id, v_file.user_id, v_file.path)) then
            raise exception using
                errcode = 'MX409',
                message = format('file revisions of %s: a revision is older than one with'
                                 ' a lower number', v_file.path);
        end if;
        select f.* into v_live from memex.file_revisions f
        where f.agent_id = v_file.agent_id and f.user_id = v_file.user_id
          and f.path = v_file.path
        order by f.revision desc limit 1;
        continue when v_live.revision is null;  -- a new history: nothing to continue
        if v_file.first <> v_live.revision + 1
           or v_file.revisions <> v_file.last - v_file.first + 1
           or v_file.first_at < v_live.at then
            raise exception using
                errcode = 'MX409',
                message = format('file revisions of %s: revisions %s to %s do not continue'
                                 ' its live history (revision %s at %s)', v_file.path,
                                 v_file.first, v_file.last, v_live.revision, v_live.at);
        end if;
        select m.* into v_memory from memex.memories m
        where m.agent_id = v_file.agent_id and m.user_id = v_file.user_id
          and m.path = v_file.path;
        if (select n.operation = 'delete' and v_memory.id is null
                   or n.operation <> 'delete' and v_memory.content is not distinct from n.content
            from unnest(v_new) n
            where (n.agent_id, n.user_id, n.path, n.revision)
                  = (v_file.agent_id, v_file.user_id, v_file.path, v_file.last))
           is not true then
            raise exception using
                errcode = 'MX409',
                message = format('file revisions of %s: revision %s is not the file as it'
                                 ' is (import its memory first, or into a path with no'
                                 ' history)', v_file.path, v_file.last);
        end if;
    end loop;

    insert into memex.file_revisions
        (agent_id, user_id, path, memory_id, revision, operation, actor, at, content, size,
         details)
    select n.agent_id, n.user_id, n.path, n.memory_id, n.revision, n.operation, n.actor,
           n.at, n.content, n.size, n.details
    from unnest(v_new) n
    order by n.id
    on conflict (agent_id, user_id, path, revision) do nothing;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

comment on function memex.import_file_revisions(jsonb) is
    'Insert exported file revisions as recorded (admin) when they continue the live history;'
    ' existing revisions are skipped.';
