-- privileges: tenant
-- memex.dream_plan: what the next dream would read, for a model to look at before it runs
-- (the service, with an LLM, asks it for edits that resolve contradictions and hands them
-- to memex.dream_due / memex.dream_tenant as p_edits). Without a tenant: the tenants the
-- next tick takes (memex._dream_due_tenants; nothing unless dream_config.enabled; admin).
-- With one (p_agent_id and p_user_id; write access to it, as memex.dream_tenant needs):
-- that tenant. files: [{path, revision, content, new}]: every file dreams read (not the
-- logs, not those whose newest revision is a restore: a dream leaves them as restored),
-- new when the dream would read it anyway (memex._dream_files: written since the last
-- dream, or p_force), so that a model sees an old statement that a new one contradicts;
-- an edit for any of them is applied. Tenants with no new file are left out. Writes
-- nothing.
create or replace function memex.dream_plan(
    p_now timestamptz default null,
    p_agent_id text default null,
    p_user_id text default null,
    p_force boolean default false
)
returns table (agent_id text, user_id text, files jsonb)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_config jsonb := memex.dream_config();
begin
    if (p_agent_id is null) <> (p_user_id is null) then
        perform memex._invalid(case when p_agent_id is null then 'agent_id' else 'user_id' end,
                               'give both agent_id and user_id, or neither');
    end if;
    if p_agent_id is null then
        perform memex._authorize(null, null, 'admin');
        if not (v_config ->> 'enabled')::boolean then
            return;
        end if;
    else
        perform memex._check_tenant(p_agent_id, p_user_id);
        perform memex._authorize(p_agent_id, p_user_id, 'write');
    end if;
    return query
    with tenants as (
        select d.agent_id, d.user_id
        from memex._dream_due_tenants(coalesce(p_now, now()), v_config) d
        where p_agent_id is null
        union all
        select p_agent_id, p_user_id where p_agent_id is not null
    )
    select t.agent_id, t.user_id, f.files
    from tenants t
    left join memex.tenants s on s.agent_id = t.agent_id and s.user_id = t.user_id
    cross join lateral (
        select jsonb_agg(jsonb_build_object('path', d.path, 'revision', d.revision,
                                            'content', d.content, 'new', n.path is not null)
                         order by d.path collate "C") as files,
               bool_or(n.path is not null) as any_new
        from memex._dream_files(t.agent_id, t.user_id, null, true) d
        left join memex._dream_files(t.agent_id, t.user_id, s.last_dreamed_at, p_force) n
               on n.path = d.path
        where d.operation is distinct from 'restore') f
    where f.any_new;
end
$$;

comment on function memex.dream_plan(timestamptz, text, text, boolean) is
    'The files the next dream reads (due tenants, or one), for a model to propose edits.';
