-- privileges: service
-- memex._consolidate_due_tenants: the tenants a condensing tick takes under p_config
-- (memex.dream_config()): not paused, more memories than its threshold; largest first
-- (then agent_id, user_id), at most concurrency of them. memex.consolidate_due and
-- memex.consolidate_due_tick run them, as memex.dream_due runs memex._dream_due_tenants.
create or replace function memex._consolidate_due_tenants(p_config jsonb)
returns table (agent_id text, user_id text)
language sql stable set search_path = pg_catalog, pg_temp
as $$
    select t.agent_id, t.user_id from memex.tenants t
    where not t.dream_paused
      and t.memory_count > (p_config ->> 'threshold')::bigint
    order by t.memory_count desc, t.agent_id, t.user_id
    limit (p_config ->> 'concurrency')::integer
$$;

comment on function memex._consolidate_due_tenants(jsonb) is
    'The tenants a condensing tick takes (over the threshold, largest first, at most concurrency).';
