-- privileges: tenant
-- memex.refresh_memories: set the expiry of many memories of one tenant by id in one
-- statement (LangGraph's store refreshing the TTL of the items it read: issue 37). Item i
-- sets expires_at = p_expires_at[i] (null: never) on the tenant's memory p_ids[i] if it
-- is live (not expired) and not a file; content, embedding, metadata and updated_at stay
-- (the revision trigger records the new expiry). Ids the tenant has not (or no longer)
-- are skipped, no error; of an id given twice the last item counts. Returns how many
-- memories it set.
create or replace function memex.refresh_memories(
    p_agent_id text,
    p_user_id text,
    p_ids uuid[],
    p_expires_at timestamptz[]
)
returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_n       integer := coalesce(cardinality(p_ids), 0);
    v_written bigint;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if v_n = 0 then
        perform memex._invalid('memories', 'must hold at least one memory');
    end if;
    if v_n > 1000 then
        perform memex._invalid('memories', 'must hold at most 1000 memories');
    end if;
    if coalesce(cardinality(p_expires_at), 0) <> v_n then
        perform memex._invalid('memories', 'every array must have one element per memory');
    end if;
    for i in 1 .. v_n loop
        if p_ids[i] is null then
            perform memex._invalid(format('memories[%s].id', i - 1), 'is required');
        end if;
        if p_expires_at[i] <= now() then
            perform memex._invalid(format('memories[%s].expires_at', i - 1),
                                   'must be in the future');
        end if;
    end loop;
    perform memex._authorize(p_agent_id, p_user_id, 'write');

    with last as (
        select distinct on (t.id) t.id, t.expires_at
        from unnest(p_ids, p_expires_at) with ordinality as t(id, expires_at, ord)
        order by t.id, t.ord desc
    ),
    locked as (  -- in id order, as memex.put_memories locks them
        select m.id
        from memex.memories m join last l on l.id = m.id
        where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path is null
          and (m.expires_at is null or m.expires_at > now())
        order by m.id
        for update of m
    )
    update memex.memories m
    set expires_at = l.expires_at
    from last l join locked k on k.id = l.id
    where m.id = l.id;
    get diagnostics v_written = row_count;
    return v_written;
end
$$;

comment on function memex.refresh_memories(text, text, uuid[], timestamptz[]) is
    'Set the expiry of many live memories of tenant (agent_id, user_id) by id in one'
    ' statement (content, metadata and updated_at stay); returns how many it set.';
