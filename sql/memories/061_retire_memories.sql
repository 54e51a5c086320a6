-- privileges: tenant
-- memex.retire_memories: facts of tenant (p_agent_id, p_user_id) that no longer hold and
-- have no newer version (issue 36: memorize's "retire", mem0's DELETE), retired together
-- (all or none). Each memory of p_ids (1 to 100, no null) is not deleted but superseded
-- with no successor: superseded_at = now(), superseded_by stays null, and its validity
-- closed now (valid_to = now(), never before its start; an earlier valid_to is kept). So
-- it leaves the default search (memex._live_memories, as any superseded memory), stays in
-- get, in as_of searches before now and in its history, where its next revision
-- (operation superseded) carries {"retired": true, "reason": p_reason} in its details
-- (the reason at most 300 characters; null or empty: none). (memex.revert_memory does
-- not revert supersession: no call un-retires a memory yet.) A memory retired or
-- superseded already, a file, or one
-- consolidation archived is MX409; an id that is not an unexpired memory of this tenant
-- (another tenant's included) MX404: nothing is retired then. Returns the memories as
-- they are now, in p_ids' order. As memorize-agent (memory_memorize, memex._delegate)
-- each gets its access-log entry (operation memorize, target its id) in the same
-- transaction, as memex.store's.
create or replace function memex.retire_memories(
    p_agent_id text,
    p_user_id text,
    p_ids uuid[],
    p_reason text default null
)
returns setof memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids  uuid[];
    v_row  record;
    v_done integer;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    if coalesce(cardinality(p_ids), 0) = 0 then
        perform memex._invalid('ids', 'must name at least one memory');
    end if;
    if array_position(p_ids, null) is not null then
        perform memex._invalid('ids', 'must not contain null');
    end if;
    if cardinality(p_ids) > 100 then
        perform memex._invalid('ids', 'must name at most 100 memories');
    end if;
    if length(p_reason) > 300 then
        perform memex._invalid('reason', 'must be at most 300 characters');
    end if;
    select array_agg(distinct s.id order by s.id) into v_ids from unnest(p_ids) s(id);
    -- the rows in id order (two writers retiring the same memories do not deadlock)
    for v_row in
        select m.id, m.path, m.archived_at, m.superseded_at
        from memex.memories m
        where m.id = any (v_ids) and m.agent_id = p_agent_id and m.user_id = p_user_id
          and (m.expires_at is null or m.expires_at > now())
        order by m.id
        for update
    loop
        if v_row.path is not null then
            raise exception using errcode = 'MX409',
                message = format('memory %s is a file: files are not retired', v_row.id);
        elsif v_row.archived_at is not null then
            raise exception using errcode = 'MX409',
                message = format('memory %s is archived by consolidation', v_row.id);
        elsif v_row.superseded_at is not null then
            raise exception using errcode = 'MX409',
                message = format('memory %s is superseded or retired already', v_row.id);
        end if;
    end loop;
    update memex.memories m
    set superseded_at = now(),
        valid_to = case when m.valid_to is null or m.valid_to > now()
                        then greatest(now(), coalesce(m.valid_from, m.created_at))
                        else m.valid_to end
    where m.id = any (v_ids) and m.agent_id = p_agent_id and m.user_id = p_user_id
      and (m.expires_at is null or m.expires_at > now());
    get diagnostics v_done = row_count;
    if v_done < cardinality(v_ids) then
        select s.id into v_row from unnest(v_ids) s(id)
        where not exists (select from memex.memories m
                          where m.id = s.id and m.agent_id = p_agent_id
                            and m.user_id = p_user_id
                            and (m.expires_at is null or m.expires_at > now()))
        order by s.id limit 1;
        raise exception 'memory % not found', v_row.id using errcode = 'MX404';
    end if;
    -- the revision the update left on each (memex._memory_revision) says why
    update memex.memory_revisions r
    set details = r.details || jsonb_strip_nulls(
            jsonb_build_object('retired', true, 'reason', nullif(p_reason, '')))
    where r.memory_id = any (v_ids)
      and r.revision = (select max(x.revision) from memex.memory_revisions x
                        where x.memory_id = r.memory_id);
    if memex._actor() = 'memorize-agent' then
        perform memex._log_access(p_agent_id, p_user_id, 'memorize', s.id::text)
        from unnest(v_ids) s(id);
    end if;
    return query
    select (memex._memory_record(m)).*
    from unnest(p_ids) with ordinality as i(id, ord)
    join memex.memories m on m.id = i.id
    where i.ord = (select min(j.ord) from unnest(p_ids) with ordinality as j(id, ord)
                   where j.id = i.id)
    order by i.ord;
end
$$;

comment on function memex.retire_memories(text, text, uuid[], text) is
    'Retire memories that no longer hold (superseded with no successor; they stay in history).';
