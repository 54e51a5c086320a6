"""API keys, SQL roles bound to a tenant, an audit log, and the roles row-level security
is keyed on.

- Roles (cluster-wide, created once, kept on downgrade while other databases use them):
  `memex_app`, the non-superuser role the service switches to on every connection (its
  caller is set per transaction by memex._enter from an API key); `memex_tenant`, the
  group of login roles that direct SQL callers use, each bound to one tenant by a row of
  memex.sql_roles. The migrating role is made a member of memex_app so that it can
  `set role memex_app`.
- memex.api_keys: hashed API keys (salted sha256 of a 244-bit random secret; the token
  is shown once), scoped to an agent (null: every agent) and optionally a set of users,
  with access read | write | admin, expiry, revocation and last use.
- memex.sql_roles: login role -> (agent_id, user_ids, access) for direct SQL callers.
- memex.audit_log: who did what when (key creation and revocation, erasure, imports...).
- memories.actor: the key (or role) that last wrote the memory.

Row-level security itself (enable, force, policies) and the grants live in sql/ (re-applied
on every migrate) so that every later table is one line there.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0008_keys_and_rls.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    for table in ("memories", "tenants"):
        op.execute(
            f"""
            do $$
            declare p record;
            begin
                for p in select policyname from pg_policies
                         where schemaname = 'memex' and tablename = '{table}' loop
                    execute format('drop policy %I on memex.{table}', p.policyname);
                end loop;
            end
            $$
            """
        )
        op.execute(f"alter table memex.{table} no force row level security")
        op.execute(f"alter table memex.{table} disable row level security")
    op.execute("alter table memex.memories drop column actor")
    op.execute("drop table memex.audit_log, memex.sql_roles, memex.api_keys")
    # Roles are cluster-wide: other databases of this cluster may still use them.
    op.execute(
        """
        do $$
        begin
            execute 'revoke all on schema memex from memex_app, memex_tenant';
            execute 'revoke all on all tables in schema memex from memex_app, memex_tenant';
            execute 'revoke all on all functions in schema memex from memex_app, memex_tenant';
            begin
                drop role memex_tenant;
                drop role memex_app;
            exception when dependent_objects_still_exist or object_in_use then
                null;
            end;
        end
        $$
        """
    )
