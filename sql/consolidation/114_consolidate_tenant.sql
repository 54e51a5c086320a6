-- privileges: tenant
-- memex.consolidate_tenant: condense the oldest episodic memories of tenant (agent_id,
-- user_id) into one semantic summary, if it is due: more than dream_config.threshold live
-- episodic memories (files excluded), the batch it would condense all created more than
-- grace_minutes ago, not paused. The tenant need not be quiet: condensing takes its
-- oldest memories, not those being written, so a tenant written every few minutes is
-- condensed all the same (a quiet period would starve it). p_force skips those three
-- checks (an operator's manual run).
--
--   * the batch: the oldest batch_size live episodic memories, locked; a summary needs 2;
--   * the summary: p_summary (an abstractive one the runtime got from an LLM for exactly
--     the batch p_source_ids: MX409 if the batch changed meanwhile) or the extractive one
--     of memex._extractive_summary in at most summary_chars;
--   * it is a semantic memory with source_ids (the lineage), the highest importance of
--     its sources, created_at = its newest source's (old content stays old to recency),
--     and the normalized centroid of its sources' vectors as a stand-in embedding until
--     the embed worker embeds its text (memex._queue_embedding);
--   * the sources are archived (archived_at, superseded_by), never deleted: search skips
--     them unless asked, memex.restore_consolidation brings them back;
--   * written as dream-agent and recorded in memex.consolidation_runs (memex._start_run);
--   * a restore sticks (issue 36): memories memex.restore_consolidation brought back
--     (restored_at) are not condensed again until a memory newer than the restore arrives
--     for the tenant (its newest created_at is after restored_at), or p_force;
--   * memories superseded by a newer version (superseded_at) are never condensed: their
--     superseded_by names their successor.
-- A run never holds up a client's write: it waits for a lock (the batch's rows, the
-- tenant's counters and term statistics a store is writing) at most 200 ms (its own
-- lock_timeout), then gives up what it did and returns status nothing with details.reason
-- "the tenant is being written": the next tick condenses the batch.
-- One run per tenant at a time: a transaction-level advisory lock on the tenant is taken
-- before the batch is read and held until commit, so concurrent runners (pg_cron, every
-- service replica, a manual call) condense each batch exactly once; a runner that finds
-- the tenant locked returns null. p_dry_run returns the plan (status dry_run; in details
-- the source ids, the summary and the sources) and writes nothing. Returns the run
-- (status nothing, with details.reason, when the tenant is not due).
create or replace function memex.consolidate_tenant(
    p_agent_id text,
    p_user_id text,
    p_dry_run boolean default false,
    p_force boolean default false,
    p_summary text default null,
    p_source_ids uuid[] default null,
    p_now timestamptz default null
)
returns memex.consolidation_runs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
set lock_timeout = '200ms'  -- a job yields to writers (see above)
as $$
declare
    v_now     timestamptz := coalesce(p_now, now());
    v_config  jsonb := memex.dream_config();
    v_run     memex.consolidation_runs;
    v_ids     uuid[];
    v_texts   text[];
    v_times   timestamptz[];
    v_live    bigint;
    v_newest  timestamptz;  -- the newest memory of the batch it would condense
    v_summary text;
    v_id      uuid;
    v_last_write timestamptz;  -- the tenant's newest memory: what arrived after a restore
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_summary is not null
       and length(p_summary) not between 1 and memex._content_max_chars() then
        perform memex._invalid('summary', format('must be 1 to %s characters',
                                                  memex._content_max_chars()));
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    if not pg_try_advisory_xact_lock(memex._lock_key(
            'consolidate', jsonb_build_array(p_agent_id, p_user_id)::text)) then
        return null;  -- another runner holds this tenant: it condenses this batch
    end if;
    v_run.agent_id := p_agent_id;
    v_run.user_id := p_user_id;
    v_run.kind := 'condense';
    v_run.actor := 'dream-agent';
    v_run.started_at := clock_timestamp();
    v_run.details := '{}';
    select max(m.created_at) into v_last_write
    from memex.memories m where m.agent_id = p_agent_id and m.user_id = p_user_id;
    if not p_force then
        select count(*) into v_live
        from memex.memories m
        where m.agent_id = p_agent_id and m.user_id = p_user_id
          and m.memory_type = 'episodic' and m.path is null and m.archived_at is null
          and m.superseded_at is null
          and (m.restored_at is null or p_force or m.restored_at < v_last_write)
          and (m.expires_at is null or m.expires_at > v_now);
        select max(b.created_at) into v_newest
        from (select m.created_at from memex.memories m
              where m.agent_id = p_agent_id and m.user_id = p_user_id
                and m.memory_type = 'episodic' and m.path is null and m.archived_at is null
                and m.superseded_at is null
                and (m.restored_at is null or p_force or m.restored_at < v_last_write)
                and (m.expires_at is null or m.expires_at > v_now)
              order by m.created_at, m.id
              limit (v_config ->> 'batch_size')::integer) b;
        v_run.details := jsonb_build_object('reason', case
            when coalesce((select t.dream_paused from memex.tenants t
                           where t.agent_id = p_agent_id and t.user_id = p_user_id), false)
                then 'paused'
            when v_live <= (v_config ->> 'threshold')::integer
                then format('%s live episodic memories, threshold %s', v_live,
                            v_config ->> 'threshold')
            when v_newest > v_now - make_interval(mins => (v_config ->> 'grace_minutes')::integer)
                then format('its oldest memories reach %s, within the grace period', v_newest)
            end);
        if v_run.details ->> 'reason' is not null then
            v_run.status := 'nothing';
            return v_run;
        end if;
    end if;
    begin  -- (a subtransaction: a lock not had in time undoes what the run wrote)
    select array_agg(b.id order by b.created_at, b.id),
           array_agg(b.content order by b.created_at, b.id),
           array_agg(b.created_at order by b.created_at, b.id)
    into v_ids, v_texts, v_times
    from (select m.id, m.content, m.created_at from memex.memories m
          where m.agent_id = p_agent_id and m.user_id = p_user_id
            and m.memory_type = 'episodic' and m.path is null and m.archived_at is null
            and m.superseded_at is null
            and (m.restored_at is null or p_force or m.restored_at < v_last_write)
            and (m.expires_at is null or m.expires_at > v_now)
          order by m.created_at, m.id
          limit (v_config ->> 'batch_size')::integer
          for update) b;
    if coalesce(cardinality(v_ids), 0) < 2 then
        v_run.status := 'nothing';
        v_run.details := '{"reason": "fewer than 2 live episodic memories"}';
        return v_run;
    end if;
    if p_source_ids is not null
       and (select array_agg(s order by s) from unnest(p_source_ids) s)
           is distinct from (select array_agg(s order by s) from unnest(v_ids) s) then
        raise exception 'the batch changed since it was read: summarize it again'
            using errcode = 'MX409';
    end if;
    v_summary := coalesce(p_summary, memex._extractive_summary(
        v_texts, v_times, (v_config ->> 'summary_chars')::integer));
    v_run.memories_in := cardinality(v_ids);
    v_run.memories_out := 1;
    v_run.details := jsonb_build_object(
        'source_ids', to_jsonb(v_ids), 'from', v_times[1], 'to', v_times[cardinality(v_times)],
        'method', case when p_summary is null then 'extractive' else 'llm' end,
        'summary_chars', length(v_summary));
    if p_dry_run then
        v_run.status := 'dry_run';
        v_run.finished_at := clock_timestamp();
        -- the plan: what would be written, and what it is made of (an LLM summarizes it)
        v_run.details := v_run.details || jsonb_build_object(
            'summary', v_summary,
            'sources', (select jsonb_agg(jsonb_build_object('id', i, 'created_at', t,
                                                            'content', c) order by o)
                        from unnest(v_ids, v_times, v_texts) with ordinality u(i, t, c, o)));
        return v_run;
    end if;
    v_run.id := memex._start_run(p_agent_id, p_user_id, 'condense', v_run.started_at);
    insert into memex.memories (agent_id, user_id, memory_type, content, importance, metadata,
                                created_at, source_ids, embedding, embedding_model)
    select p_agent_id, p_user_id, 'semantic', v_summary, max(m.importance),
           jsonb_build_object('consolidation', jsonb_build_object(
               'run', v_run.id, 'sources', cardinality(v_ids), 'method', v_run.details ->> 'method')),
           max(m.created_at), v_ids,
           public.l2_normalize(public.avg(m.embedding) filter (where m.embedding_model = c.model)), c.model
    from memex.memories m
    cross join (select mode() within group (order by s.embedding_model) as model
                from memex.memories s where s.id = any (v_ids)) c
    where m.id = any (v_ids)
    group by c.model
    returning id into v_id;
    update memex.memories m set archived_at = now(), superseded_by = v_id
    where m.id = any (v_ids);
    perform memex._queue_embedding(v_id);
    update memex.consolidation_runs r
    set status = 'done', finished_at = clock_timestamp(), memories_in = v_run.memories_in,
        memories_out = 1, summary_id = v_id, details = v_run.details
    where r.agent_id = p_agent_id and r.id = v_run.id
    returning * into v_run;
    return v_run;
    exception when lock_not_available then
        -- a writer holds what the run needs: the writer goes first, the next tick condenses
        v_run := null;
        v_run.agent_id := p_agent_id;
        v_run.user_id := p_user_id;
        v_run.kind := 'condense';
        v_run.actor := 'dream-agent';
        v_run.status := 'nothing';
        v_run.details := '{"reason": "the tenant is being written: skipped until the next tick"}';
        return v_run;
    end;
end
$$;

comment on function memex.consolidate_tenant(text, text, boolean, boolean, text, uuid[],
                                             timestamptz) is
    'Condense a due tenant''s oldest episodic memories into one summary; originals archived.';
