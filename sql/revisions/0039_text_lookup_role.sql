-- Revision 0039: the role memex_text_lookup, which owns memex._text_rows (issue 39, item
-- 0: the default request of a big tenant under row-level security).
--
-- Row-level security is forced on memex.memories and memex.search (security definer)
-- runs as memex_owner, held to it: under the policy, Postgres does not use a
-- non-leakproof operator (`tsvector @@ tsquery`) as an index condition, so the text step
-- of memex._candidates_ann scanned the whole tenant once per text query (~0.8-1.1 s a
-- default request at 200,000 memories). memex._text_rows reads those rows through the
-- GIN index when its owner skips row-level security: role `memex_text_lookup`
-- (cluster-wide, NOLOGIN, NOSUPERUSER, BYPASSRLS; created once, kept on downgrade while
-- other databases use it). sql/security/999_grants.sql gives it the function and SELECT
-- on memex.memories, on every migrate; only memex_owner may execute the function.
--
-- Creating a BYPASSRLS role takes a superuser, or (PostgreSQL 16 and later) a role with
-- CREATEROLE and BYPASSRLS itself. A migrating role that can do neither skips it here
-- with a NOTICE: memex._text_rows is then owned by memex_owner and reads as before (the
-- scan). The operator enables it later as superuser (docs/security.md): `create role
-- memex_text_lookup nologin nosuperuser bypassrls; grant memex_text_lookup to
-- <migrating role>;` and `memexdb migrate` again (the grants are re-applied when the SQL
-- layer changed; `memexdb migrate --force-sql` otherwise). The migrating role is made a
-- member, so that it can give the function to the role.
--
-- Revision ID: 0039
-- Revises: 0038
-- Create Date: 2026-12-06

do $$
declare
    v_me record;
begin
    select r.rolsuper, r.rolcreaterole, r.rolbypassrls into v_me
    from pg_roles r where r.rolname = current_user;
    if not exists (select from pg_roles where rolname = 'memex_text_lookup') then
        if v_me.rolsuper
           or (current_setting('server_version_num')::integer >= 160000
               and v_me.rolcreaterole and v_me.rolbypassrls) then
            create role memex_text_lookup nologin nosuperuser bypassrls;
        else
            raise notice 'memex: role memex_text_lookup not created (needs a superuser, or'
                          ' CREATEROLE and BYPASSRLS on PostgreSQL 16+): the text step of'
                          ' a big tenant''s search scans the tenant under row-level security'
                using hint = 'docs/security.md, "The text lookup role"';
            return;
        end if;
    end if;
    if not pg_has_role(current_user, 'memex_text_lookup', 'member') then
        begin
            execute format('grant memex_text_lookup to %I', current_user);
        exception when insufficient_privilege then
            raise notice 'memex: % cannot be made a member of memex_text_lookup:'
                         ' memex._text_rows stays memex_owner''s', current_user;
        end;
    end if;
end
$$;
