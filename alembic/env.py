"""Alembic environment: always runs on the connection memexdb.migrations hands over.

memexdb.migrations.migrate() takes the advisory lock, opens the single transaction and
passes its connection in `config.attributes["connection"]`; running alembic on its own
would skip the lock and the sql/ functions, so it is refused.
"""

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `memexdb migrate` (or memexdb.migrate(dsn))")

context.configure(
    connection=connection,
    version_table="alembic_version",
    version_table_schema="memex",
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
