-- Revision 0010, frozen from 0010_consolidation.py.
-- Consolidation ("dreaming"): old episodic memories condensed into summaries, files
-- cleaned up, and the queue that embeds what SQL wrote.
--
-- - memex.consolidation_runs: one row per run on a tenant (condensing memories, dreaming
--   over files, a dry run, a restore): when, memories and files in and out, files touched,
--   status, error, the summary written and the plan (details).
-- - memex.embed_queue: memories waiting for an embedding of their own text (a summary is
--   searchable at once by its sources' centroid, and queued); NOTIFY memex_embed tells the
--   runtime's embed worker.
-- - memex.tenants: dream_paused (an operator's pause of both) and last_dreamed_at (the
--   last dream over the tenant's files).
-- - memories.superseded_by loses its foreign key: lineage is kept by the functions that
--   change it (memex.forget of a summary brings its sources back instead of orphaning
--   them), and an import can load archived memories before their summary.
-- - memex.memory_record gains source_ids, superseded_by and archived_at.
--
-- Row-level security and grants for the new tables live in sql/ (990, 999).
--
-- Revision ID: 0010
-- Revises: 0009
-- Create Date: 2026-12-03

create table memex.consolidation_runs (
            id            bigint generated always as identity primary key,
            agent_id      text not null,
            user_id       text not null,
            kind          text not null check (kind in ('condense', 'dream', 'restore')),
            status        text not null
                check (status in ('running', 'done', 'dry_run', 'nothing', 'failed',
                                  'restored')),
            actor         text not null,
            started_at    timestamptz not null default clock_timestamp(),
            finished_at   timestamptz,
            memories_in   integer not null default 0,
            memories_out  integer not null default 0,
            files_in      integer not null default 0,
            files_out     integer not null default 0,
            files_touched integer not null default 0,
            summary_id    uuid,
            restored_by   bigint,
            error         text,
            details       jsonb not null default '{}'
        );

create index consolidation_runs_tenant_idx on memex.consolidation_runs (agent_id, user_id, started_at);

create table memex.embed_queue (
            memory_id       uuid primary key
                            references memex.memories (id) on delete cascade,
            enqueued_at     timestamptz not null default clock_timestamp(),
            attempts        integer not null default 0,
            next_attempt_at timestamptz not null default clock_timestamp(),
            last_error      text
        );

create index embed_queue_due_idx on memex.embed_queue (next_attempt_at);

alter table memex.tenants add column dream_paused boolean not null default false, add column last_dreamed_at timestamptz;

alter table memex.memories drop constraint memories_superseded_by_fkey;

create index memories_superseded_by_idx on memex.memories (superseded_by) where superseded_by is not null;

alter type memex.memory_record add attribute source_ids uuid[], add attribute superseded_by uuid, add attribute archived_at timestamptz;
