-- privileges: tenant
-- memex.list_memory_revisions: the revisions of one memory of tenant (agent_id, user_id)
-- (issue 36; memex._memory_revision writes them), newest first, p_limit (1 to 1000) at a
-- time before revision p_before (null: from the newest); each a full snapshot (content,
-- type, importance, metadata, expiry, validity, supersession links, archive time) with
-- the operation, the fields it changed, the actor and when. A superseded or archived
-- memory's history is listed too; a forgotten or erased memory has none (MX404, as an id
-- that is not this tenant's). Read access.
create or replace function memex.list_memory_revisions(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_limit integer default 50,
    p_before integer default null
)
returns setof memex.memory_revisions
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_limit is null or p_limit not between 1 and 1000 then
        perform memex._invalid('limit', 'must be 1 to 1000');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if not exists (select from memex.memories m
                   where m.id = p_id and m.agent_id = p_agent_id and m.user_id = p_user_id) then
        raise exception 'memory % not found', p_id using errcode = 'MX404';
    end if;
    return query
        select r.* from memex.memory_revisions r
        where r.memory_id = p_id and r.agent_id = p_agent_id and r.user_id = p_user_id
          and (p_before is null or r.revision < p_before)
        order by r.revision desc
        limit p_limit;
end
$$;

comment on function memex.list_memory_revisions(text, text, uuid, integer, integer) is
    'A page of the revisions of a memory, newest first (full snapshots); MX404 if not theirs.';
