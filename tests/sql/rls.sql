-- Row-level security and tenant binding: two login roles bound with memex.bind_sql_role
-- connect themselves (a binding follows session_user, so `set role` cannot take one on:
-- this file reconnects with \c). What each sees through memex.*, and what each is
-- refused: every table (a bound role holds no table privilege, so it cannot lock a table
-- or read the planner's estimates of other tenants' rows either). Roles are cluster-wide:
-- the two made here are dropped at the start (a run that stopped half-way) and at the end.
\set VERBOSITY terse
\set SHOW_CONTEXT never
select current_user as operator \gset
set client_min_messages = warning;
drop role if exists memex_regress_alice;
drop role if exists memex_regress_reader;
reset client_min_messages;
create role memex_regress_alice login;
create role memex_regress_reader login;
-- alice may write as user alice of agent rls; reader may read every user of agent rls
select role_name, agent_id, user_ids, access
from memex.bind_sql_role('memex_regress_alice', 'rls', array['alice'], 'write');
select role_name, agent_id, user_ids, access
from memex.bind_sql_role('memex_regress_reader', 'rls', null, 'read');
-- a superuser, a role that bypasses RLS, or memex_app cannot be bound
select memex.bind_sql_role('memex_app', 'rls');
\echo :LAST_ERROR_SQLSTATE
-- the operator (not bound: it sees every tenant) stores one memory per tenant
select agent_id, user_id, content from memex.store('rls', 'alice', 'alice likes tea',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');
select agent_id, user_id, content from memex.store('rls', 'bob', 'bob likes coffee',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');
select agent_id, user_id, content from memex.store('other', 'alice', 'another agent''s alice',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');

\c - memex_regress_alice
select session_user, memex._caller() ->> 'agent' as agent, memex._caller() -> 'users' as users,
       memex._caller() ->> 'access' as access;
-- the tenant API shows its own rows; the tables are not its to read, lock or explain
select agent_id, user_id, content from memex.list_memories('rls', 'alice') order by content;
select agent_id, user_id, content from memex.memories order by content;
\echo :LAST_ERROR_SQLSTATE
select agent_id, user_id from memex.tenants order by 1, 2;
\echo :LAST_ERROR_SQLSTATE
begin;
lock table memex.memories in access share mode;
\echo :LAST_ERROR_SQLSTATE
rollback;
explain select 1 from memex.memories where agent_id = 'other';
\echo :LAST_ERROR_SQLSTATE
-- the API: its own tenant, and nothing else
select content from memex.search('rls', 'alice',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector);
select content from memex.search('rls', 'bob',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector);
\echo :LAST_ERROR_SQLSTATE
select count(*) from memex.count('other', 'alice');
\echo :LAST_ERROR_SQLSTATE
-- a setting cannot widen the binding (memex._caller reads session_user's binding first)
set memex.caller = '{"all": true, "access": "admin", "actor": "forged"}';
select agent_id, user_id, content from memex.list_memories('rls', 'alice') order by content;
select count(*) from memex.count('rls', 'bob');
\echo :LAST_ERROR_SQLSTATE
select memex._caller() ->> 'actor' as actor;
-- nor can it pass for the service, the one session whose memex.caller is taken at its
-- word (memex._caller, inlined in the policies): memex_app is not its role to take
set role memex_app;
\echo :LAST_ERROR_SQLSTATE
select set_config('role', 'memex_app', true);
\echo :LAST_ERROR_SQLSTATE
select content from memex.store('rls', 'bob', 'written by a forged caller',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');
\echo :LAST_ERROR_SQLSTATE
select count(*) from memex.search('other', 'alice',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector);
\echo :LAST_ERROR_SQLSTATE
reset memex.caller;
-- writing another tenant's row is refused, through the API and directly
select content from memex.store('rls', 'bob', 'written by alice',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');
\echo :LAST_ERROR_SQLSTATE
update memex.memories set content = 'changed by alice' where user_id = 'bob';
\echo :LAST_ERROR_SQLSTATE
-- its own write goes through
select user_id, content from memex.store('rls', 'alice', 'alice writes for herself',
    (array[0, 1]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');
-- operator functions and internal tables are not its to use
select memex.maintenance();
\echo :LAST_ERROR_SQLSTATE
select count(*) from memex.api_keys;
\echo :LAST_ERROR_SQLSTATE
select memex.set_setting('rate_limit_store_per_minute', '1000');
\echo :LAST_ERROR_SQLSTATE

\c - memex_regress_reader
-- read access to every user of agent rls: reads both, writes nothing
select user_id, content from memex.search('rls', 'bob',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector);
select agent_id, user_id, content from memex.list_memories('rls', 'bob') order by content;
select content from memex.store('rls', 'bob', 'reader tries to write',
    (array[1, 0]::real[] || array_fill(0::real, array[382]))::public.vector, 'hand-made');
\echo :LAST_ERROR_SQLSTATE
delete from memex.memories where user_id = 'bob';
\echo :LAST_ERROR_SQLSTATE
select memex.count('rls', 'bob');

\c - :operator
-- unbound, a member of nothing: the roles are dropped
select memex.unbind_sql_role('memex_regress_alice'), memex.unbind_sql_role('memex_regress_reader');
drop role memex_regress_alice;
drop role memex_regress_reader;
select count(*) as bound from memex.sql_roles;
