-- privileges: tenant
-- memex.store_many: batch form of memex.store for imports. Parallel arrays, one element
-- per memory (optional arrays may be null for all-defaults). Validates every item first,
-- inserts them in one statement, and returns the stored memories in input order. An
-- expires_at in the past is MX422 (memories[i].expires_at), as in memex.store.
-- Each memory counts one item against the store rate limit (a batch of N costs N).
-- p_ids (null, or a null item: a new id) makes a retried batch store once, as memex.store's
-- p_id: an item whose id exists already with the same memory (tenant, content, type,
-- importance, metadata) is answered with it; one whose id exists with another memory is
-- MX409 (memories[i].id) and nothing of the batch is stored.
-- p_supersedes (issue 36; null, or a null item: supersedes nothing): item i's element is a
-- JSON array of the ids of the older memories it replaces, as memex.store's p_supersedes,
-- by memex._supersede's rules (the same tenant's memories, MX404 otherwise; a file or an
-- archived memory MX409; one superseded before is re-linked), with the same result as if
-- the items were stored one by one, in batch order (made for the whole batch in two
-- updates, not one memex._supersede per item, which cost twice the batch): an item may
-- supersede a memory stored before the batch or an earlier item of it (named by its id
-- in p_ids), not itself nor a later item (MX422, memories[i].supersedes). All in the call's transaction: any refusal
-- stores nothing. A repeat of an item stored before (its id exists) supersedes nothing more.
-- The new memory's revision 1 (store) is the batch insert's; the link it makes is its
-- revision 2 (supersede), and each older memory's next revision (superseded).
create or replace function memex.store_many(
    p_agent_ids text[],
    p_user_ids text[],
    p_contents text[],
    p_embeddings vector[],
    p_embedding_model text,
    p_memory_types memex.memory_type[] default null,
    p_importances double precision[] default null,
    p_metadata jsonb[] default null,
    p_expires_at timestamptz[] default null,
    p_created_at timestamptz[] default null,
    p_ids uuid[] default null,
    p_supersedes jsonb[] default null
)
returns setof memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_past bigint;
    v_clash bigint;
    v_ids uuid[];
    v_existing uuid[];
    v_older uuid[];
    v_item record;
    v_later bigint;
    -- the links the batch asks for, in batch order: item (its ordinal), older memory
    v_link_ord bigint[] := '{}';
    v_link_old uuid[] := '{}';
    v_refused record;
