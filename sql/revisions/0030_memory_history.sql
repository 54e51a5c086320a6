-- Revision 0030, frozen from 0030_memory_history.py.
-- Memory that knows time (issue 36): a history for every memory, supersession, validity.
--
-- - memex.memory_revisions: one row per change of a memory (store, update, supersede,
--   superseded, archive, restore, revert, import), numbered 1..n per memory, each a full
--   snapshot of what the memory said then (content, type, importance, metadata, expiry,
--   validity, supersession links, archive time) with the fields that changed, who (actor)
--   and when (at). Its id is a number per (agent, user), as the other history tables' ids
--   (memex.history_ids, counter kind 'memory_revisions'; primary key (agent_id, user_id,
--   id)), so that a tenant's ids count its own history only. Written only by the SQL
--   layer's security definer functions; tenants read their own (row-level security, added
--   by the re-applied SQL layer) and never update or delete one. Deleted with their memory
--   (forget, erase_user: on delete cascade).
-- - memex.memories gains valid_from / valid_to (when the fact held; null valid_from: from
--   created_at, null valid_to: open-ended), superseded_at (when a newer memory superseded it;
--   superseded_by already names the successor) and supersedes (the ids it superseded).
-- - Every existing non-file memory gets its revision 1 (operation store) from its current
--   state, so that every memory has a history.
-- - memex.memories gains restored_at, for restores that stick: memex.restore_consolidation
--   sets it on the sources it brings back, and consolidation leaves them until a memory
--   newer than the restore arrives for the tenant (or an operator forces a run).
-- - The old signatures of the functions that gain parameters are dropped; the re-applied
--   SQL layer creates the new ones.
--
-- Revision ID: 0030
-- Revises: 0029
-- Create Date: 2026-12-06

drop function if exists memex.store(text, text, text, vector, text, memex.memory_type, double precision, jsonb, timestamptz, timestamptz, uuid);

drop function if exists memex.update_memory(text, text, uuid, text, vector, text, double precision, jsonb, memex.memory_type, timestamptz, boolean, timestamptz);

drop function if exists memex.get_memory(text, text, uuid, timestamptz);

drop function if exists memex.export_history(text, text, text, bigint, integer);

drop function if exists memex.export_history(text, text, text, text, bigint, integer);

drop function if exists memex.search(text, text, vector, integer, double precision, double precision, memex.memory_type[], text, text, text, timestamptz, double precision, jsonb, boolean);

drop function if exists memex._live_memories(text, text, memex.memory_type[], text, timestamptz, jsonb, boolean);

drop function if exists memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text, timestamptz, jsonb, boolean);

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer, integer, jsonb, boolean, integer, double precision, double precision, integer);

alter table memex.memories
            add column valid_from   timestamptz,
            add column valid_to     timestamptz,
            add column superseded_at timestamptz,
            add column supersedes   uuid[],
            add column restored_at  timestamptz,
            add constraint memories_valid_range_check
                check (valid_to is null or valid_from is null or valid_to >= valid_from);

create table memex.memory_revisions (
            id            bigint not null,
            agent_id      text not null,
            user_id       text not null,
            memory_id     uuid not null references memex.memories (id) on delete cascade,
            revision      integer not null check (revision >= 1),
            operation     text not null
                check (operation in ('store', 'update', 'supersede', 'superseded', 'archive',
                                     'restore', 'revert', 'import')),
            changed       text[] not null default '{}',
            actor         text not null,
            at            timestamptz not null default clock_timestamp(),
            content       text not null,
            memory_type   memex.memory_type not null,
            importance    double precision not null,
            metadata      jsonb not null default '{}',
            expires_at    timestamptz,
            valid_from    timestamptz,
            valid_to      timestamptz,
            supersedes    uuid[],
            superseded_by uuid,
            superseded_at timestamptz,
            archived_at   timestamptz,
            details       jsonb not null default '{}',
            primary key (agent_id, user_id, id),
            unique (memory_id, revision)
        );

create index memory_revisions_tenant_idx on memex.memory_revisions (agent_id, user_id, at);

comment on table memex.memory_revisions is 'Every change of a memory, a full snapshot each (issue 36); append-only for tenants, deleted with the memory.';

alter table memex.history_ids
            drop constraint history_ids_kind_check,
            add constraint history_ids_kind_check
                check (kind in ('access_log', 'file_revisions', 'consolidation_runs',
                                'memory_revisions'));

insert into memex.memory_revisions
            (id, agent_id, user_id, memory_id, revision, operation, changed, actor, at,
             content, memory_type, importance, metadata, expires_at, supersedes,
             superseded_by, archived_at)
        select row_number() over (partition by m.agent_id, m.user_id
                                  order by m.updated_at, m.id),
               m.agent_id, m.user_id, m.id, 1, 'store', '{content}',
               coalesce(m.actor, 'unknown'),
               m.updated_at, m.content, m.memory_type, m.importance, m.metadata,
               m.expires_at, null, m.superseded_by, m.archived_at
        from memex.memories m
        where m.path is null;

insert into memex.history_ids (agent_id, user_id, kind, last_id)
        select r.agent_id, r.user_id, 'memory_revisions', max(r.id)
        from memex.memory_revisions r
        group by r.agent_id, r.user_id;
