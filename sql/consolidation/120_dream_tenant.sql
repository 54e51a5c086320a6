-- privileges: tenant
-- memex.dream_tenant: dream over the files of tenant (agent_id, user_id), if it is due:
-- one of its files that dreams read (memex._dream_reads: not the logs) was written since
-- the tenant's last dream (tenants.last_dreamed_at) by someone other than dream-agent,
-- nothing of the tenant (memory or file) was written for dream_config.grace_minutes, and
-- it is not paused. p_force skips those checks and reads every file (an operator's run).
--
--   * read: the files written since the last dream (all of them the first time, or
--     forced), in path order; a file whose newest revision is a restore is left as
--     restored (someone chose that content, maybe to undo a dream);
--   * p_edits (from a model that read memex.dream_plan, to resolve contradictions) apply
--     first (memex._dream_edit: each to the revision it was proposed for; one that does
--     not apply is refused and listed in details.refused, as are edits for a log, a file
--     left as restored or no file); a file an edit names is read even if not written since
--     the last dream; then tidied by memex._dream_clean (repeated headings merged,
--     duplicate lines removed);
--   * a file that changed is rewritten through memex._save_file as dream-agent
--     (memex._delegate: the revision and the access-log entry name the caller as
--     on_behalf_of), operation 'write', based on the revision read: a file written
--     meanwhile is skipped (that write stands) and said so in details, the run goes on.
--     Its current vector stands in until the embed worker re-embeds the new text
--     (memex._queue_embedding). No file is ever deleted or blanked;
--   * at most dream_config.write_budget files are rewritten (p_budget, lower, for what is
--     left of a tick's budget); the rest are listed in details.deferred, and the tenant
--     stays due so that the next run goes on with them;
--   * when a file changed, one line per file goes to user/dream-log.md (memex._dream_log):
--     "- HH:MM user/profile.md: 1 contradiction resolved, 3 duplicate lines removed";
--   * tenants.last_dreamed_at is set when the run is over (also when nothing changed, so
--     the tenant is not read again until it writes again), unless files were deferred; a
--     file skipped for a write made meanwhile stays newer than the mark.
-- The run is recorded in memex.consolidation_runs (kind dream, status done): files_in
-- (read), files_out = files_touched (rewritten), details.files (path, read_revision,
-- revision, lines_removed, headings_merged, removed: the first 20 removed lines, resolved:
-- the edits applied), skipped, deferred, refused, log. One dream per tenant at a time: a
-- transaction-level advisory lock on the tenant, held until commit (a runner that finds
-- it taken returns null). A run that read files and changed none is recorded all the
-- same (status done, files_touched 0, details.reason; no dream-log line, no revision); a
-- tenant that is not due, or has no file to read, is returned with status nothing and
-- details.reason, and not recorded; p_dry_run returns the plan (status dry_run) and
-- writes nothing.
create or replace function memex.dream_tenant(
    p_agent_id text,
    p_user_id text,
    p_dry_run boolean default false,
    p_force boolean default false,
    p_now timestamptz default null,
    p_budget integer default null,
    p_edits jsonb default null
)
returns memex.consolidation_runs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_now       timestamptz := coalesce(p_now, now());
    v_config    jsonb := memex.dream_config();
    v_budget    integer;
    v_run       memex.consolidation_runs;
    v_paused    boolean;
    v_dreamed   timestamptz;  -- the last dream
    v_files     bigint;
    v_written   timestamptz;  -- the tenant's newest write (dream-agent's aside)
    v_file_at   timestamptz;  -- the same, of the files dreams read
    v_reason    text;
    v_file      record;
    v_edit      record;
    v_clean     record;
    v_read      text[] := '{}';  -- the paths read and not left as restored
    v_refused   jsonb := '[]';
    v_resolved  integer;
    v_saved     memex.file_record;
    v_done      jsonb := '[]';
    v_skipped   jsonb := '[]';
    v_deferred  jsonb := '[]';
    v_stopped   text;
    v_moved     timestamptz;  -- the earliest write among the files skipped for one
    v_said      text;
    v_lines     text[] := '{}';
    v_vector    public.vector;  -- a stand-in for a new dream log's embedding
    v_model     text;
    v_log       memex.file_record;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_budget is not null and p_budget < 1 then
        perform memex._invalid('budget', 'must be 1 or more');
    end if;
    perform memex._check_dream_edits(p_edits);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    v_budget := least(coalesce(p_budget, (v_config ->> 'write_budget')::integer),
                      (v_config ->> 'write_budget')::integer);
    if not pg_try_advisory_xact_lock(memex._lock_key(
            'dream', jsonb_build_array(p_agent_id, p_user_id)::text)) then
        return null;  -- another runner is dreaming over this tenant
    end if;
    v_run.agent_id := p_agent_id;
    v_run.user_id := p_user_id;
    v_run.kind := 'dream';
    v_run.actor := 'dream-agent';
    v_run.started_at := clock_timestamp();
    v_run.memories_in := 0;
    v_run.memories_out := 0;
    v_run.files_in := 0;
    v_run.files_out := 0;
    v_run.files_touched := 0;
    v_run.details := '{}';
    select t.dream_paused, t.last_dreamed_at into v_paused, v_dreamed
    from memex.tenants t where t.agent_id = p_agent_id and t.user_id = p_user_id;
    if not p_force then
        select max(m.updated_at) filter (where m.actor is distinct from 'dream-agent'),
               count(*) filter (where m.path is not null and memex._dream_reads(m.path)),
               max(m.updated_at) filter (where m.path is not null and memex._dream_reads(m.path)
                                           and m.actor is distinct from 'dream-agent')
        into v_written, v_files, v_file_at
        from memex.memories m where m.agent_id = p_agent_id and m.user_id = p_user_id;
        v_reason := case
            when coalesce(v_paused, false) then 'paused'
            when v_files = 0 then 'no files to dream over'
            when v_file_at is null or v_file_at <= v_dreamed then
                case when v_dreamed is null then 'no file written by the tenant'
                     else format('no file written since the last dream at %s', v_dreamed) end
            when v_written > v_now - make_interval(mins => (v_config ->> 'grace_minutes')::integer)
                then format('written at %s, within the grace period', v_written)
            end;
        if v_reason is not null then
            v_run.status := 'nothing';
            v_run.details := jsonb_build_object('reason', v_reason);
            return v_run;
        end if;
    end if;
    for v_file in
        select * from memex._dream_files(p_agent_id, p_user_id, v_dreamed, p_force, array(
            select e ->> 'path' from jsonb_array_elements(coalesce(p_edits, '[]')) e
            where not e ? 'refused'))
    loop
        v_run.files_in := v_run.files_in + 1;
        if v_file.operation = 'restore' then
            v_skipped := v_skipped || jsonb_build_array(jsonb_build_object(
                'path', v_file.path, 'revision', v_file.revision,
                'reason', 'restored: left as restored until it is written again'));
            continue;
        end if;
        v_read := v_read || v_file.path;
        v_edit := memex._dream_edit(v_file.path, v_file.content, v_file.revision, p_edits);
        v_refused := v_refused || v_edit.refused;
        v_resolved := jsonb_array_length(v_edit.resolved);
        v_clean := memex._dream_clean(v_edit.content);
        continue when v_clean.content = v_file.content
                      or btrim(v_clean.content, E' \t\n\r\f\x0b') = '';
        if v_run.files_out >= v_budget or v_stopped is not null then
            v_deferred := v_deferred || to_jsonb(v_file.path);
            continue;
        end if;
        v_saved := null;
        if not p_dry_run then
            if v_run.id is null then
                v_run.id := memex._start_run(p_agent_id, p_user_id, 'dream', v_run.started_at);
            end if;
            begin
                v_saved := memex._save_file(
                    p_agent_id, p_user_id, v_file.path, v_clean.content, v_file.embedding,
                    v_file.embedding_model, 'write', v_file.revision,
                    jsonb_build_object('dream', jsonb_strip_nulls(jsonb_build_object(
                        'run', v_run.id, 'lines_removed', v_clean.lines_removed,
                        'headings_merged', v_clean.headings_merged,
                        'contradictions_resolved', nullif(v_resolved, 0)))));
            exception
                when sqlstate 'MX409' then
                    -- written (or deleted) since it was read: that write stands, and the
                    -- file waits for the next dream
                    v_skipped := v_skipped || jsonb_build_array(jsonb_build_object(
                        'path', v_file.path, 'revision', v_file.revision,
                        'reason', 'written meanwhile'));
                    v_moved := least(v_moved, (select m.updated_at from memex.memories m
                                               where m.id = v_file.id));
                    continue;
                when sqlstate 'MX429' then
                    -- the caller's write rate limit: the rest waits for the next run
                    get stacked diagnostics v_stopped = message_text;
                    v_deferred := v_deferred || to_jsonb(v_file.path);
                    continue;
            end;
            perform memex._queue_embedding(v_file.id);
        end if;
        v_run.files_out := v_run.files_out + 1;
        v_said := concat_ws(', ',
            case when v_resolved > 0 then
                v_resolved || ' contradiction'
                || case when v_resolved > 1 then 's' else '' end || ' resolved' end,
            case when v_clean.lines_removed > 0 then
                v_clean.lines_removed || ' duplicate line'
                || case when v_clean.lines_removed > 1 then 's' else '' end || ' removed' end,
            case when v_clean.headings_merged > 0 then
                v_clean.headings_merged || ' repeated heading'
                || case when v_clean.headings_merged > 1 then 's' else '' end || ' merged' end);
        v_done := v_done || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
            'path', v_file.path, 'read_revision', v_file.revision, 'revision', v_saved.revision,
            'lines_removed', v_clean.lines_removed, 'headings_merged', v_clean.headings_merged,
            'removed', to_jsonb(v_clean.removed), 'resolved', nullif(v_edit.resolved, '[]'))));
        -- the log says what changed in a few thousand characters, however many files
        if coalesce(length(array_to_string(v_lines, E'\n')), 0) < 8000 then
            v_lines := v_lines || format('- %s %s: %s',
                                         to_char(now() at time zone 'UTC', 'HH24:MI'),
                                         v_file.path, v_said);
        end if;
        if v_vector is null then
            v_vector := v_file.embedding;
            v_model := v_file.embedding_model;
        end if;
    end loop;
    v_run.files_touched := v_run.files_out;
    select v_refused || coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'path', e ->> 'path', 'old_text', left(e ->> 'old_text', 200),
               'reason', coalesce(left(e ->> 'refused', 300),
                                  'not a file dreams edit (a log, restored, or no such file)')))),
                    '[]')
    into v_refused
    from jsonb_array_elements(coalesce(p_edits, '[]')) e
    where not (e ->> 'path' = any (v_read));
    v_run.details := jsonb_strip_nulls(jsonb_build_object(
        'files', v_done, 'skipped', nullif(v_skipped, '[]'),
        'deferred', nullif(v_deferred, '[]'), 'stopped', v_stopped,
        'refused', nullif(v_refused, '[]')));
    if v_run.files_out = 0 then
        v_run.details := v_run.details - 'files' || jsonb_build_object('reason', case
            when v_run.files_in = 0 then 'no files to dream over'
            when v_stopped is not null then v_stopped
            when v_skipped <> '[]' then 'the files to tidy were written meanwhile or restored'
            else format('%s file%s read, nothing to tidy', v_run.files_in,
                        case when v_run.files_in > 1 then 's' else '' end)
            end);
        if p_dry_run or v_run.files_in = 0 then
            v_run.status := 'nothing';
        elsif v_run.id is null then
            -- files were read and found tidy: a run with no file touched, recorded (as
            -- MemexAI's no-op runs are) so that the operator sees the tenant was looked at
            v_run.id := memex._start_run(p_agent_id, p_user_id, 'dream', v_run.started_at);
        end if;
    elsif p_dry_run then
        v_run.status := 'dry_run';
        v_run.finished_at := clock_timestamp();
        return v_run;
    else
        if v_run.files_out > cardinality(v_lines) then
            v_lines := v_lines || format('- %s and %s more files (consolidation run %s)',
                                         to_char(now() at time zone 'UTC', 'HH24:MI'),
                                         v_run.files_out - cardinality(v_lines), v_run.id);
        end if;
        v_log := memex._dream_log(p_agent_id, p_user_id, v_lines, v_vector, v_model,
                                  jsonb_build_object('dream', jsonb_build_object('run', v_run.id)));
        v_run.details := v_run.details || jsonb_build_object(
            'log', jsonb_build_object('path', v_log.path, 'revision', v_log.revision));
    end if;
    if not p_dry_run and v_deferred = '[]' then
        update memex.tenants t
        set last_dreamed_at = least(now(), v_moved - interval '1 microsecond')
        where t.agent_id = p_agent_id and t.user_id = p_user_id;
    end if;
    if v_run.status = 'nothing' then
        return v_run;
    end if;
    update memex.consolidation_runs r
    set status = 'done', finished_at = clock_timestamp(), files_in = v_run.files_in,
        files_out = v_run.files_out, files_touched = v_run.files_touched,
        details = v_run.details
    where r.agent_id = p_agent_id and r.id = v_run.id
    returning * into v_run;
    return v_run;
end
$$;

comment on function memex.dream_tenant(text, text, boolean, boolean, timestamptz, integer, jsonb)
    is 'Dream over a due tenant''s files: edits applied, repeated headings merged, duplicate'
       ' lines removed; logged.';