begin
    -- an expiry must be in the future, as memex.store says (an import may restore a past one)
    select min(e.ord) into v_past
    from unnest(p_expires_at) with ordinality as e(at, ord)
    where e.at <= now();
    if v_past is not null then
        perform memex._invalid(format('memories[%s].expires_at', v_past - 1),
                               'must be in the future');
    end if;
    if p_supersedes is not null
       and cardinality(p_supersedes) <> coalesce(cardinality(p_contents), 0) then
        perform memex._invalid('supersedes', 'must have one item per memory');
    end if;
    -- each item: null, or an array of at most 100 distinct memory ids
    for v_item in
        select s.list, s.ord from unnest(p_supersedes) with ordinality as s(list, ord)
        where s.list is not null and s.list <> 'null'::jsonb
    loop
        if jsonb_typeof(v_item.list) <> 'array'
           or exists (select from jsonb_array_elements(v_item.list) e(id)
                      where jsonb_typeof(e.id) <> 'string'
                         or e.id #>> '{}' !~* '^[0-9a-f]{8}-?([0-9a-f]{4}-?){3}[0-9a-f]{12}$')
        then
            perform memex._invalid(format('memories[%s].supersedes', v_item.ord - 1),
                                   'must be an array of memory ids (UUIDs)');
        end if;
        if jsonb_array_length(v_item.list) > 100 then
            perform memex._invalid(format('memories[%s].supersedes', v_item.ord - 1),
                                   'must name at most 100 memories');
        end if;
    end loop;
    -- memex.import_memories with new ids and updated_at = now(): one insert path, one
    -- validation (memex._check_memories), the same rate-limit hits.
    if p_ids is null and not exists (
        select from unnest(p_supersedes) s(list)
        where s.list is not null and s.list <> 'null'::jsonb and s.list <> '[]'::jsonb
    ) then
        return query
        select * from memex.import_memories(
            null, p_agent_ids, p_user_ids, p_contents, p_embeddings, p_embedding_model,
            p_memory_types, p_importances, p_metadata, p_created_at, null, p_expires_at);
        return;
    end if;
    -- the items without an id get a new one here, so that each is found below
    select array_agg(coalesce(p_ids[i.ord], gen_random_uuid()) order by i.ord) into v_ids
    from generate_series(1, coalesce(cardinality(p_contents), 0)) as i(ord);
    -- the ids stored before the batch (a retry's): they supersede nothing more
    select coalesce(array_agg(m.id), '{}') into v_existing
    from memex.memories m where m.id = any (v_ids);
    -- an id that exists is skipped here (memex.import_memories), then checked below
    perform from memex.import_memories(
        v_ids, p_agent_ids, p_user_ids, p_contents, p_embeddings, p_embedding_model,
        p_memory_types, p_importances, p_metadata, p_created_at, null, p_expires_at);
    select min(i.ord) into v_clash
    from unnest(v_ids, p_agent_ids, p_user_ids, p_contents)
         with ordinality as i(id, agent_id, user_id, content, ord)
    where not exists (
        select from memex.memories m
        where m.id = i.id
          and m.agent_id = i.agent_id
          and m.user_id = i.user_id
          and m.content = i.content
          and m.memory_type = coalesce(p_memory_types[i.ord], 'episodic')
          and m.importance = coalesce(p_importances[i.ord], 1.0)
          and m.metadata = coalesce(p_metadata[i.ord], '{}'));
    if v_clash is not null then
        raise exception using
            errcode = 'MX409',
            message = format('memories[%s].id: memory %s exists already with other content',
                             v_clash - 1, v_ids[v_clash]);
    end if;
    -- supersession in batch order, each item as memex.store would link it
    for v_item in
        select s.list, s.ord from unnest(p_supersedes) with ordinality as s(list, ord)
        where s.list is not null and s.list <> 'null'::jsonb
          and jsonb_array_length(s.list) > 0
        order by s.ord
    loop
        select array_agg((e.id #>> '{}')::uuid) into v_older
        from jsonb_array_elements(v_item.list) e(id);
        if (select count(distinct o.id) from unnest(v_older) o(id)) < cardinality(v_older) then
            perform memex._invalid(format('memories[%s].supersedes', v_item.ord - 1),
                                   'must not name a memory twice');
        end if;
        -- this item or a later one of the batch: not stored yet, were they stored one by one
        select min(i.ord) into v_later
        from unnest(v_ids) with ordinality as i(id, ord)
        where i.ord >= v_item.ord and i.id = any (v_older);
        if v_later = v_item.ord then
            perform memex._invalid(format('memories[%s].supersedes', v_item.ord - 1),
                                   'a memory cannot supersede itself');
        elsif v_later is not null then
            perform memex._invalid(format('memories[%s].supersedes', v_item.ord - 1),
                                   format('names memories[%s], later in the batch: an item'
                                          ' supersedes only memories stored before it',
                                          v_later - 1));
        end if;
        if v_ids[v_item.ord] = any (v_existing) then
            continue;  -- a repeat of a memory stored before (a retry): as it is
        end if;
        v_link_ord := v_link_ord || array_fill(v_item.ord, array[cardinality(v_older)]);
        v_link_old := v_link_old || v_older;
    end loop;
    if cardinality(v_link_old) > 0 then
        -- the links of the whole batch in two statements, as memex._supersede makes each
        -- (one per item cost as much again): an older memory named by several items ends
        -- superseded by the last of them, its validity closed where the first starts, as
        -- storing them one by one would leave it. A new item has no successor yet and
        -- names no later item (checked above): no cycle to look for.
        -- what could not be superseded: missing or another tenant's (MX404), a file or an
        -- archived memory (MX409), as memex._supersede refuses them
        select l.old_id, m.id is not null as is_there, m.path, m.archived_at into v_refused
        from unnest(v_link_ord, v_link_old) as l(ord, old_id)
        left join memex.memories m
          on m.id = l.old_id and m.agent_id = p_agent_ids[l.ord]
             and m.user_id = p_user_ids[l.ord]
        where m.id is null or m.path is not null or m.archived_at is not null
        order by m.id is not null, l.old_id
        limit 1;
        if v_refused.old_id is not null then
            if not v_refused.is_there then
                raise exception 'memory % not found', v_refused.old_id using errcode = 'MX404';
            elsif v_refused.path is not null then
                raise exception using errcode = 'MX409', message = format(
                    'memory %s is a file: files are not superseded', v_refused.old_id);
            end if;
            raise exception using errcode = 'MX409',
                message = format('memory %s is archived by consolidation', v_refused.old_id);
        end if;
        update memex.memories m
        set superseded_by = l.last_id,
            -- at the last successor's recording (created_at, when back-dated), as
            -- memex._supersede does for a memory just stored
            superseded_at = greatest(m.created_at, least(now(), l.last_created)),
            valid_to = coalesce(m.valid_to,
                                greatest(l.first_start, coalesce(m.valid_from, m.created_at)))
        from (
            select x.old_id,
                   (array_agg(n.id order by x.ord desc))[1] as last_id,
                   (array_agg(n.created_at order by x.ord desc))[1] as last_created,
                   (array_agg(coalesce(n.valid_from, n.created_at) order by x.ord))[1]
                       as first_start
            from unnest(v_link_ord, v_link_old) as x(ord, old_id)
            join memex.memories n on n.id = v_ids[x.ord]
            group by x.old_id
        ) l
        where m.id = l.old_id;
        update memex.memories m
        set supersedes = l.ids
        from (
            select v_ids[x.ord] as new_id, array_agg(distinct x.old_id order by x.old_id) as ids
            from unnest(v_link_ord, v_link_old) as x(ord, old_id)
            group by x.ord
        ) l
        where m.id = l.new_id;
    end if;
    return query
    select (memex._memory_record(m)).*
    from unnest(v_ids) with ordinality as i(id, ord)
    join memex.memories m on m.id = i.id
    order by i.ord;
end
$$;

comment on function memex.store_many(text[], text[], text[], vector[], text,
                                     memex.memory_type[], double precision[], jsonb[],
                                     timestamptz[], timestamptz[], uuid[], jsonb[]) is
    'Store many memories in one statement; returns them in input order (with p_ids, a'
    ' repeat of the same memories returns them, another memory with one of the ids is MX409;'
    ' p_supersedes: what each item replaces, linked in batch order).';
