-- privileges: tenant-helper
-- memex._caller_agent: the one agent the caller is scoped to. Called by the policies in a
-- scalar subquery: an InitPlan of every reference to a tenant table, evaluated at most once
-- per statement and not at all for a caller of every tenant (memex._caller_all, before it
-- in the policy, decides). PL/pgSQL, not inlined: an inlined body is memex._caller's whole
-- expression, compiled at the start of every statement on a tenant table whether it runs
-- or not (~12 us a reference; a search of the memex request made five: bench/RESULTS.md,
-- "Issue 39 item 1, Postgres side (session 9)"); a call is compiled as one step, and its
-- body once per transaction.
create or replace function memex._caller_agent()
returns text
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    return memex._caller() ->> 'agent';
end
$$;

comment on function memex._caller_agent() is
    'The one agent the caller is scoped to (null when none or all).';
