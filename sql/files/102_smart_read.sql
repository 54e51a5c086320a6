-- privileges: tenant
-- memex.smart_read (MCP memory_smart_read): one context block of at most p_budget
-- characters (100 to 100000, default 4000) from the files and memories of tenant
-- (agent_id, user_id) most relevant to p_query: memex.search in hybrid mode with its
-- default ranking (no alpha: recency a bounded tiebreaker; the top 20), best first, each under a header line naming its path ('### user/x.md') or
-- id ('### memory <uuid>'). An item that does not fit whole is cut (ending in '…') if
-- at least 200 characters of room remain, and the block ends there; it never exceeds the
-- budget. sources lists what went in ({path | id, score, chars, truncated}). Logged in the
-- access log ('smart_read'). A null p_query_embedding (a caller with no embedder: the
-- TypeScript direct client without one) ranks in text mode (BM25 alone).
create or replace function memex.smart_read(
    p_agent_id text,
    p_user_id text,
    p_query text,
    p_query_embedding vector,
    p_embedding_model text default null,
    p_budget integer default 4000
)
returns memex.smart_read_result
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_result  memex.smart_read_result;
    v_hit     record;
    v_header  text;
    v_room    integer;
    v_piece   text;
    v_cut     boolean;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_budget is null or p_budget not between 100 and 100000 then
        perform memex._invalid('budget', 'must be 100 to 100000 characters');
    end if;
    if p_query is null or length(p_query) not between 1 and 8000 then
        perform memex._invalid('query', 'must be 1 to 8000 characters');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    v_result.context := '';
    v_result.budget := p_budget;
    v_result.sources := '[]';
    for v_hit in
        select h.id, h.content, h.score, m.path
        from memex.search(p_agent_id, p_user_id, p_query_embedding, p_top_k => 20,
                          p_query_text => p_query,
                          p_mode => case when p_query_embedding is null then 'text'
                                         else 'hybrid' end,
                          p_embedding_model => p_embedding_model) h
        left join memex.memories m on m.id = h.id
        order by h.score desc
    loop
        v_header := '### ' || coalesce(v_hit.path, 'memory ' || v_hit.id) || E'\n';
        v_room := p_budget - length(v_result.context)
                  - case when v_result.context = '' then 0 else 1 end;
        v_piece := v_header || rtrim(v_hit.content, E'\n') || E'\n';
        v_cut := length(v_piece) > v_room;
        if v_cut then
            exit when v_room < 200;
            v_piece := left(v_piece, v_room - 2) || E'…\n';
        end if;
        v_result.context := v_result.context
                            || case when v_result.context = '' then '' else E'\n' end || v_piece;
        v_result.sources := v_result.sources || jsonb_build_array(jsonb_strip_nulls(
            jsonb_build_object('path', v_hit.path,
                               'id', case when v_hit.path is null then v_hit.id end,
                               'score', v_hit.score, 'chars', length(v_piece),
                               'truncated', v_cut)));
        exit when v_cut;
    end loop;
    v_result.chars := length(v_result.context);
    perform memex._log_access(p_agent_id, p_user_id, 'smart_read', null,
                              jsonb_build_object('query', left(p_query, 200), 'budget', p_budget,
                                                 'sources', jsonb_array_length(v_result.sources)));
    return v_result;
end
$$;

comment on function memex.smart_read(text, text, text, vector, text, integer) is
    'One context block of at most p_budget characters from the most relevant files and memories.';
