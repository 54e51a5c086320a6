-- Revision 0014, frozen from 0014_rate_limit_reservations.py.
-- Rate-limit reservations: memex.rate_limit_reservations holds the budget a caller paid
-- for before embedding (memex.reserve_rate_limit), so that the store or search it then sends
-- spends the reservation instead of being counted a second time.
--
-- A reservation is one row per agent of the batch: the operation, the caller's counter that
-- paid for it (`key:<id>`, `role:<name>` or the actor), the items left, and an expiry
-- (memex.maintenance() prunes expired rows). Only security definer functions read or write
-- it: no role is granted anything on it (sql/999_grants.sql).
--
-- Revision ID: 0014
-- Revises: 0013
-- Create Date: 2026-12-05

create table memex.rate_limit_reservations (
            agent_id   text not null,
            id         uuid not null,
            operation  text not null,
            payer      text not null,
            items      integer not null check (items >= 0),
            expires_at timestamptz not null,
            primary key (agent_id, id)
        );

create index rate_limit_reservations_expires_idx on memex.rate_limit_reservations (expires_at);
