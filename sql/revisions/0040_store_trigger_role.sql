-- Revision 0040: the role memex_trigger_owner, which owns the statement triggers that
-- keep a tenant's bookkeeping in step with memex.memories (issue 39, item 1: the store
-- path's cost).
--
-- Every insert into memex.memories (memex.store, store_many, import) runs three
-- statement-level triggers: memex._tenant_counts (memex.tenants), memex._term_stats
-- (memex.term_stats) and memex._memory_revisions_stored (memex.memory_revisions, numbered
-- in memex.history_ids). Owned by memex_owner, held to the forced row-level security of
-- those tables, each upsert evaluated the tenant policies again (up to four policies of
-- five subqueries on an INSERT ... ON CONFLICT DO UPDATE): ~0.2 ms of a store's ~0.75 ms
-- in the backend (bench/RESULTS.md, "Per-request cost, third round"), for rows whose
-- tenant the insert into memex.memories had already checked under the same policy (the
-- triggers write only what their transition tables hold: the inserted or deleted rows).
-- Owned by this role (cluster-wide, NOLOGIN, NOSUPERUSER, BYPASSRLS; created once, kept
-- on downgrade while other databases use it), they skip the second check.
-- sql/security/999_grants.sql gives it the three functions and the table privileges they
-- need (no DELETE on a history table, no other function), on every migrate.
--
-- Creating a BYPASSRLS role takes a superuser, or (PostgreSQL 16 and later) a role with
-- CREATEROLE and BYPASSRLS itself. A migrating role that can do neither skips it here
-- with a NOTICE: the triggers stay memex_owner's and cost what they did. The operator
-- enables it later as superuser (docs/security.md): `create role memex_trigger_owner
-- nologin nosuperuser bypassrls; grant memex_trigger_owner to <migrating role>;`, then
-- makes the next migrate re-apply the SQL layer (`delete from memex.sql_layer_state;`
-- then `memexdb migrate`).
--
-- Revision ID: 0040
-- Revises: 0039
-- Create Date: 2026-12-06

do $$
declare
    v_me record;
begin
    select r.rolsuper, r.rolcreaterole, r.rolbypassrls into v_me
    from pg_roles r where r.rolname = current_user;
    if not exists (select from pg_roles where rolname = 'memex_trigger_owner') then
        if v_me.rolsuper
           or (current_setting('server_version_num')::integer >= 160000
               and v_me.rolcreaterole and v_me.rolbypassrls) then
            create role memex_trigger_owner nologin nosuperuser bypassrls;
        else
            raise notice 'memex: role memex_trigger_owner not created (needs a superuser, or'
                          ' CREATEROLE and BYPASSRLS on PostgreSQL 16+): the triggers on'
                          ' memex.memories check row-level security a second time'
                using hint = 'docs/security.md, "The trigger owner role"';
            return;
        end if;
    end if;
    if not pg_has_role(current_user, 'memex_trigger_owner', 'member') then
        begin
            execute format('grant memex_trigger_owner to %I', current_user);
        exception when insufficient_privilege then
            raise notice 'memex: % cannot be made a member of memex_trigger_owner:'
                         ' the triggers stay memex_owner''s', current_user;
        end;
    end if;
end
$$;
