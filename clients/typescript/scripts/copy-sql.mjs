// sql/: a copy of the repository's sql/ (the frozen revisions, the SQL layer and the
// manifest that orders them), which migrate() runs (src/direct/migrate.ts). Run by every
// build; tests/test_typescript_client.py checks that the packed copy equals the repository's.
import { cpSync, rmSync } from "node:fs";

const from = new URL("../../../sql/", import.meta.url);
const to = new URL("../sql/", import.meta.url);
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (source) => !source.endsWith("~") });
