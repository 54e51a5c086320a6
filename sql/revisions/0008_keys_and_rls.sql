-- Revision 0008, frozen from 0008_keys_and_rls.py.
-- API keys, SQL roles bound to a tenant, an audit log, and the roles row-level security
-- is keyed on.
--
-- - Roles (cluster-wide, created once, kept on downgrade while other databases use them):
--   `memex_app`, the non-superuser role the service switches to on every connection (its
--   caller is set per transaction by memex._enter from an API key); `memex_tenant`, the
--   group of login roles that direct SQL callers use, each bound to one tenant by a row of
--   memex.sql_roles. The migrating role is made a member of memex_app so that it can
--   `set role memex_app`.
-- - memex.api_keys: hashed API keys (salted sha256 of a 244-bit random secret; the token
--   is shown once), scoped to an agent (null: every agent) and optionally a set of users,
--   with access read | write | admin, expiry, revocation and last use.
-- - memex.sql_roles: login role -> (agent_id, user_ids, access) for direct SQL callers.
-- - memex.audit_log: who did what when (key creation and revocation, erasure, imports...).
-- - memories.actor: the key (or role) that last wrote the memory.
--
-- Row-level security itself (enable, force, policies) and the grants live in sql/ (re-applied
-- on every migrate) so that every later table is one line there.
--
-- Revision ID: 0008
-- Revises: 0007
-- Create Date: 2026-12-03

do $$
        begin
            if not exists (select from pg_roles where rolname = 'memex_app') then
                create role memex_app nologin;
            end if;
            if not exists (select from pg_roles where rolname = 'memex_tenant') then
                create role memex_tenant nologin;
            end if;
            if not pg_has_role(current_user, 'memex_app', 'member') then
                execute format('grant memex_app to %I', current_user);
            end if;
        end
        $$;

create table memex.api_keys (
            id              uuid primary key default gen_random_uuid(),
            prefix          text not null unique,
            salt            bytea not null,
            secret_hash     bytea not null,
            name            text not null default '' check (length(name) <= 200),
            agent_id        text check (length(agent_id) between 1 and 128),
            user_ids        text[] check (cardinality(user_ids) between 1 and 1000),
            access          text not null check (access in ('read', 'write', 'admin')),
            created_at      timestamptz not null default now(),
            created_by      text not null,
            expires_at      timestamptz,
            revoked_at      timestamptz,
            last_used_at    timestamptz
        );

create table memex.sql_roles (
            role_name  text primary key,
            agent_id   text not null check (length(agent_id) between 1 and 128),
            user_ids   text[] check (cardinality(user_ids) between 1 and 1000),
            access     text not null check (access in ('read', 'write')),
            created_at timestamptz not null default now()
        );

create table memex.audit_log (
            id       bigint generated always as identity primary key,
            at       timestamptz not null default clock_timestamp(),
            actor    text not null,
            action   text not null,
            agent_id text,
            user_id  text,
            details  jsonb not null default '{}'
        );

create index audit_log_at_idx on memex.audit_log (at desc);

alter table memex.memories add column actor text;
