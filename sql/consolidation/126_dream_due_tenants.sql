-- privileges: service
-- memex._dream_due_tenants: the tenants a dreaming tick takes at p_now under p_config
-- (memex.dream_config()): not paused, a file that dreams read written since their last
-- dream by someone other than dream-agent, nothing of theirs written for grace_minutes;
-- longest-waiting first (never dreamed, then the oldest last_dreamed_at), at most
-- concurrency of them. memex.dream_due runs them; memex.dream_plan shows their files.
create or replace function memex._dream_due_tenants(p_now timestamptz, p_config jsonb)
returns table (agent_id text, user_id text)
language sql stable set search_path = pg_catalog, public, pg_temp
as $$
    select t.agent_id, t.user_id from memex.tenants t
    where not t.dream_paused
      and exists (select from memex.memories f
                  where f.agent_id = t.agent_id and f.user_id = t.user_id
                    and f.path is not null and memex._dream_reads(f.path)
                    and f.actor is distinct from 'dream-agent'
                    and (t.last_dreamed_at is null or f.updated_at > t.last_dreamed_at))
      and not exists (select from memex.memories m
                      where m.agent_id = t.agent_id and m.user_id = t.user_id
                        and m.actor is distinct from 'dream-agent'
                        and m.updated_at > p_now - make_interval(
                            mins => (p_config ->> 'grace_minutes')::integer))
    order by t.last_dreamed_at nulls first, t.agent_id, t.user_id
    limit (p_config ->> 'concurrency')::integer
$$;

comment on function memex._dream_due_tenants(timestamptz, jsonb) is
    'The tenants a dreaming tick takes (due, longest-waiting first, at most concurrency).';
