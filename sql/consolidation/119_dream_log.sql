-- privileges: service
-- memex._dream_log: append p_lines (one per file a dream tidied) to the tenant's
-- user/dream-log.md under today's heading ('## YYYY-MM-DD', UTC), created as
-- memex._apply_patch creates it for an append (the file, or the heading at its end).
-- Written through memex._save_file as the caller (a dream has delegated to dream-agent),
-- a 'patch' revision, and queued for embedding: a new log starts with p_embedding (a
-- stand-in: a tidied file's vector). A log whose heading for today is there twice (edited
-- by hand) gets the lines at its end; a log that would pass 32768 characters is moved to
-- user/dream-log-<YYYYMMDDHHMISS>.md first, as the memorize fallback does with user/log.md.
-- Returns the log as written.
create or replace function memex._dream_log(
    p_agent_id text,
    p_user_id text,
    p_lines text[],
    p_embedding vector,
    p_embedding_model text,
    p_details jsonb default '{}'
)
returns memex.file_record
language plpgsql volatile set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_path     constant text := 'user/dream-log.md';
    v_heading  text := '## ' || to_char(now() at time zone 'UTC', 'YYYY-MM-DD');
    v_entry    text := array_to_string(p_lines, E'\n');
    v_revision integer;
    v_row      memex.memories;
    v_content  text;
    v_archive  memex.file_record;
    v_log      memex.file_record;
begin
    v_revision := memex._lock_file(p_agent_id, p_user_id, v_path, null);
    select m.* into v_row from memex.memories m
    where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = v_path;
    begin
        v_content := memex._apply_patch(v_row.content, v_heading, v_entry, null, null);
    exception when sqlstate 'MX409' then
        v_content := null;  -- the log is full, or today's heading is there twice
    end;
    if v_content is null
       and (select count(*) from unnest(string_to_array(v_row.content, E'\n')) l
            where rtrim(l) = v_heading) > 1
       and length(v_row.content) + length(v_entry) + 2 <= memex._content_max_chars() then
        v_content := rtrim(v_row.content, E'\n') || E'\n' || v_entry || E'\n';
    end if;
    if v_content is null then
        v_archive := memex._save_file(
            p_agent_id, p_user_id,
            'user/dream-log-' || to_char(clock_timestamp() at time zone 'UTC',
                                         'YYYYMMDDHH24MISS') || '.md',
            v_row.content, v_row.embedding::public.vector, v_row.embedding_model, 'write', 0,
            p_details || jsonb_build_object('moved_from', v_path));
        perform memex._queue_embedding(v_archive.memory_id);
        v_content := memex._apply_patch(null, v_heading, v_entry, null, null);
    end if;
    v_log := memex._save_file(p_agent_id, p_user_id, v_path, v_content,
                              coalesce(v_row.embedding::public.vector, p_embedding),
                              coalesce(v_row.embedding_model, p_embedding_model), 'patch',
                              v_revision, p_details || '{"patch": "append"}');
    perform memex._queue_embedding(v_log.memory_id);
    return v_log;
end
$$;

comment on function memex._dream_log(text, text, text[], vector, text, jsonb) is
    'Append a dream''s entries to user/dream-log.md under today''s heading (moved aside when full).';
