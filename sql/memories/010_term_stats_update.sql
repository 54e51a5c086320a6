-- privileges: service
-- memex._term_stats_update: the BM25 statistics after a memory's content changed
-- (memex.update_memory, a file's save): its old lexemes counted out of memex.term_stats,
-- its new ones in, and the change of its length (tsv_length) added to its tenant's
-- memex.tenants.length_sum.
-- Row-level (Postgres allows no transition tables on a column-list trigger); content
-- changes one memory at a time, and an unchanged tsvector costs one comparison.
-- A security definer, like memex._term_stats (no write grant on memex.term_stats or
-- memex.tenants), owned like it by memex_trigger_owner (BYPASSRLS, revision 0040) when
-- that role exists: it writes only the rows of the tenant of the row that fired it (old
-- and new: the same tenant, or both checked), which the update of memex.memories checked
-- under the tenant policies before this after-trigger runs, so they are not checked
-- again.
create or replace function memex._term_stats_update()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    if old.tsv_length is distinct from new.tsv_length then
        -- The tenant's row before any term_stats row, as stores and deletes take them
        -- (memex._tenant_counts fires before memex._term_stats): one lock order, so a
        -- content change and a store into the same tenant cannot deadlock over them. A
        -- change that keeps the length leaves the tenant's row alone (a file rewrite
        -- does not queue behind the tenant's other open writes).
        update memex.tenants t
        set length_sum = greatest(t.length_sum + new.tsv_length - old.tsv_length, 0)
        where t.agent_id = new.agent_id and t.user_id = new.user_id;
    end if;
    if old.tsv is distinct from new.tsv then
        -- lexemes only the new content holds come in, those only the old one held go out
        insert into memex.term_stats as s (agent_id, user_id, lexeme, df)
        select new.agent_id, new.user_id, t.lexeme, 1
        from (select unnest(tsvector_to_array(new.tsv))
              except select unnest(tsvector_to_array(old.tsv))) t(lexeme)
        order by 3
        on conflict (agent_id, user_id, lexeme) do update set df = s.df + 1;
        with gone as (
            select unnest(tsvector_to_array(old.tsv))
            except select unnest(tsvector_to_array(new.tsv))
        ),
        lowered as (
            update memex.term_stats s set df = s.df - 1
            from gone g(lexeme)
            where s.agent_id = old.agent_id and s.user_id = old.user_id
              and s.lexeme = g.lexeme and s.df > 1
        )
        delete from memex.term_stats s
        using gone g(lexeme)
        where s.agent_id = old.agent_id and s.user_id = old.user_id
          and s.lexeme = g.lexeme and s.df <= 1;
    end if;
    return null;
end
$$;

comment on function memex._term_stats_update() is
    'Trigger: maintain memex.term_stats and the tenant''s length_sum when a memory''s'
    ' content changes.';

create or replace trigger memories_terms_update
    after update of content on memex.memories
    for each row execute function memex._term_stats_update();
