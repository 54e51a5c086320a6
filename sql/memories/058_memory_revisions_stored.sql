-- privileges: service
-- memex._memory_revisions_stored: trigger on memex.memories (after insert, each
-- statement, the inserted rows as a transition table): revision 1 (operation 'store') of
-- every new memory that is not a file, in one insert per statement, a full snapshot
-- (issue 36; memex._memory_revision records the changes after it). memex.store,
-- store_many, store_queued and import_memories (which relabels it 'import' for memexdb's
-- import) all insert through it. A new memory has no revision yet (its id is new: an id
-- that exists is not inserted, and forget deletes a memory's revisions with it).
-- Their ids are numbers per (agent, user), as memex._history_id gives (counter kind
-- 'memory_revisions' of memex.history_ids), taken here for the whole statement: one
-- counter update per (agent, user) in it, not one per row (memex._history_id numbers only
-- the rows inserted without an id).
-- A security definer: tenants cannot write the table. Owned by memex_trigger_owner
-- (BYPASSRLS, revision 0040; INSERT on the history, no UPDATE or DELETE), like
-- memex._tenant_counts: no second check of the tenant policies for the rows the insert
-- into memex.memories checked.
create or replace function memex._memory_revisions_stored()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    with counts as (
        select n.agent_id, n.user_id, count(*) as n
        from inserted n
        where n.path is null
        group by n.agent_id, n.user_id
        order by n.agent_id, n.user_id
    ), counters as (
        insert into memex.history_ids as h (agent_id, user_id, kind, last_id)
        select c.agent_id, c.user_id, 'memory_revisions', c.n from counts c
        on conflict (agent_id, user_id, kind) do update set last_id = h.last_id + excluded.last_id
        returning h.agent_id, h.user_id, h.last_id
    )
    insert into memex.memory_revisions
        (id, agent_id, user_id, memory_id, revision, operation, changed, actor, content,
         memory_type, importance, metadata, expires_at, valid_from, valid_to, supersedes,
         superseded_by, superseded_at, archived_at, details)
    select k.last_id - c.n
               + row_number() over (partition by n.agent_id, n.user_id order by n.id),
           n.agent_id, n.user_id, n.id, 1, 'store', '{content}', memex._actor(), n.content,
           n.memory_type, n.importance, n.metadata, n.expires_at, n.valid_from, n.valid_to,
           n.supersedes, n.superseded_by, n.superseded_at, n.archived_at,
           memex._on_behalf_of()
    from inserted n
    join counts c on c.agent_id = n.agent_id and c.user_id = n.user_id
    join counters k on k.agent_id = n.agent_id and k.user_id = n.user_id
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
