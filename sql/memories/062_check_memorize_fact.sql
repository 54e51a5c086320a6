-- privileges: tenant
-- memex.check_memorize_fact: the rules of memory_memorize's memory_fact decisions (issue
-- 36; issue 38: one definition for every language that runs memorize: the Python
-- package, the TypeScript direct client). p_arguments is the decision as the model sent
-- it (raw text, untrusted): a JSON object {"action", "fact", "ids", "reason"} and nothing
-- else; action add | supersede | retire | none (trimmed, any case: mem0's "ADD" is add);
-- fact 1 to 2000 characters, not blank (add and supersede need it, retire takes none);
-- ids at most 3 distinct memory ids (supersede and retire need them, add names none);
-- reason at most 300 characters (default ''). Then against the call: every id must be
-- among p_offered (the candidates the model was shown: the tenant's own live memories,
-- so another tenant's id is refused as not offered), none among p_named (ids an earlier
-- decision of the same call named), and a retire may not take the call past 3 retired
-- memories (p_retired: retired so far). One row: the decision normalized and refusal
-- null, or refusal saying why (field: message; several field errors joined by '; ').
-- Authorizes write access to the tenant (the caller is about to apply it); changes
-- nothing. Applying a decision is memex.store (add, supersede with p_supersedes) and
-- memex.retire_memories (retire), as memorize-agent (memex._delegate).
create or replace function memex.check_memorize_fact(
    p_agent_id text,
    p_user_id text,
    p_arguments text,
    p_offered uuid[],
    p_named uuid[] default '{}',
    p_retired integer default 0
)
returns table (action text, fact text, ids uuid[], reason text, refusal text)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    c_max_ids     constant integer := 3;     -- MEMORIZE_DECISION_MAX_IDS
    c_max_retired constant integer := 3;     -- MEMORIZE_MAX_RETIRED
    c_fact_chars  constant integer := 2000;  -- MEMORIZE_FACT_MAX_CHARS
    c_reason      constant integer := 300;   -- MEMORIZE_REASON_MAX_CHARS
    v_args   jsonb;
    v_errors text[] := '{}';
    v_key    text;
    v_action text;
    v_fact   text;
    v_reason text := '';
    v_ids    uuid[] := '{}';
    v_item   jsonb;
    v_at     integer := 0;
    v_id     uuid;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    begin
        v_args := p_arguments::jsonb;
    exception when invalid_text_representation then
        return query select null::text, null::text, null::uuid[], null::text,
                            'arguments are not JSON';
        return;
    end;
    if v_args is null or jsonb_typeof(v_args) <> 'object' then
        return query select null::text, null::text, null::uuid[], null::text,
                            'arguments are not a JSON object';
        return;
    end if;
    for v_key in select k from jsonb_object_keys(v_args) k order by k loop
        if v_key not in ('action', 'fact', 'ids', 'reason') then
            v_errors := v_errors || format('%s: extra inputs are not permitted', left(v_key, 100));
        end if;
    end loop;
    -- action
    if jsonb_typeof(v_args -> 'action') = 'string' then
        v_action := lower(regexp_replace(v_args ->> 'action', '^\s+|\s+$', '', 'g'));
    end if;
    if v_action is null or v_action not in ('add', 'supersede', 'retire', 'none') then
        v_errors := v_errors || 'action: must be one of add, supersede, retire, none'::text;
        v_action := null;
    end if;
    -- fact
    case coalesce(jsonb_typeof(v_args -> 'fact'), 'null')
        when 'null' then null;
        when 'string' then
            v_fact := v_args ->> 'fact';
            if v_fact !~ '\S' then
                v_errors := v_errors || 'fact: must not be blank'::text;
            elsif char_length(v_fact) > c_fact_chars then
                v_errors := v_errors || format('fact: at most %s characters', c_fact_chars);
            end if;
        else
            v_errors := v_errors || 'fact: must be a string'::text;
    end case;
    -- ids
    case coalesce(jsonb_typeof(v_args -> 'ids'), 'absent')
        when 'absent' then null;
        when 'array' then
            if jsonb_array_length(v_args -> 'ids') > c_max_ids then
                v_errors := v_errors || format('ids: at most %s ids per decision, not %s',
                                               c_max_ids, jsonb_array_length(v_args -> 'ids'));
            else
                for v_item in select e from jsonb_array_elements(v_args -> 'ids') e loop
                    if jsonb_typeof(v_item) = 'string'
                       and (v_item #>> '{}') ~* '^\s*\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?\s*$' then
                        v_ids := v_ids || (btrim(v_item #>> '{}'))::uuid;
                    else
                        v_errors := v_errors || format('ids[%s]: must be a UUID', v_at);
                    end if;
                    v_at := v_at + 1;
                end loop;
            end if;
        else
            v_errors := v_errors || 'ids: must be a list of memory ids'::text;
    end case;
    -- reason
    case coalesce(jsonb_typeof(v_args -> 'reason'), 'absent')
        when 'absent' then null;
        when 'string' then
            v_reason := v_args ->> 'reason';
            if char_length(v_reason) > c_reason then
                v_errors := v_errors || format('reason: at most %s characters', c_reason);
            end if;
        else
            v_errors := v_errors || 'reason: must be a string'::text;
    end case;
    if cardinality(v_errors) > 0 then
        return query select null::text, null::text, null::uuid[], null::text,
                            array_to_string(v_errors, '; ');
        return;
    end if;
    -- the fields together
    if v_action in ('add', 'supersede') and v_fact is null then
        return query select null::text, null::text, null::uuid[], null::text,
                            format('fact: %s needs the fact', v_action);
        return;
    end if;
    if v_action = 'retire' and v_fact is not null then
        return query select null::text, null::text, null::uuid[], null::text,
                            'fact: retire stores no fact (supersede stores a new version)';
        return;
    end if;
    if v_action in ('supersede', 'retire') and cardinality(v_ids) = 0 then
        return query select null::text, null::text, null::uuid[], null::text,
                            format('ids: %s needs the ids of the memories it replaces', v_action);
        return;
    end if;
    if v_action = 'add' and cardinality(v_ids) > 0 then
        return query select null::text, null::text, null::uuid[], null::text,
                            'ids: add names no memory (supersede replaces one)';
        return;
    end if;
    if (select count(distinct i) from unnest(v_ids) i) <> cardinality(v_ids) then
        return query select null::text, null::text, null::uuid[], null::text,
                            'ids: must not name a memory twice';
        return;
    end if;
    -- against the call: the candidates shown, the decisions before it
    foreach v_id in array v_ids loop
        if not v_id = any (coalesce(p_offered, '{}')) then
            return query select null::text, null::text, null::uuid[], null::text,
                format('ids: %s was not offered (only the existing memories listed may be named)',
                       v_id);
            return;
        end if;
        if v_id = any (coalesce(p_named, '{}')) then
            return query select null::text, null::text, null::uuid[], null::text,
                                format('ids: %s was named by an earlier decision', v_id);
            return;
        end if;
    end loop;
    if v_action = 'retire' and coalesce(p_retired, 0) + cardinality(v_ids) > c_max_retired then
        return query select null::text, null::text, null::uuid[], null::text,
            format('ids: one memorize call retires at most %s memories', c_max_retired);
        return;
    end if;
    return query select v_action, v_fact, v_ids, v_reason, null::text;
end
$$;

comment on function memex.check_memorize_fact(text, text, text, uuid[], uuid[], integer) is
    'Check one memory_fact decision of memorize against its rules and the call''s candidates.';
