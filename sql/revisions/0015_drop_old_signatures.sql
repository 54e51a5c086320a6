-- Revision 0015, frozen from 0015_drop_old_signatures.py.
-- Old signatures dropped once, here: until now the re-applied SQL layer (`sql/`) dropped
-- the overloads its functions had before they gained a parameter, so that layer carried its
-- own history. A database that an older memexdb migrated still holds them; `create or
-- replace` with new parameters adds an overload beside the old one instead of replacing it.
--
-- From this revision on the SQL layer only creates: a function whose parameters or result
-- type change gets a new revision that drops the old signature (the next memexdb migrate
-- then re-applies the layer and creates the new one, in the same transaction).
-- `tests/test_catalog.py` checks that a database upgraded step by step ends with exactly the
-- functions of a fresh one.
--
-- Revision ID: 0015
-- Revises: 0014
-- Create Date: 2026-12-05

drop function if exists memex._live_memories(text, text, memex.memory_type[], text, timestamptz);

drop function if exists memex._live_memories(text, text, memex.memory_type[], text, timestamptz, jsonb);

drop function if exists memex.rate_limit_hit(text, integer, double precision, timestamptz);

drop function if exists memex._enforce_rate_limit(text, text);

drop function if exists memex.import_memories(uuid[], text[], text[], text[], vector[], text, memex.memory_type[], double precision[], jsonb[], timestamptz[], timestamptz[], timestamptz[]);

drop function if exists memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text, timestamptz);

drop function if exists memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text, timestamptz, jsonb);

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer);

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer, integer);

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer, integer, jsonb);

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer, integer, jsonb, boolean);

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer, integer, jsonb, boolean, integer, double precision, double precision);

drop function if exists memex.search(text, text, vector, integer, double precision, double precision, memex.memory_type[], text, text, text, timestamptz);

drop function if exists memex.search(text, text, vector, integer, double precision, double precision, memex.memory_type[], text, text, text, timestamptz, double precision);

drop function if exists memex.search(text, text, vector, integer, double precision, double precision, memex.memory_type[], text, text, text, timestamptz, double precision, jsonb);

drop function if exists memex.count(text, text, memex.memory_type);

drop function if exists memex.count(text, text, memex.memory_type, text, timestamptz);

drop function if exists memex.list_memories(text, text, integer, timestamptz, uuid, memex.memory_type, timestamptz, timestamptz, jsonb, timestamptz);

drop function if exists memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer, timestamptz);

drop function if exists memex.dream_tenant(text, text, boolean, boolean, timestamptz, integer);

drop function if exists memex.dream_due(boolean, timestamptz);

drop function if exists memex._dream_files(text, text, timestamptz, boolean);

do $$
        begin
            if exists (select from pg_proc p
                       where p.oid = to_regprocedure('memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text, timestamptz, jsonb, boolean)')
                         and p.prorettype = 'memex._candidate'::regtype) then
                drop function memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text, timestamptz, jsonb, boolean);
            end if;
        end
        $$;
