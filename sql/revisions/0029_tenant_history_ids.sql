-- Revision 0029, frozen from 0029_tenant_history_ids.py.
-- History ids that count only the tenant's own history.
--
-- The ids of memex.access_log, file_revisions and consolidation_runs were one
-- database-wide identity each, so the gap between two of a tenant's ids counted what other
-- tenants did in between (issue 34: B's next access-log id jumped 97 -> 105 across A's seven
-- reads). Each id is now a number within its tenant's history: 1, 2, 3... in the order
-- it was written, per (agent, user) for the access log and file revisions (written by
-- one user's operations) and per agent for consolidation runs (written by background jobs
-- and restores, rarely; a run number names a run of the agent, as the REST restore takes
-- it). They come from memex.history_ids (one counter row per agent, user ('' for the
-- per-agent runs) and table, locked by the inserting transaction until it ends, so two
-- writers of one user get consecutive numbers and writers of different users never wait
-- for each other). The SQL layer's memex._history_id trigger fills it on every insert.
--
-- Existing rows are numbered per (agent, user), runs per agent, in their old id order; a
-- consolidation run's restored_by and a restore run's details.run follow. Run numbers
-- written earlier inside memories' metadata (consolidation.run, dream.run) or file
-- revisions' details (dream.run) keep the number the run had then. The identity columns
-- (and their sequences) go; the keys are (agent_id, user_id, id) for the access log and
-- file revisions, (agent_id, id) for runs. memex.export_history takes the user of its
-- cursor (p_after_user_id). The audit log (the operator's, in time order across agents;
-- an agent's admin reads its own agent's entries) keeps its database-wide identity.
--
-- Revision ID: 0029
-- Revises: 0028
-- Create Date: 2026-12-06

create table memex.history_ids (
            agent_id text not null,
            user_id  text not null,
            kind     text not null
                check (kind in ('access_log', 'file_revisions', 'consolidation_runs')),
            last_id  bigint not null check (last_id >= 1),
            primary key (agent_id, user_id, kind),
            check ((kind = 'consolidation_runs') = (user_id = ''))
        );

comment on table memex.history_ids is 'The last history id given per agent, user (empty for consolidation runs, numbered per agent) and table, taken by the memex._history_id trigger.';

create temporary table run_numbers as
        select r.id as old_id, r.agent_id,
               row_number() over (partition by r.agent_id order by r.id) as new_id
        from memex.consolidation_runs r;

update memex.consolidation_runs c set restored_by = n.new_id
        from run_numbers n
        where c.restored_by = n.old_id and n.agent_id = c.agent_id;

update memex.consolidation_runs c
        set details = jsonb_set(c.details, '{run}', to_jsonb(n.new_id))
        from run_numbers n
        where c.kind = 'restore' and jsonb_typeof(c.details -> 'run') = 'number'
          and (c.details ->> 'run')::numeric = n.old_id and n.agent_id = c.agent_id;

drop table run_numbers;

drop function if exists memex.restore_consolidation(bigint);

drop function if exists memex.export_history(text, text, text, bigint, integer);

alter table memex.access_log alter column id drop identity;

alter table memex.access_log drop constraint access_log_pkey;

update memex.access_log t set id = n.new_id
            from (select id,
                         row_number() over (partition by agent_id, user_id order by id) as new_id
                  from memex.access_log) n
            where t.id = n.id;

alter table memex.access_log add primary key (agent_id, user_id, id);

insert into memex.history_ids (agent_id, user_id, kind, last_id)
            select agent_id, user_id, 'access_log', max(id) from memex.access_log group by 1, 2;

alter table memex.file_revisions alter column id drop identity;

alter table memex.file_revisions drop constraint file_revisions_pkey;

update memex.file_revisions t set id = n.new_id
            from (select id,
                         row_number() over (partition by agent_id, user_id order by id) as new_id
                  from memex.file_revisions) n
            where t.id = n.id;

alter table memex.file_revisions add primary key (agent_id, user_id, id);

insert into memex.history_ids (agent_id, user_id, kind, last_id)
            select agent_id, user_id, 'file_revisions', max(id) from memex.file_revisions group by 1, 2;

alter table memex.consolidation_runs alter column id drop identity;

alter table memex.consolidation_runs drop constraint consolidation_runs_pkey;

update memex.consolidation_runs t set id = n.new_id
            from (select id,
                         row_number() over (partition by agent_id order by id) as new_id
                  from memex.consolidation_runs) n
            where t.id = n.id;

alter table memex.consolidation_runs add primary key (agent_id, id);

insert into memex.history_ids (agent_id, user_id, kind, last_id)
            select agent_id, '', 'consolidation_runs', max(id) from memex.consolidation_runs group by 1, 2;
