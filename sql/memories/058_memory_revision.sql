-- privileges: service
-- memex._memory_revision: trigger on memex.memories (after update, each row): appends
-- the memory's next revision to memex.memory_revisions (issue 36), a full
-- snapshot of what it says now, with the fields that changed. Every path that changes a
-- memory goes through it (update_memory, supersession, consolidation's archive and
-- restore, forget's un-archive, revert_memory, a direct update by the service's role),
-- so no path can change a memory without a revision; an insert's revision 1 is
-- memex._memory_revisions_stored's (a statement trigger: one insert per batch).
-- Files (a path) keep their own revisions (memex.file_revisions) and are skipped here.
-- An update that changes none of the recorded fields (re-embedding, memex.set_embeddings;
-- the actor) writes nothing. The operation is read from the change: superseded_at set -> 'superseded'; archived_at set -> 'archive'; archived_at or
-- superseded_at cleared -> 'restore'; supersedes changed -> 'supersede'; otherwise
-- 'update' (memex.revert_memory and memex.import_memories relabel the revision they
-- caused 'revert' and 'import': no session setting can steer it). A security definer:
-- tenants hold no privilege on the table and cannot forge or change a revision. Owned by
-- memex_trigger_owner (BYPASSRLS, revision 0040; INSERT on the history, no UPDATE or
-- DELETE; sql/security/999_grants.sql), like memex._memory_revisions_stored: it writes
-- only the tenant of the row that fired it (new.agent_id, new.user_id), a row the update
-- of memex.memories checked under the tenant policies before this after-trigger runs
-- (USING on the old row, WITH CHECK on the new one), so they are not checked again; the
-- revision number reads the memory's own revisions (memory_id: the memory's id, its
-- revisions deleted with it). memex_owner's, held to them, where that role could not be
-- made.
-- Its cost is a superseding store's (issue 36: within 10 % of a plain store): the changed
-- fields are plain expressions, not a query, and the revision takes its id (the tenant's
-- counter in memex.history_ids) in the statement that inserts it, so memex._history_id
-- does not run for it (bench/store_history_bench.py, bench/RESULTS.md).
create or replace function memex._memory_revision()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_changed   text[];
    v_operation text;
begin
    if new.path is not null then
        return null;
    end if;
    -- plain expressions (no query): PL/pgSQL evaluates them without the executor
    v_changed := array_remove(array[
        case when new.content is distinct from old.content then 'content' end,
        case when new.memory_type is distinct from old.memory_type then 'memory_type' end,
        case when new.importance is distinct from old.importance then 'importance' end,
        case when new.metadata is distinct from old.metadata then 'metadata' end,
        case when new.expires_at is distinct from old.expires_at then 'expires_at' end,
        case when new.valid_from is distinct from old.valid_from then 'valid_from' end,
        case when new.valid_to is distinct from old.valid_to then 'valid_to' end,
        case when new.supersedes is distinct from old.supersedes then 'supersedes' end,
        case when new.superseded_by is distinct from old.superseded_by then 'superseded_by' end,
        case when new.superseded_at is distinct from old.superseded_at then 'superseded_at' end,
        case when new.archived_at is distinct from old.archived_at then 'archived_at' end
    ]::text[], null);
    if cardinality(v_changed) = 0 then
        return null;
    end if;
    v_operation := case
        when new.superseded_at is not null and old.superseded_at is null then 'superseded'
        when new.archived_at is not null and old.archived_at is null then 'archive'
        when (old.archived_at is not null and new.archived_at is null)
             or (old.superseded_at is not null and new.superseded_at is null) then 'restore'
        when new.supersedes is distinct from old.supersedes then 'supersede'
        else 'update' end;
    -- one statement: the tenant's next history id (memex.history_ids, as memex._history_id
    -- takes it, which then leaves the row alone: it has an id) and the revision
    with counter as (
        insert into memex.history_ids as h (agent_id, user_id, kind, last_id)
        values (new.agent_id, new.user_id, 'memory_revisions', 1)
        on conflict (agent_id, user_id, kind) do update set last_id = h.last_id + 1
        returning h.last_id
    )
    insert into memex.memory_revisions
        (id, agent_id, user_id, memory_id, revision, operation, changed, actor, content,
         memory_type, importance, metadata, expires_at, valid_from, valid_to, supersedes,
         superseded_by, superseded_at, archived_at, details)
    select k.last_id, new.agent_id, new.user_id, new.id,
           coalesce((select max(r.revision) from memex.memory_revisions r
                     where r.memory_id = new.id), 0) + 1,
           v_operation, v_changed, memex._actor(), new.content, new.memory_type,
           new.importance, new.metadata, new.expires_at, new.valid_from, new.valid_to,
           new.supersedes, new.superseded_by, new.superseded_at, new.archived_at,
           memex._on_behalf_of()
    from counter k;
    return null;
end
$$;

comment on function memex._memory_revision() is
    'Trigger: append a revision (full snapshot, changed fields) of every change of a memory.';

-- called only when a recorded field changed (not for the embed worker's re-embedding)
create or replace trigger memories_revision
    after update on memex.memories
    for each row
    when ((old.content, old.memory_type, old.importance, old.metadata, old.expires_at,
           old.valid_from, old.valid_to, old.supersedes, old.superseded_by, old.superseded_at,
           old.archived_at)
          is distinct from
          (new.content, new.memory_type, new.importance, new.metadata, new.expires_at,
           new.valid_from, new.valid_to, new.supersedes, new.superseded_by, new.superseded_at,
           new.archived_at))
    execute function memex._memory_revision();
