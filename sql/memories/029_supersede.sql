-- privileges: service
-- memex._supersede: memory p_id of tenant (p_agent_id, p_user_id) supersedes the memories
-- p_supersedes (issue 36): each older one stays, with superseded_by = p_id and
-- superseded_at = now() (for a memory just stored, p_new_from given: its created_at when
-- that is earlier, a store back-dated with p_created_at, so that a search as_of a moment
-- between the two never shows both versions; never before the older one's own
-- created_at), and its valid_to, when open, closed at the successor's valid_from
-- (its created_at when unset; never before the older one's own start); p_id lists them in
-- supersedes (kept with any it listed before). Superseded memories leave the default
-- search (memex._live_memories) and each change leaves a revision (memex._memory_revision).
-- Refused: an id that is not a memory of this tenant (another tenant's or a missing id:
-- MX404, as any id lookup, naming no other tenant's memory); p_id itself or a memory that
-- p_id already descends from (a cycle: MX422, field supersedes); a file or a memory
-- consolidation archived (MX409: a valid request the memory's state refuses). A memory
-- superseded before by another is re-linked to p_id. Null or empty p_supersedes: nothing.
-- p_new_from, for a memory just inserted with p_supersedes listed in its supersedes
-- (memex.store): its start (valid_from, else created_at). Such a memory has no successor
-- (no cycle to look for) and needs no second write: the superseding store then costs the
-- update of each older memory here (each statement on a tenant table evaluates its
-- row-level security policies again: revision 0034, bench/RESULTS.md).
-- Each older memory is updated by its primary key, one statement per memory, in id order:
-- a plan PL/pgSQL keeps for every call on any table (by `id = any (...)` it planned the
-- update anew at each call on an analyzed table, or kept a plan reading an index of
-- every tenant's memories: a superseding store 6-8x a plain one at 20,000 memories).
create or replace function memex._supersede(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_supersedes uuid[],
    p_new_from timestamptz default null
)
returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_ids     uuid[];
    v_missing uuid;
    v_from    timestamptz;
    v_recorded timestamptz := now();
    v_has_successor boolean;
    v_found   integer := 0;
    v_taken   integer;
    v_one     uuid;
    v_row     record;
begin
    if coalesce(cardinality(p_supersedes), 0) = 0 then
        return;
    end if;
    if array_position(p_supersedes, null) is not null then
        perform memex._invalid('supersedes', 'must not contain null');
    end if;
    if cardinality(p_supersedes) > 100 then
        perform memex._invalid('supersedes', 'must name at most 100 memories');
    end if;
    select array_agg(distinct s.id order by s.id) into v_ids from unnest(p_supersedes) s(id);
    if p_id = any (v_ids) then
        perform memex._invalid('supersedes', 'a memory cannot supersede itself');
    end if;
    if p_new_from is not null then
        v_from := p_new_from;
        v_has_successor := false;
        select least(now(), m.created_at) into v_recorded
        from memex.memories m where m.id = p_id;
    else
        select coalesce(m.valid_from, m.created_at), m.superseded_at is not null
        into v_from, v_has_successor
        from memex.memories m where m.id = p_id;
    end if;
    -- a cycle: one of them is p_id's successor, or its successor's, and so on (a memory
    -- just stored has none: nothing to walk)
    if not v_has_successor then
        null;  -- nothing to walk: the walk is neither planned nor run
    elsif exists (
        with recursive successors as (
            select m.superseded_by as id, 1 as depth from memex.memories m
            where m.id = p_id and m.superseded_at is not null
            union
            select m.superseded_by, s.depth + 1 from successors s
            join memex.memories m on m.id = s.id
            where m.superseded_at is not null and s.depth < 1000
        )
        select from successors s where s.id = any (v_ids)
    ) then
        perform memex._invalid('supersedes', 'would make a cycle: a memory it supersedes'
                                              ' supersedes it already');
    end if;
    -- one update per memory, by its primary key, in id order (so two writers superseding
    -- the same memories do not deadlock); what they could not take is refused after them,
    -- and the error undoes them with the rest of the call. By `id = any (...)` instead,
    -- a generic plan estimates ten rows and a custom plan one, so PL/pgSQL planned the
    -- update anew at every call on an analyzed table, and a generic plan could read the
    -- tenant's (or the whole table's) index range (bench/RESULTS.md, issue 36)
    foreach v_one in array v_ids loop
        update memex.memories m
        set superseded_by = p_id,
            superseded_at = greatest(m.created_at, v_recorded),
            valid_to = coalesce(m.valid_to,
                                greatest(v_from, coalesce(m.valid_from, m.created_at)))
        where m.id = v_one and m.agent_id = p_agent_id and m.user_id = p_user_id
          and m.path is null and m.archived_at is null;
        get diagnostics v_taken = row_count;
        v_found := v_found + v_taken;
    end loop;
    if v_found < cardinality(v_ids) then
        select m.id, m.path, m.archived_at into v_row
        from memex.memories m
        where m.id = any (v_ids) and m.agent_id = p_agent_id and m.user_id = p_user_id
          and (m.path is not null or m.archived_at is not null)
        order by m.id limit 1;
        if v_row.path is not null then
            raise exception using errcode = 'MX409',
                message = format('memory %s is a file: files are not superseded', v_row.id);
        end if;
        if v_row.id is not null then
            raise exception using errcode = 'MX409',
                message = format('memory %s is archived by consolidation', v_row.id);
        end if;
        select s.id into v_missing
        from unnest(v_ids) s(id)
        where not exists (select from memex.memories m
                          where m.id = s.id and m.agent_id = p_agent_id
                            and m.user_id = p_user_id)
        order by s.id limit 1;
        raise exception 'memory % not found', v_missing using errcode = 'MX404';
    end if;
    -- memex.store inserts the memory with them listed already: no second write then
    if p_new_from is not null then
        return;
    end if;
    update memex.memories m
    set supersedes = (select array_agg(distinct s.id order by s.id)
                      from unnest(coalesce(m.supersedes, '{}') || v_ids) s(id))
    where m.id = p_id
      and not (coalesce(m.supersedes, '{}') @> v_ids);
end
$$;

comment on function memex._supersede(text, text, uuid, uuid[], timestamptz) is
    'Memory p_id supersedes p_supersedes (same tenant): linked both ways, older ones closed.';
