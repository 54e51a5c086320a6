-- privileges: service
-- memex._lexemes_alike: whether two texts are near-duplicates by their english lexeme sets
-- (tsvector_to_array(to_tsvector('english', text)): distinct lexemes, stop words out) of
-- p_a and p_b lexemes, p_shared of them in both: each has at least 2 lexemes and they
-- share at least 80% of their union (Jaccard >= 0.8). The one rule that condensing
-- (memex._extractive_summary) and dreaming (memex._dream_clean) merge near-duplicates by;
-- both keep the later wording, the user's latest word.
create or replace function memex._lexemes_alike(p_shared bigint, p_a integer, p_b integer)
returns boolean
language sql immutable set search_path = pg_catalog, pg_temp
as $$
    select p_a >= 2 and p_b >= 2 and p_shared >= 0.8 * (p_a + p_b - p_shared)
$$;

comment on function memex._lexemes_alike(bigint, integer, integer) is
    'Near-duplicates by english lexemes (Jaccard >= 0.8, 2 lexemes or more each).';
