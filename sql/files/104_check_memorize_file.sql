-- privileges: tenant
-- memex.check_memorize_file: the rules of memory_memorize's file proposals (issue 38: one
-- definition for every language that runs memorize: the Python package, the TypeScript
-- direct client). p_tool is the tool the model called, p_arguments its arguments as the
-- model sent them (raw text, untrusted). memory_write: a JSON object {"path", "content"};
-- memory_patch: {"path", "heading", "append", "old_text", "new_text"} (path required, the
-- others optional); nothing else. path: a virtual path (memex._check_path's rules and
-- messages); content, append, old_text: 1 to 8000 characters, not blank; new_text at
-- most 8000; heading at most 200. Another tool is refused ("unknown tool"). One row: the
-- proposal's fields with refusal null, or refusal saying why (field: message; several
-- field errors joined by '; '). What depends on the file as it is (old_text found once,
-- append or replace) is memex.patch_file's to refuse when it is applied. Authorizes
-- write access to the tenant; changes nothing.
create or replace function memex.check_memorize_file(
    p_agent_id text,
    p_user_id text,
    p_tool text,
    p_arguments text
)
returns table (
    tool text, path text, content text, heading text, append text, old_text text,
    new_text text, refusal text
)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    c_text_chars    constant integer := 8000;  -- MEMORIZE_PROPOSAL_MAX_CHARS
    c_heading_chars constant integer := 200;   -- HEADING_MAX_CHARS
    v_args    jsonb;
    v_errors  text[] := '{}';
    v_allowed text[];
    v_key     text;
    v_value   text;
    v_fields  jsonb := '{}';
    v_state   text;
    v_message text;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    begin
        v_args := p_arguments::jsonb;
    exception when invalid_text_representation then
        return query select p_tool, null::text, null::text, null::text, null::text, null::text,
                            null::text, 'arguments are not JSON';
        return;
    end;
    if v_args is null or jsonb_typeof(v_args) <> 'object' then
        return query select p_tool, null::text, null::text, null::text, null::text, null::text,
                            null::text, 'arguments are not a JSON object';
        return;
    end if;
    v_allowed := case p_tool
        when 'memory_write' then array['path', 'content']
        when 'memory_patch' then array['path', 'heading', 'append', 'old_text', 'new_text']
    end;
    if v_allowed is null then
        return query select p_tool, null::text, null::text, null::text, null::text, null::text,
            null::text,
            format('unknown tool %L: memory_fact, memory_write or memory_patch', left(p_tool, 100));
        return;
    end if;
    foreach v_key in array v_allowed loop
        case coalesce(jsonb_typeof(v_args -> v_key), 'null')
            when 'null' then
                if v_key in ('path', 'content') then
                    v_errors := v_errors || format('%s: field required', v_key);
                end if;
            when 'string' then
                v_value := v_args ->> v_key;
                if v_key = 'path' then
                    begin
                        perform memex._check_path(v_value);
                    exception when others then
                        get stacked diagnostics v_state = returned_sqlstate,
                                                v_message = message_text;
                        if v_state <> 'MX422' then
                            raise;
                        end if;
                        v_errors := v_errors || v_message;
                    end;
                elsif v_key = 'heading' then
                    if char_length(v_value) > c_heading_chars then
                        v_errors := v_errors || format('heading: at most %s characters',
                                                       c_heading_chars);
                    end if;
                elsif char_length(v_value) > c_text_chars then
                    v_errors := v_errors || format('%s: at most %s characters', v_key, c_text_chars);
                elsif v_key <> 'new_text' and v_value !~ '\S' then
                    v_errors := v_errors || format('%s: must not be blank', v_key);
                end if;
                v_fields := v_fields || jsonb_build_object(v_key, v_value);
            else
                v_errors := v_errors || format('%s: must be a string', v_key);
        end case;
    end loop;
    for v_key in select k from jsonb_object_keys(v_args) k order by k loop
        if not v_key = any (v_allowed) then
            v_errors := v_errors || format('%s: extra inputs are not permitted', left(v_key, 100));
        end if;
    end loop;
    if cardinality(v_errors) > 0 then
        return query select p_tool, null::text, null::text, null::text, null::text, null::text,
                            null::text, array_to_string(v_errors, '; ');
        return;
    end if;
    return query select p_tool, v_fields ->> 'path', v_fields ->> 'content',
                        v_fields ->> 'heading', v_fields ->> 'append', v_fields ->> 'old_text',
                        v_fields ->> 'new_text', null::text;
end
$$;

comment on function memex.check_memorize_file(text, text, text, text) is
    'Check one memory_write or memory_patch proposal of memorize against its rules.';
