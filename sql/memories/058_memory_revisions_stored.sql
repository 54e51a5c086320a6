-- privileges: service
-- memex._memory_revisions_stored: trigger on memex.memories (after insert, each
-- statement, the inserted rows as a transition table): revision 1 (operation 'store') of
-- every new memory that is not a file, in one insert per statement, a full snapshot
-- (issue 36; memex._memory_revision records the changes after it). memex.store,
-- store_many, store_queued and import_memories (which relabels it 'import' for memexdb's
-- import) all insert through it. A new memory has no revision yet (its id is new: an id
-- that exists is not inserted, and forget deletes a memory's revisions with it).
-- A security definer (owned by memex_owner): tenants cannot write the table; row-level
-- security still applies (forced).
create or replace function memex._memory_revisions_stored()
returns trigger
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into memex.memory_revisions
        (agent_id, user_id, memory_id, revision, operation, changed, actor, content,
         memory_type, importance, metadata, expires_at, valid_from, valid_to, supersedes,
         superseded_by, superseded_at, archived_at, details)
    select n.agent_id, n.user_id, n.id, 1, 'store', '{content}', memex._actor(), n.content,
           n.memory_type, n.importance, n.metadata, n.expires_at, n.valid_from, n.valid_to,
           n.supersedes, n.superseded_by, n.superseded_at, n.archived_at,
           memex._on_behalf_of()
    from inserted n
    where n.path is null;
    return null;
end
$$;

comment on function memex._memory_revisions_stored() is
    'Trigger: revision 1 of every memory an insert statement stored (one insert per statement).';

create or replace trigger memories_revisions_stored
    after insert on memex.memories
    referencing new table as inserted
    for each statement execute function memex._memory_revisions_stored();
