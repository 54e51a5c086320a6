-- Revision 0013, frozen from 0013_owner_role_and_lock_secret.py.
-- A non-superuser owner of memexdb's objects, and a secret that keys its locks.
--
-- - Role `memex_owner` (cluster-wide, NOLOGIN, no BYPASSRLS, created once, kept on
--   downgrade while other databases use it): owns the memex tables and every security
--   definer function (sql/999_grants.sql re-applies the ownership on every migrate). A
--   superuser-owned security definer function skips row-level security; one owned by
--   memex_owner is held to it (the tenant tables force it), so a definer function that
--   forgot to authorize its caller still cannot reach another tenant's rows. The migrating
--   role is made a member, so that it keeps altering what memex_owner owns.
-- - memex.lock_secret: one random 32-byte secret, readable by memex_owner alone. Advisory
--   lock keys are derived from it (memex._lock_key): any role may take any advisory lock,
--   so a key that a tenant can compute is a key it can hold hostage.
--
-- Revision ID: 0013
-- Revises: 0012
-- Create Date: 2026-12-05

do $$
        begin
            if not exists (select from pg_roles where rolname = 'memex_owner') then
                create role memex_owner nologin nosuperuser nobypassrls;
            end if;
            if not pg_has_role(current_user, 'memex_owner', 'member') then
                execute format('grant memex_owner to %I', current_user);
            end if;
        end
        $$;

grant usage, create on schema memex to memex_owner;

create table memex.lock_secret (
            only_row boolean primary key default true check (only_row),
            secret   bytea not null check (length(secret) = 32)
        );

insert into memex.lock_secret (secret) select sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || clock_timestamp()::text, 'UTF8'));
