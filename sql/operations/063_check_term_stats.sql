-- privileges: service
-- memex.check_term_stats: the tenant's BM25 statistics that differ from a recount over
-- its stored memories; no rows when they are true. One row per wrong statistic:
-- ('df', lexeme, stored, actual) for a lexeme's document frequency (memex.term_stats),
-- ('memory_count', null, ...) and ('length_sum', null, ...) for the tenant's totals
-- (memex.tenants; a tenant without a row has stored 0). All are kept by triggers on
-- memex.memories. An operator's check (and the tests'): the recount reads every memory
-- of the tenant.
create or replace function memex.check_term_stats(p_agent_id text, p_user_id text)
returns table (statistic text, lexeme text, stored bigint, actual bigint)
language plpgsql stable set search_path = pg_catalog, public, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(null, null, 'admin');  -- an operator call
    return query
    with actual_df as (
        select t.lexeme, count(*) as df
        from memex.memories m cross join lateral unnest(m.tsv) t
        where m.agent_id = p_agent_id and m.user_id = p_user_id
        group by t.lexeme
    ),
    stored_df as (
        select s.lexeme, s.df from memex.term_stats s
        where s.agent_id = p_agent_id and s.user_id = p_user_id
    ),
    actual_totals as (
        select count(*) as memory_count, coalesce(sum(m.tsv_length), 0)::bigint as length_sum
        from memex.memories m
        where m.agent_id = p_agent_id and m.user_id = p_user_id
    ),
    stored_totals as (
        select coalesce(max(t.memory_count), 0)::bigint as memory_count,
               coalesce(max(t.length_sum), 0)::bigint as length_sum
        from memex.tenants t
        where t.agent_id = p_agent_id and t.user_id = p_user_id
    )
    select w.statistic, w.lexeme, w.stored, w.actual
    from (
        select 'df' as statistic, coalesce(s.lexeme, a.lexeme) as lexeme, s.df as stored,
               a.df as actual
        from stored_df s full join actual_df a on a.lexeme = s.lexeme
        where s.df is distinct from a.df
        union all
        select v.statistic, null, v.stored, v.actual
        from stored_totals s cross join actual_totals a
             cross join lateral (values ('memory_count', s.memory_count, a.memory_count),
                                        ('length_sum', s.length_sum, a.length_sum)
                                ) v(statistic, stored, actual)
        where v.stored <> v.actual
    ) w
    order by w.statistic, w.lexeme;
end
$$;

comment on function memex.check_term_stats(text, text) is
    'BM25 statistics of a tenant that differ from a recount: document frequencies, memory count, total length (none: all true).';
