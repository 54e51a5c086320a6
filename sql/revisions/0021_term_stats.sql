-- Revision 0021, frozen from 0021_term_stats.py.
-- Per-tenant term statistics for BM25: memex.term_stats (issue 26).
--
-- One row per (tenant, lexeme): how many of the tenant's stored memories hold the lexeme
-- (df), the population memex.tenants.memory_count counts (archived and not yet deleted
-- expired memories included). The ANN path reads a query term's document frequency with one
-- primary-key probe instead of counting through the GIN index. Kept by triggers on
-- memex.memories (sql/memories/010_term_stats.sql); memex.check_term_stats recomputes and
-- compares. Backfilled here from the stored memories.
--
-- Revision ID: 0021
-- Revises: 0020
-- Create Date: 2026-12-05

create table memex.term_stats (
            agent_id text not null,
            user_id  text not null,
            lexeme   text not null,
            df       bigint not null check (df > 0),
            primary key (agent_id, user_id, lexeme)
        );

insert into memex.term_stats (agent_id, user_id, lexeme, df)
        select m.agent_id, m.user_id, t.lexeme, count(*)
        from memex.memories m cross join lateral unnest(m.tsv) t
        group by 1, 2, 3;
