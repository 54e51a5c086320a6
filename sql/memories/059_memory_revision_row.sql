-- privileges: service
-- memex._memory_revision_row: revision p_revision of memory p_id of tenant (p_agent_id,
-- p_user_id), or, with p_revision null, the revision current at p_as_of (the newest
-- recorded at or before it; the first one when the memory was created by then but its
-- first revision was recorded later: a back-dated store or import, a memory older than
-- revision 0030). MX404 when there is none (not this tenant's memory, no such
-- revision, or the memory did not exist yet at p_as_of). Callers authorize first.
create or replace function memex._memory_revision_row(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_revision integer,
    p_as_of timestamptz default null
)
returns memex.memory_revisions
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_row memex.memory_revisions;
begin
    if p_revision is not null then
        select r.* into v_row from memex.memory_revisions r
        where r.memory_id = p_id and r.agent_id = p_agent_id and r.user_id = p_user_id
          and r.revision = p_revision;
    else
        select r.* into v_row from memex.memory_revisions r
        where r.memory_id = p_id and r.agent_id = p_agent_id and r.user_id = p_user_id
          and r.at <= p_as_of
        order by r.revision desc limit 1;
        if v_row.id is null then
            -- recorded later than it happened (a back-dated store or import, or a memory
            -- older than revision 0030): its first revision, once it was created
            select r.* into v_row from memex.memory_revisions r
            join memex.memories m on m.id = r.memory_id
            where r.memory_id = p_id and r.agent_id = p_agent_id and r.user_id = p_user_id
              and m.created_at <= p_as_of
            order by r.revision limit 1;
        end if;
    end if;
    if v_row.id is null then
        if p_revision is not null then
            raise exception 'memory % has no revision %', p_id, p_revision
                using errcode = 'MX404';
        end if;
        raise exception 'memory % not found as of %', p_id, p_as_of using errcode = 'MX404';
    end if;
    return v_row;
end
$$;

comment on function memex._memory_revision_row(text, text, uuid, integer, timestamptz) is
    'One revision of a memory, by number or current at p_as_of; MX404 if none.';
