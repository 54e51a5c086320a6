-- privileges: tenant
-- memex.forget: delete one memory of a tenant and return it. Raises SQLSTATE MX404 when
-- the id does not exist for this tenant (another tenant's id is indistinguishable from a
-- missing one, so ids leak nothing across tenants). Forgetting a consolidation summary
-- brings its archived sources back (live again), so that nothing is lost with it; so does
-- forgetting a memory that superseded others (issue 36: they are no longer superseded;
-- the valid_to supersession closed stays). A forgotten memory's revisions
-- (memex.memory_revisions) go with it: forgotten means gone, its history included.
-- p_user_id null (memex's DELETE /v1/memories/{id}?agent_id=..., which names no user):
-- the memory is looked for among the agent's memories this caller may see (row-level
-- security: a key limited to some users finds only theirs), then forgotten as its user's.
create or replace function memex.forget(p_agent_id text, p_user_id text, p_id uuid)
returns memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_result memex.memory_record;
begin
    if p_user_id is null and length(p_agent_id) between 1 and 128 then
        select m.user_id into p_user_id
        from memex.memories m where m.id = p_id and m.agent_id = p_agent_id;
        if p_user_id is null then
            -- no caller, or a key of another agent: say so, as for a named user
            if not coalesce(memex._caller_all(), false)
               and memex._caller_agent() is distinct from p_agent_id then
                perform memex._authorize(p_agent_id, null, 'write');
            end if;
            raise exception 'memory % not found', p_id using errcode = 'MX404';
        end if;
    end if;
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._enforce_rate_limit('store', p_agent_id);
    if exists (select from memex.memories m
               where m.id = p_id and m.agent_id = p_agent_id and m.user_id = p_user_id
                 and m.path is not null) then
        -- a file keeps a revision of every change: memex.delete_file deletes it
        raise exception using
            errcode = 'MX409',
            message = 'this memory is a file: delete it with memory_delete (by its path)';
    end if;
    -- the memories it superseded or condensed: listed in its supersedes / source_ids (by
    -- primary key: superseded_by is not indexed, revision 0036), still linked to it
    update memex.memories m set archived_at = null, superseded_by = null, superseded_at = null
    where m.id = any ((select coalesce(s.supersedes, '{}') || coalesce(s.source_ids, '{}')
                       from memex.memories s
                       where s.id = p_id and s.agent_id = p_agent_id
                         and s.user_id = p_user_id)::uuid[])
      and m.superseded_by = p_id and m.agent_id = p_agent_id and m.user_id = p_user_id;
    delete from memex.memories m
    where m.id = p_id and m.agent_id = p_agent_id and m.user_id = p_user_id
    returning (memex._memory_record(m)).* into v_result;
    if v_result.id is null then
        raise exception 'memory % not found', p_id using errcode = 'MX404';
    end if;
    return v_result;
end
$$;

comment on function memex.forget(text, text, uuid) is
    'Delete one memory of tenant (agent_id, user_id), or of any user of the agent the caller'
    ' may see when user_id is null; MX404 if it is not theirs or absent.';
