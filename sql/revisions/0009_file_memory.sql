-- Revision 0009, frozen from 0009_file_memory.py.
-- File memory: files (memories with a virtual path), their revisions, and an access log.
--
-- - memories.path: a file is a memory with a virtual path (`user/profile.md`), unique per
--   tenant (a partial unique index), so that memex.search ranks files and memories alike.
--   Its current content lives in memories (content, embedding, tsv); null for plain memories.
-- - memex.file_revisions: a full snapshot of every write, patch, delete and restore of a
--   file (revision numbers per file, from 1; a delete keeps no content).
-- - memex.access_log: every read and write of a file (who, what, which path, when), kept
--   settings.access_log_retention_days (default 90) and pruned by memex.maintenance().
-- - memex.file_record, memex.file_entry, memex.smart_read_result: what the file functions
--   return; memex.maintenance_result.access_log_rows_deleted.
--
-- Row-level security and grants for the new tables live in sql/ (990, 999).
--
-- Revision ID: 0009
-- Revises: 0008
-- Create Date: 2026-12-03

alter table memex.memories add column path text check (path is null or length(path) between 1 and 512);

create unique index memories_path_idx on memex.memories (agent_id, user_id, path) where path is not null;

create table memex.file_revisions (
            id        bigint generated always as identity primary key,
            agent_id  text not null,
            user_id   text not null,
            path      text not null,
            memory_id uuid,
            revision  integer not null check (revision >= 1),
            operation text not null
                check (operation in ('write', 'patch', 'delete', 'restore')),
            actor     text not null,
            at        timestamptz not null default clock_timestamp(),
            content   text,
            size      integer not null default 0,
            details   jsonb not null default '{}',
            unique (agent_id, user_id, path, revision)
        );

create table memex.access_log (
            id        bigint generated always as identity primary key,
            at        timestamptz not null default clock_timestamp(),
            agent_id  text not null,
            user_id   text not null,
            actor     text not null,
            operation text not null,
            target    text,
            details   jsonb not null default '{}'
        );

create index access_log_tenant_at_idx on memex.access_log (agent_id, user_id, at);

create index access_log_at_idx on memex.access_log (at);

create type memex.file_record as (
            path       text,
            memory_id  uuid,
            revision   integer,
            size       integer,
            line_count integer,
            from_line  integer,
            to_line    integer,
            content    text,
            created_at timestamptz,
            updated_at timestamptz,
            actor      text
        );

create type memex.file_entry as (
            path       text,
            memory_id  uuid,
            revision   integer,
            size       integer,
            created_at timestamptz,
            updated_at timestamptz
        );

create type memex.smart_read_result as (
            context text,
            chars   integer,
            budget  integer,
            sources jsonb
        );

alter type memex.maintenance_result add attribute access_log_rows_deleted bigint;
