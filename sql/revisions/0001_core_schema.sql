-- Revision 0001, frozen from 0001_core_schema.py.
-- Core schema: memories, tenants, rate limits, settings, result types.
--
-- Revision ID: 0001
-- Revises:
-- Create Date: 2026-12-02

create extension if not exists vector;

create type memex.memory_type as enum ('episodic', 'semantic', 'procedural');

create table memex.memories (
            id              uuid primary key default gen_random_uuid(),
            agent_id        text not null check (length(agent_id) between 1 and 128),
            user_id         text not null check (length(user_id) between 1 and 128),
            memory_type     memex.memory_type not null default 'episodic',
            content         text not null check (length(content) between 1 and 32768),
            embedding       vector(384) not null,
            embedding_model text not null,
            importance      real not null default 1.0 check (importance between 0 and 2),
            created_at      timestamptz not null default now(),
            updated_at      timestamptz not null default now(),
            expires_at      timestamptz,
            metadata        jsonb not null default '{}'
                            check (jsonb_typeof(metadata) = 'object'),
            tsv             tsvector generated always as
                            (to_tsvector('english'::regconfig, content)) stored,
            source_ids      uuid[] not null default '{}',
            superseded_by   uuid references memex.memories (id) on delete set null,
            archived_at     timestamptz
        );

create index memories_tenant_recent_idx on memex.memories (agent_id, user_id, created_at desc);

create index memories_tsv_idx on memex.memories using gin (tsv);

create index memories_embedding_hnsw_idx on memex.memories using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64);

create index memories_expires_idx on memex.memories (expires_at) where expires_at is not null;

create table memex.tenants (
            agent_id     text not null,
            user_id      text not null,
            memory_count bigint not null default 0,
            created_at   timestamptz not null default now(),
            primary key (agent_id, user_id)
        );

create table memex.rate_limits (
            key            text primary key,
            window_seconds double precision not null,
            window_start   timestamptz not null,
            current_count  integer not null,
            previous_count integer not null,
            last_allowed   boolean not null,
            expires_at     timestamptz not null
        );

create index rate_limits_expires_idx on memex.rate_limits (expires_at);

create table memex.settings (
            name       text primary key,
            value      jsonb not null,
            updated_at timestamptz not null default now()
        );

insert into memex.settings (name, value) values
            ('exact_scan_max_rows', '10000'),
            ('ann_candidates', '200'),
            ('rate_limit_store_per_minute', 'null'),
            ('rate_limit_search_per_minute', 'null');

create type memex.memory_record as (
            id              uuid,
            agent_id        text,
            user_id         text,
            memory_type     memex.memory_type,
            content         text,
            importance      double precision,
            metadata        jsonb,
            embedding_model text,
            created_at      timestamptz,
            updated_at      timestamptz,
            expires_at      timestamptz
        );

create type memex.search_hit as (
            id          uuid,
            agent_id    text,
            user_id     text,
            memory_type memex.memory_type,
            content     text,
            importance  double precision,
            metadata    jsonb,
            created_at  timestamptz,
            expires_at  timestamptz,
            similarity  double precision,
            text_rank   double precision,
            relevance   double precision,
            recency     double precision,
            score       double precision
        );

create type memex._candidate as (
            id         uuid,
            importance double precision,
            created_at timestamptz,
            similarity double precision,
            text_rank  double precision
        );

create type memex.rate_limit_result as (
            allowed             boolean,
            hits                integer,
            remaining           integer,
            retry_after_seconds double precision
        );

create type memex.maintenance_result as (
            expired_memories_deleted bigint,
            rate_limit_rows_deleted  bigint
        );
