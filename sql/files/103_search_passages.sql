-- privileges: tenant
-- memex.search_passages (MCP memory_search): the passages of tenant (agent_id, user_id)
-- most relevant to p_query, best first. Files and memories are ranked together by
-- memex.search in hybrid mode: BM25 over the english tsvector fused with vector
-- similarity (settings.hybrid_vector_weight), with memex.search's default ranking (no
-- alpha: recency a bounded tiebreaker, so passages of any age are found). A memory is
-- its own passage; a file gives its best block: the paragraph (lines between blank lines)
-- led by the markdown heading it sits under, that best matches the query terms
-- (ts_rank_cd; ties and no match: the earliest), with its line range. A passage longer than
-- p_passage_chars is cut, ending in '…'. Logged in the access log ('search'). A null
-- p_query_embedding (a caller with no embedder: the TypeScript direct client without
-- one) ranks in text mode (BM25 alone).
create or replace function memex.search_passages(
    p_agent_id text,
    p_user_id text,
    p_query text,
    p_query_embedding vector,
    p_embedding_model text default null,
    p_top_k integer default 8,
    p_passage_chars integer default 800
)
returns table (
    rank       integer,
    path       text,
    memory_id  uuid,
    from_line  integer,
    to_line    integer,
    passage    text,
    score      double precision,
    truncated  boolean
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_query is null or length(p_query) not between 1 and 8000 then
        perform memex._invalid('query', 'must be 1 to 8000 characters');
    end if;
    if p_top_k is null or p_top_k not between 1 and 50 then
        perform memex._invalid('top_k', 'must be 1 to 50');
    end if;
    if p_passage_chars is null or p_passage_chars not between 100 and 8000 then
        perform memex._invalid('passage_chars', 'must be 100 to 8000 characters');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    return query
    with hits as materialized (
        select h.id, h.content, h.score, m.path,
               row_number() over (order by h.score desc, h.id)::integer as rank
        from memex.search(p_agent_id, p_user_id, p_query_embedding, p_top_k => p_top_k,
                          p_query_text => p_query,
                          p_mode => case when p_query_embedding is null then 'text'
                                         else 'hybrid' end,
                          p_embedding_model => p_embedding_model) h
        left join memex.memories m on m.id = h.id
    ),
    lines as (
        -- every line of each file hit, numbered, with the paragraph it belongs to and the
        -- number of the last heading line at or above it
        select h.id, l.n::integer as n, l.line,
               count(*) filter (where btrim(l.line) = '')
                   over (partition by h.id order by l.n) as block,
               max(l.n) filter (where l.line ~ '^#{1,6} ')
                   over (partition by h.id order by l.n) as heading_n
        from hits h
        cross join lateral string_to_table(h.content, E'\n') with ordinality l(line, n)
        where h.path is not null
    ),
    blocks as (
        select b.id, min(b.n) as from_line, max(b.n) as to_line,
               string_agg(b.line, E'\n' order by b.n) as body,
               min(b.heading_n) as heading_n
        from lines b
        where btrim(b.line) <> ''
        group by b.id, b.block
    ),
    led as (
        -- each paragraph led by the heading it sits under (when that is above it)
        select b.id, b.from_line, b.to_line,
               b.body ~ '^#{1,6} [^\n]*$' as heading_only,
               case when b.heading_n < b.from_line
                    then (select l.line from lines l where l.id = b.id and l.n = b.heading_n)
                         || E'\n' || b.body
                    else b.body end as body
        from blocks b
    ),
    best as (
        select distinct on (b.id) b.id, b.from_line, b.to_line, b.body
        from led b
        order by b.id,
                 b.heading_only,  -- a heading alone is no passage
                 -- no query terms: a null query (ts_rank_cd is strict), never the empty
                 -- tsquery, whose input prints a NOTICE on every call
                 coalesce(ts_rank_cd(to_tsvector('english'::regconfig, b.body),
                                     memex._any_term_query(memex._query_terms(p_query))),
                          0) desc,
                 b.from_line
    ),
    passages as (
        select h.rank, h.path, h.id, b.from_line, b.to_line,
               coalesce(b.body, h.content) as body, h.score
        from hits h left join best b on b.id = h.id
    )
    select p.rank, p.path, p.id, p.from_line, p.to_line,
           case when length(p.body) > p_passage_chars
                then left(p.body, p_passage_chars - 1) || '…' else p.body end,
           p.score, length(p.body) > p_passage_chars
    from passages p
    order by p.rank;
    perform memex._log_access(p_agent_id, p_user_id, 'search', null,
                              jsonb_build_object('query', left(p_query, 200), 'top_k', p_top_k));
end
$$;

comment on function memex.search_passages(text, text, text, vector, text, integer, integer) is
    'The passages (a memory, or a file''s best paragraph with its lines) most relevant to a query.';
