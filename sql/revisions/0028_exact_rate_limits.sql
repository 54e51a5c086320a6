-- Revision 0028, frozen from 0028_exact_rate_limits.py.
-- Exact rate limits: memex.rate_limits keeps, per key, the calls it admitted in the last
-- window (when, and how many items each) instead of two fixed-window counters.
--
-- The sliding-window counter (the current window's count plus the previous window's count
-- weighted by its overlap) is an estimate: it admitted 118 searches in 20 s at 100 a minute,
-- and a burst at a window's end followed by one at the next window's start approached twice
-- the limit. With the admitted calls of the last window kept, memex.rate_limit_hit admits a
-- call only when the calls admitted in the window that ends now, plus this one, hold at most
-- the limit: then every window of that length, wherever it starts, holds at most the limit.
-- A key's row holds at most `limit` entries (each admitted call counts at least one item).
--
-- The counters' contents are dropped (at most a minute of history per key).
--
-- Revision ID: 0028
-- Revises: 0027
-- Create Date: 2026-12-06

delete from memex.rate_limits;

alter table memex.rate_limits
            drop column window_start,
            drop column current_count,
            drop column previous_count,
            add column admitted_at double precision[] not null default '{}',
            add column admitted_items integer[] not null default '{}';

comment on table memex.rate_limits is 'Calls admitted per rate-limit key in its last window (epoch seconds, items), read and written by memex.rate_limit_hit.';
