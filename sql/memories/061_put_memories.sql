-- privileges: tenant
-- memex.put_memories: write many memories of one tenant by id, in order, in one statement
-- (LangGraph's store puts: issue 37). Item i with a content is an upsert: inserted with
-- id p_ids[i], or, if the tenant has that memory already, updated in place (content,
-- embedding, metadata, type, expiry; created_at kept, updated_at = now()), all by one
-- `insert ... on conflict (id) do update`, so a put racing a delete of the same id
-- stores it and never fails. Item i with a null content deletes that memory (nothing to
-- delete is no error), as memex.forget does. Of several items with one id only the last
-- is applied (a delete followed by a put of one id is an upsert: created_at kept). An id held by another tenant, or by a file,
-- is MX409 (memories[i].id) and nothing of the batch is written. Each item is checked
-- as memex.store checks one memory (MX422) and counts one against the store rate limit.
-- Returns the memories written (upserts only), in input order.
create or replace function memex.put_memories(
    p_agent_id text,
    p_user_id text,
    p_ids uuid[],
    p_contents text[],
    p_embeddings vector[],
    p_embedding_model text,
    p_metadata jsonb[],
    p_memory_type memex.memory_type default 'semantic',
    p_expires_at timestamptz[] default null
)
returns setof memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_n       integer := coalesce(cardinality(p_ids), 0);
    v_clash   bigint;
    v_deletes uuid[];
    v_puts    bigint;
    v_written bigint;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if v_n = 0 then
        perform memex._invalid('memories', 'must hold at least one memory');
    end if;
    if coalesce(cardinality(p_contents), 0) <> v_n
       or coalesce(cardinality(p_embeddings), 0) <> v_n
       or coalesce(cardinality(p_metadata), 0) <> v_n
       or coalesce(cardinality(p_expires_at), v_n) <> v_n then
        perform memex._invalid('memories', 'every array must have one element per memory');
    end if;
    for i in 1 .. v_n loop
        if p_ids[i] is null then
            perform memex._invalid(format('memories[%s].id', i - 1), 'is required');
        end if;
        if p_contents[i] is not null then
            perform memex._check_memory(p_agent_id, p_user_id, p_contents[i], p_embeddings[i],
                                        p_embedding_model, 1.0, p_metadata[i]);
            if p_expires_at[i] <= now() then
                perform memex._invalid(format('memories[%s].expires_at', i - 1),
                                       'must be in the future');
            end if;
        end if;
    end loop;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._enforce_rate_limit('store', p_agent_id, v_n);

    select min(i.ord) into v_clash
    from unnest(p_ids) with ordinality as i(id, ord)
    join memex.memories m on m.id = i.id
    where m.agent_id <> p_agent_id or m.user_id <> p_user_id or m.path is not null;
    if v_clash is not null then
        raise exception using
            errcode = 'MX409',
            message = format('memories[%s].id: memory %s is not one this tenant may put',
                             v_clash - 1, p_ids[v_clash]);
    end if;
    -- the tenant's rows of the batch, locked in id order (as the inserts below go), so
    -- that two batches over the same ids wait for each other instead of deadlocking
    perform from memex.memories m
    where m.id = any (p_ids) and m.agent_id = p_agent_id and m.user_id = p_user_id
    order by m.id
    for update;
    -- of several items with one id the last one counts; a null content deletes
    select coalesce(array_agg(l.id) filter (where l.content is null), '{}'),
           count(*) filter (where l.content is not null)
    into v_deletes, v_puts
    from (select distinct on (t.id) t.id, t.content
          from unnest(p_ids, p_contents) with ordinality as t(id, content, ord)
          order by t.id, t.ord desc) l;
    if cardinality(v_deletes) > 0 then
        update memex.memories m
        set archived_at = null, superseded_by = null, superseded_at = null
        -- listed in a deleted memory's supersedes / source_ids (by primary key:
        -- superseded_by is not indexed, revision 0036), still linked to it
        where m.id = any ((select array_agg(o.id)
                           from memex.memories s
                           cross join unnest(coalesce(s.supersedes, '{}')
                                             || coalesce(s.source_ids, '{}')) o(id)
                           where s.id = any (v_deletes) and s.agent_id = p_agent_id
                             and s.user_id = p_user_id)::uuid[])
          and m.superseded_by = any (v_deletes)
          and m.agent_id = p_agent_id and m.user_id = p_user_id;
        delete from memex.memories m
        where m.id = any (v_deletes) and m.agent_id = p_agent_id and m.user_id = p_user_id
          and m.path is null;
    end if;
    if v_puts = 0 then
        return;
    end if;

    return query
    with last as (
        select distinct on (t.id) t.*
        from unnest(p_ids, p_contents, p_embeddings, p_metadata, p_expires_at)
             with ordinality as t(id, content, embedding, metadata, expires_at, ord)
        order by t.id, t.ord desc
    ),
    written as (
        insert into memex.memories as m
            (id, agent_id, user_id, memory_type, content, embedding, embedding_model,
             importance, metadata, expires_at, created_at, updated_at)
        select l.id, p_agent_id, p_user_id, coalesce(p_memory_type, 'semantic'), l.content,
               l.embedding, p_embedding_model, 1.0, coalesce(l.metadata, '{}'),
               l.expires_at, now(), now()
        from last l
        where l.content is not null
        order by l.id
        on conflict (id) do update
            set content = excluded.content,
                embedding = excluded.embedding,
                embedding_model = excluded.embedding_model,
                metadata = excluded.metadata,
                memory_type = excluded.memory_type,
                expires_at = excluded.expires_at,
                updated_at = now(),
                actor = memex._actor()
            where m.agent_id = excluded.agent_id and m.user_id = excluded.user_id
              and m.path is null
        returning m.id, memex._memory_record(m) as record
    )
    select (w.record).*
    from written w join last l on l.id = w.id
    order by l.ord;
    get diagnostics v_written = row_count;
    if v_written <> v_puts then  -- another tenant's or a file's, since the check above
        raise exception using
            errcode = 'MX409',
            message = 'memories: an id is not one this tenant may put';
    end if;
end
$$;

comment on function memex.put_memories(text, text, uuid[], text[], vector[], text, jsonb[],
                                       memex.memory_type, timestamptz[]) is
    'Upsert (content) or delete (null content) many memories of one tenant by id, in order,'
    ' in one statement; returns the memories written.';
