-- privileges: service
-- memex._term_stats: keep memex.term_stats (the tenant's document frequency of each
-- lexeme, over the memories memex.tenants.memory_count counts) in step with
-- memex.memories, so a search reads a query term's frequency in one index probe instead of
-- counting the tenant's memories that hold it (bench/RESULTS.md, "Term statistics").
-- Statement-level with transition tables like memex._tenant_counts: a batch is one
-- upsert of its distinct lexemes, taken in a fixed order so that concurrent writers of
-- one tenant do not deadlock (they already queue on the tenant's memex.tenants row).
-- Archiving and restoring leave the statistics alone (archived memories are counted, as
-- in memory_count); expiry deletes, consolidation inserts its summary.
-- A security definer: the writer needs no write grant on memex.term_stats, so a tenant's
-- SQL role cannot skew the statistics its ranking reads. Owned by memex_trigger_owner
-- (BYPASSRLS, revision 0040), like memex._tenant_counts: no second check of the tenant
-- policies for rows the write into memex.memories checked.
create or replace function memex._term_stats()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    if tg_op = 'INSERT' then
        insert into memex.term_stats as s (agent_id, user_id, lexeme, df)
        select n.agent_id, n.user_id, t.lexeme, count(*)
        from new_rows n cross join lateral unnest(n.tsv) t
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (agent_id, user_id, lexeme) do update set df = s.df + excluded.df;
    else
        with gone as (
            select o.agent_id, o.user_id, t.lexeme, count(*) as n
            from old_rows o cross join lateral unnest(o.tsv) t
            group by 1, 2, 3
        ),
        lowered as (
            update memex.term_stats s set df = s.df - g.n
            from (select * from gone order by 1, 2, 3) g
            where s.agent_id = g.agent_id and s.user_id = g.user_id and s.lexeme = g.lexeme
              and s.df > g.n
            returning s.lexeme
        )
        delete from memex.term_stats s
        using gone g
        where s.agent_id = g.agent_id and s.user_id = g.user_id and s.lexeme = g.lexeme
          and s.df <= g.n;
    end if;
    return null;
end
$$;

comment on function memex._term_stats() is
    'Trigger: maintain memex.term_stats on insert/delete of memories.';

create or replace trigger memories_terms_insert
    after insert on memex.memories
    referencing new table as new_rows
    for each statement execute function memex._term_stats();

create or replace trigger memories_terms_delete
    after delete on memex.memories
    referencing old table as old_rows
    for each statement execute function memex._term_stats();
