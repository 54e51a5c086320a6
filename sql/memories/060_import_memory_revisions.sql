-- privileges: tenant
-- memex.import_memory_revisions: restore exported memory revisions (memex.export_history's
-- 'memory_revision' records: agent_id, user_id, memory_id, revision, operation, changed,
-- actor, at, content, memory_type, importance, metadata, expires_at, valid_from,
-- valid_to, supersedes, superseded_by, superseded_at, archived_at, details) exactly as
-- recorded, who and when included (issue 36). The memory comes first, with
-- memex.import_memories (an export lists memories first): a revision of a memory this
-- tenant does not hold is MX409 and nothing is inserted. Imported history must be coherent,
-- as memex.import_file_revisions requires of files (MX409 otherwise, nothing inserted):
-- per memory, numbers without gaps, times never going back as numbers go up, and its last
-- revision saying what the memory says (content, memory_type, importance, metadata).
-- A memory whose history is only the stand-in revision 1 its import wrote (operation
-- 'import') gets the exported history in its place, numbered from 1, and its validity and
-- supersession (valid_from, valid_to, supersedes, superseded_by, superseded_at) from the
-- last revision; otherwise the new revisions must continue its history (from the next
-- number on, not before its newest), and one whose number exists already is skipped, so
-- an import can be run again. The inserted revisions are numbered anew (their ids:
-- numbers per user, memex._history_id), in the order of their memories and numbers.
-- Actors are checked (memex._check_imported_actor). Returns the number inserted. Only the operator or an admin key of each record's tenant may
-- import (memex._authorize_history: history is append-only for tenants).
create or replace function memex.import_memory_revisions(p_records jsonb)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_new    memex.memory_revisions[];
    v_memory record;
    v_mem    memex.memories;
    v_live   memex.memory_revisions;
    v_last   memex.memory_revisions;
    v_count  integer := 0;
    v_rows   integer;
begin
    perform memex._authorize_history(p_records, 'memory revisions');
    v_new := array(
        select row(r.ord - 1, r.agent_id, r.user_id, r.memory_id, r.revision, r.operation,
                   coalesce(r.changed, '{}'), r.actor, r.at, r.content, r.memory_type,
                   r.importance, coalesce(r.metadata, '{}'), r.expires_at, r.valid_from,
                   r.valid_to, r.supersedes, r.superseded_by, r.superseded_at,
                   r.archived_at, coalesce(r.details, '{}'))::memex.memory_revisions
        from (  -- a revision given twice: the first one
            select distinct on (x.memory_id, x.revision) x.*, e.ord
            from jsonb_array_elements(p_records) with ordinality e(value, ord),
                 jsonb_populate_record(null::memex.memory_revisions, e.value) x
            order by x.memory_id, x.revision, e.ord
        ) r
        order by r.ord);
    perform memex._check_imported_actor(n.agent_id, n.actor,
                                        format('records[%s].actor', n.id))
    from unnest(v_new) n order by n.id;

    for v_memory in
        select n.agent_id, n.user_id, n.memory_id, min(n.revision) as first,
               max(n.revision) as last, count(*) as revisions, min(n.at) as first_at
        from unnest(v_new) n
        group by 1, 2, 3 order by 1, 2, 3 loop
        select m.* into v_mem from memex.memories m
        where m.id = v_memory.memory_id and m.agent_id = v_memory.agent_id
          and m.user_id = v_memory.user_id
        for update;
        if v_mem.id is null then
            raise exception using errcode = 'MX409',
                message = format('memory revisions of %s: no such memory of this tenant'
                                 ' (import the memory first)', v_memory.memory_id);
        end if;
        if v_memory.first < 1 or v_memory.revisions <> v_memory.last - v_memory.first + 1
           or exists (select from unnest(v_new) a join unnest(v_new) b
                          on a.memory_id = b.memory_id and a.revision < b.revision
                         and a.at > b.at
                      where a.memory_id = v_memory.memory_id) then
            raise exception using errcode = 'MX409',
                message = format('memory revisions of %s: numbers with gaps, or a revision'
                                 ' older than one with a lower number', v_memory.memory_id);
        end if;
        select n.* into v_last from unnest(v_new) n
        where n.memory_id = v_memory.memory_id and n.revision = v_memory.last;
        if (v_last.content, v_last.memory_type, v_last.importance, v_last.metadata)
           is distinct from (v_mem.content, v_mem.memory_type, v_mem.importance,
                             v_mem.metadata) then
            raise exception using errcode = 'MX409',
                message = format('memory revisions of %s: revision %s is not the memory as'
                                 ' it is', v_memory.memory_id, v_memory.last);
        end if;
        select r.* into v_live from memex.memory_revisions r
        where r.memory_id = v_memory.memory_id order by r.revision desc limit 1;
        if v_live.revision = 1 and v_live.operation = 'import' and v_memory.first = 1 then
            -- the stand-in of the import: the exported history and time fields instead
            update memex.memories m
            set valid_from = v_last.valid_from, valid_to = v_last.valid_to,
                supersedes = v_last.supersedes,
                superseded_by = coalesce(v_last.superseded_by, m.superseded_by),
                superseded_at = v_last.superseded_at
            where m.id = v_memory.memory_id;
            delete from memex.memory_revisions r where r.memory_id = v_memory.memory_id;
        elsif v_live.revision is not null and v_memory.last > v_live.revision then
            if v_memory.first > v_live.revision + 1
               or (select min(n.at) from unnest(v_new) n
                   where n.memory_id = v_memory.memory_id
                     and n.revision > v_live.revision) < v_live.at then
                raise exception using errcode = 'MX409',
                    message = format('memory revisions of %s: revisions %s to %s do not'
                                     ' continue its history (revision %s at %s)',
                                     v_memory.memory_id, v_memory.first, v_memory.last,
                                     v_live.revision, v_live.at);
            end if;
        end if;
        insert into memex.memory_revisions
            (agent_id, user_id, memory_id, revision, operation, changed, actor, at, content,
             memory_type, importance, metadata, expires_at, valid_from, valid_to, supersedes,
             superseded_by, superseded_at, archived_at, details)
        select n.agent_id, n.user_id, n.memory_id, n.revision, n.operation, n.changed,
               n.actor, n.at, n.content, n.memory_type, n.importance, n.metadata,
               n.expires_at, n.valid_from, n.valid_to, n.supersedes, n.superseded_by,
               n.superseded_at, n.archived_at, n.details
        from unnest(v_new) n
        where n.memory_id = v_memory.memory_id
          and not exists (select from memex.memory_revisions r  -- skipped: no id taken
                          where r.memory_id = n.memory_id and r.revision = n.revision)
        order by n.revision
        on conflict (memory_id, revision) do nothing;
        get diagnostics v_rows = row_count;
        v_count := v_count + v_rows;
    end loop;
    return v_count;
end
$$;

comment on function memex.import_memory_revisions(jsonb) is
    'Insert exported memory revisions as recorded (admin), coherent with the memory;'
    ' a memory''s import stand-in is replaced, existing revisions are skipped.';
