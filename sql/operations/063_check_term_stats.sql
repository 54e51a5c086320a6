-- privileges: service
-- memex.check_term_stats: the lexemes whose stored document frequency (memex.term_stats,
-- kept by triggers on memex.memories) differs from a recount over the tenant's stored
-- memories; no rows when the statistics are true. An operator's check (and the tests'):
-- the recount reads every memory of the tenant.
create or replace function memex.check_term_stats(p_agent_id text, p_user_id text)
returns table (lexeme text, stored_df bigint, actual_df bigint)
language plpgsql
stable
set search_path = pg_catalog, public, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(null, null, 'admin');  -- an operator call
    return query
    with actual as (
        select t.lexeme, count(*) as df
        from memex.memories m cross join lateral unnest(m.tsv) t
        where m.agent_id = p_agent_id and m.user_id = p_user_id
        group by t.lexeme
    ),
    stored as (
        select s.lexeme, s.df from memex.term_stats s
        where s.agent_id = p_agent_id and s.user_id = p_user_id
    )
    select coalesce(s.lexeme, a.lexeme), s.df, a.df
    from stored s full join actual a on a.lexeme = s.lexeme
    where s.df is distinct from a.df
    order by 1;
end
$$;

comment on function memex.check_term_stats(text, text) is
    'Lexemes whose stored document frequency differs from a recount (none: the statistics are true).';
