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
-- caused 'revert' and 'import': no session setting can steer it). A security definer (owned by
-- memex_owner): tenants hold no privilege on the table and cannot forge or change a
-- revision; row-level security still applies (forced).
create or replace function memex._memory_revision()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_changed   text[];
    v_operation text;
begin
    if new.path is not null then
        return null;
    end if;
    select coalesce(array_agg(f.name order by f.ord), '{}') into v_changed
    from (values
        (1, 'content', new.content is distinct from old.content),
        (2, 'memory_type', new.memory_type is distinct from old.memory_type),
        (3, 'importance', new.importance is distinct from old.importance),
        (4, 'metadata', new.metadata is distinct from old.metadata),
        (5, 'expires_at', new.expires_at is distinct from old.expires_at),
        (6, 'valid_from', new.valid_from is distinct from old.valid_from),
        (7, 'valid_to', new.valid_to is distinct from old.valid_to),
        (8, 'supersedes', new.supersedes is distinct from old.supersedes),
        (9, 'superseded_by', new.superseded_by is distinct from old.superseded_by),
        (10, 'superseded_at', new.superseded_at is distinct from old.superseded_at),
        (11, 'archived_at', new.archived_at is distinct from old.archived_at)
    ) f(ord, name, differs)
    where f.differs;
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
    insert into memex.memory_revisions
        (agent_id, user_id, memory_id, revision, operation, changed, actor, content,
         memory_type, importance, metadata, expires_at, valid_from, valid_to, supersedes,
         superseded_by, superseded_at, archived_at, details)
    select new.agent_id, new.user_id, new.id,
           coalesce((select max(r.revision) from memex.memory_revisions r
                     where r.memory_id = new.id), 0) + 1,
           v_operation, v_changed, memex._actor(), new.content, new.memory_type,
           new.importance, new.metadata, new.expires_at, new.valid_from, new.valid_to,
           new.supersedes, new.superseded_by, new.superseded_at, new.archived_at,
           memex._on_behalf_of();
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
