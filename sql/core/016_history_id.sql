-- privileges: service
-- memex._history_id: trigger before insert on the tenant history tables
-- (memex.access_log, file_revisions, consolidation_runs, memory_revisions): the new row's
-- id is the next number of its tenant's history in that table (1, 2, 3...), so that a
-- tenant's ids count its own history and nothing of another tenant's. Access-log entries,
-- file revisions and memory revisions are numbered per (agent, user): every operation that
-- writes them is one user's. Runs are numbered per agent (counter user ''): they are
-- written by the background jobs and restores, a few per tenant and tick, and a run number
-- names a run of the agent (REST's restore takes the number alone, with a key of the
-- agent). The counter is one row of memex.history_ids per agent, user and table, updated
-- here: its row lock is held by the inserting transaction until it ends, so two writers of
-- one user get consecutive numbers, one after the other, and writers of different users
-- (of one agent or not) never wait for each other here. A rolled-back insert gives its
-- number back. Any id the insert names is replaced, but for memory revisions: the trigger
-- numbers only those inserted without an id, because memex._memory_revisions_stored
-- numbers the revisions 1 of a whole insert statement itself, from one update of the same
-- counter per user, and memex._memory_revision takes the next number in the statement
-- that inserts its revision (only the SQL layer's security definer functions write that
-- table).
-- A security definer (owned by memex_owner): no caller reads or writes memex.history_ids.
create or replace function memex._history_id()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    insert into memex.history_ids as h (agent_id, user_id, kind, last_id)
    values (new.agent_id,
            case when tg_table_name = 'consolidation_runs' then '' else new.user_id end,
            tg_table_name, 1)
    on conflict (agent_id, user_id, kind) do update set last_id = h.last_id + 1
    returning h.last_id into new.id;
    return new;
end
$$;

comment on function memex._history_id() is
    'Trigger: number a history row within its tenant''s history (memex.history_ids).';

create or replace trigger access_log_history_id
    before insert on memex.access_log
    for each row execute function memex._history_id();
create or replace trigger file_revisions_history_id
    before insert on memex.file_revisions
    for each row execute function memex._history_id();
create or replace trigger consolidation_runs_history_id
    before insert on memex.consolidation_runs
    for each row execute function memex._history_id();
create or replace trigger memory_revisions_history_id
    before insert on memex.memory_revisions
    for each row when (new.id is null) execute function memex._history_id();
