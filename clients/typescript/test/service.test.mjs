// Against a live `memexdb serve` (tests/test_typescript_client.py starts it): MEMEX_URL,
// and MEMEX_API_KEY, an admin key of that service (which then refuses calls without one).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import {
  BusyError,
  ConflictError,
  InvalidArgumentError,
  MemexClient,
  MemexError,
  NotFoundError,
  OPERATIONS,
  UnauthenticatedError,
} from "../dist/index.js";

const baseUrl = process.env.MEMEX_URL;
const apiKey = process.env.MEMEX_API_KEY;
const live = { skip: baseUrl ? false : "MEMEX_URL is not set (run by tests/test_typescript_client.py)" };
const client = new MemexClient({ baseUrl: baseUrl ?? "http://127.0.0.1:9", apiKey, timeoutMs: 60_000 });
const who = () => ({ agent_id: `ts-${randomUUID().slice(0, 8)}`, user_id: "alice" });

test("every REST operation of the table is a method", () => {
  for (const [name, spec] of Object.entries(OPERATIONS)) {
    assert.equal(typeof client[name], "function", name);
    if (spec.paging) assert.equal(typeof client[`iter${name[0].toUpperCase()}${name.slice(1)}`], "function");
  }
  assert.ok(Object.keys(OPERATIONS).length >= 34);
  // the streamed endpoints, written by hand (GET /v1/export, POST /v1/import)
  assert.equal(typeof client.export, "function");
  assert.equal(typeof client.importMemories, "function");
});

test("health", live, async () => {
  const health = await client.health();
  assert.equal(health.status, "ok");
});

test("store, search, get, update, forget", live, async () => {
  const tenant = who();
  const dark = await client.store({ ...tenant, content: "Alice prefers dark mode in every editor", memory_type: "semantic" });
  await client.store({ ...tenant, content: "Alice flew to Berlin on Monday", memory_type: "episodic" });
  assert.equal(dark.content, "Alice prefers dark mode in every editor");
  const found = await client.search({ ...tenant, query: "which theme does Alice like?", top_k: 2 });
  assert.equal(found.results[0].id, dark.id);
  assert.ok(found.results[0].score >= found.results[1].score);
  assert.equal((await client.count(tenant)).count, 2);

  const got = await client.get({ ...tenant, memory_id: dark.id });
  assert.equal(got.id, dark.id);
  const changed = await client.update({ ...tenant, memory_id: dark.id, importance: 2, metadata: { source: "ts" } });
  assert.equal(changed.importance, 2);
  assert.deepEqual(changed.metadata, { source: "ts" });
  assert.equal(await client.forget({ ...tenant, memory_id: dark.id }), undefined);
  await assert.rejects(client.get({ ...tenant, memory_id: dark.id }), NotFoundError);
  assert.equal((await client.count(tenant)).count, 1);
});

test("listing iterates across pages", live, async () => {
  const tenant = who();
  const batch = await client.storeMany({
    memories: Array.from({ length: 7 }, (_, i) => ({ ...tenant, content: `fact number ${i}` })),
  });
  assert.equal(batch.memories.length, 7);
  const pages = [];
  for await (const page of client.pages("listMemories", { ...tenant, limit: 3 })) pages.push(page.memories.length);
  assert.deepEqual(pages, [3, 3, 1]);
  const seen = [];
  for await (const memory of client.iterListMemories({ ...tenant, limit: 3 })) seen.push(memory.content);
  assert.equal(seen.length, 7);
  assert.deepEqual(new Set(seen), new Set(Array.from({ length: 7 }, (_, i) => `fact number ${i}`)));
});

test("files: write, read, patch, revisions, diff, restore", live, async () => {
  const tenant = who();
  const path = "user/todo.md";
  const first = await client.writeFile({ ...tenant, path, content: "# Todo\n\n- buy milk\n" });
  assert.equal(first.revision, 1);
  const patched = await client.patchFile({ ...tenant, path, old_text: "buy milk", new_text: "buy oat milk" });
  assert.equal(patched.revision, 2);
  await client.patchFile({ ...tenant, path, append: "- call Bob" });
  const read = await client.readFile({ ...tenant, path });
  assert.match(read.content, /buy oat milk/);
  assert.match(read.content, /call Bob/);
  await assert.rejects(client.writeFile({ ...tenant, path, content: "stale", base_revision: 1 }), ConflictError);

  const revisions = [];
  for await (const r of client.iterListRevisions({ ...tenant, path, limit: 2 })) revisions.push(r.revision);
  assert.deepEqual(revisions, [3, 2, 1]);
  const diff = await client.diffRevisions({ ...tenant, path, from_revision: 1, to_revision: 2 });
  assert.match(diff.diff, /-- buy milk/);
  assert.match(diff.diff, /\+- buy oat milk/);
  const old = await client.getRevision({ ...tenant, path, revision: 1 });
  assert.equal(old.content, "# Todo\n\n- buy milk\n");
  const restored = await client.restoreRevision({ ...tenant, path, revision: 1 });
  assert.equal(restored.content, "# Todo\n\n- buy milk\n");
  assert.equal(restored.revision, 4);

  const files = [];
  for await (const f of client.iterListFiles(tenant)) files.push(f.path);
  assert.ok(files.includes(path), files.join());
  const log = [];
  for await (const event of client.iterAccessLog({ ...tenant, limit: 2 })) log.push(event);
  assert.ok(log.length >= 1);
});

test("memorize without an LLM falls back; memory search finds it", live, async () => {
  const tenant = who();
  const kept = await client.memorize({ ...tenant, text: "Bob's birthday is on the 3rd of March" });
  assert.equal(kept.mode, "fallback");
  assert.ok(kept.applied.length >= 1);
  const found = await client.searchPassages({ ...tenant, query: "when is Bob's birthday?" });
  assert.ok(found.passages.length >= 1);
  assert.match(JSON.stringify(found.passages), /3rd of March/);
});

test("typed errors: 422 with fields, 404, 401", live, async () => {
  const tenant = who();
  const bad = await client.search({ ...tenant, query: "x", top_k: 1000 }).catch((e) => e);
  assert.ok(bad instanceof InvalidArgumentError, String(bad));
  assert.ok(bad instanceof MemexError);
  assert.equal(bad.status, 422);
  assert.equal(bad.code, "invalid_argument");
  assert.equal(bad.fields[0].field, "top_k");
  assert.match(bad.fields[0].message, /less than or equal to 100/);

  const missing = await client.get({ ...tenant, memory_id: randomUUID() }).catch((e) => e);
  assert.ok(missing instanceof NotFoundError, String(missing));
  assert.equal(missing.status, 404);

  const anonymous = new MemexClient({ baseUrl });
  const refused = await anonymous.count(tenant).catch((e) => e);
  assert.ok(refused instanceof UnauthenticatedError, String(refused));
  assert.equal(refused.status, 401);
  const wrong = new MemexClient({ baseUrl, apiKey: "mxk_notakey_notakey" });
  await assert.rejects(wrong.count(tenant), UnauthenticatedError);
});

test("admin: keys", live, async () => {
  const created = await client.createKey({ access: "read", agent_id: "ts-reader", name: "ts test" });
  assert.match(created.token, /^mxk_/);
  const reader = new MemexClient({ baseUrl, apiKey: created.token });
  assert.equal((await reader.count({ agent_id: "ts-reader", user_id: "alice" })).count, 0);
  const keys = await client.listKeys();
  assert.ok(keys.keys.some((k) => k.prefix === created.prefix));
  await client.revokeKey({ key: created.prefix });
  await assert.rejects(reader.count({ agent_id: "ts-reader", user_id: "alice" }), UnauthenticatedError);
  const events = [];
  for await (const event of client.iterAuditEvents({ limit: 1 })) {
    events.push(event.action);
    if (events.length === 2) break;
  }
  assert.deepEqual(events, ["key.revoke", "key.create"]);
});

test("export streams NDJSON records; importMemories brings them back after an erase", live, async () => {
  const tenant = who();
  await client.storeMany({
    memories: Array.from({ length: 5 }, (_, i) => ({ ...tenant, content: `exported ${i}` })),
  });
  await client.writeFile({ ...tenant, path: "user/notes.md", content: "one\n" });
  await client.writeFile({ ...tenant, path: "user/notes.md", content: "one\ntwo\n" });
  const records = [];
  for await (const record of client.export({ agent_id: tenant.agent_id, embeddings: true })) records.push(record);
  const [header, ...rest] = records;
  assert.equal(header.record, "header");
  assert.equal(header.version, 3);
  const memories = rest.filter((r) => r.record === "memory");
  assert.equal(memories.length, 6); // the file is a memory with a path
  const texts = Array.from({ length: 5 }, (_, i) => `exported ${i}`);
  assert.deepEqual(new Set(memories.filter((r) => !r.path).map((r) => r.content)), new Set(texts));
  assert.ok(memories.every((r) => r.user_id === "alice" && r.id));
  assert.equal(rest.filter((r) => r.record === "file_revision").length, 2);
  // each memory's history (a store each; the file keeps its own revisions), unless asked not to
  assert.equal(rest.filter((r) => r.record === "memory_revision").length, 5);
  const bare = [];
  for await (const record of client.export({ agent_id: tenant.agent_id, memory_revisions: false })) bare.push(record);
  assert.equal(bare.filter((r) => r.record === "memory_revision").length, 0);
  assert.equal(bare.filter((r) => r.record === "memory").length, 6);
  const none = [];
  for await (const record of client.export({ agent_id: "ts-nobody" })) none.push(record);
  assert.deepEqual(none.map((r) => r.record), ["header"]);

  await client.eraseUser({ ...tenant, confirm: tenant.user_id });
  const imported = await client.importMemories(records);
  assert.equal(imported.skipped, 0);
  assert.equal(imported.reembedded, 0);
  assert.deepEqual(imported.kinds.file_revision, { imported: 2, skipped: 0 });
  assert.deepEqual(imported.kinds.memory_revision, { imported: 5, skipped: 0 });
  const file = await client.readFile({ ...tenant, path: "user/notes.md" });
  assert.equal(file.content, "one\ntwo\n");
  assert.equal(file.revision, 2);
  // again, from the text of an export file: everything is there already
  const text = records.map((r) => JSON.stringify(r)).join("\n") + "\n";
  const again = await client.importMemories(text);
  assert.equal(again.imported, 0);
  assert.equal(again.skipped, records.length - 1);
  const bad = await client.importMemories('{"record": "diary"}\n').catch((e) => e);
  assert.ok(bad instanceof InvalidArgumentError, String(bad));
  assert.match(bad.message, /line 1 record/);
});

test("admin: dream config, users and runs; embeddings; smart read", live, async () => {
  const tenant = who();
  await client.writeFile({ ...tenant, path: "user/profile.md", content: "# Profile\n\nAlice lives in Lisbon.\n" });
  const read = await client.smartRead({ ...tenant, query: "where does Alice live?" });
  assert.match(JSON.stringify(read), /Lisbon/);

  const embedded = await client.embedTexts({ input: ["hello", "world"] });
  assert.equal(embedded.data.length, 2);
  assert.equal(embedded.data[1].index, 1);
  assert.ok(embedded.data[0].embedding.length > 100);
  // another model than the service's: OpenAI's 404 model_not_found, a NotFoundError here
  await assert.rejects(client.embedTexts({ input: "hello", model: "text-embedding-3-small" }), (err) => {
    assert.ok(err instanceof NotFoundError, String(err));
    assert.equal(err.code, "model_not_found");
    return true;
  });

  const config = await client.dreamConfig();
  assert.equal(typeof config, "object");
  await client.setDreamPaused({ ...tenant, paused: true });
  const users = [];
  for await (const user of client.iterDreamUsers({ agent_id: tenant.agent_id, limit: 1 })) users.push(user);
  assert.ok(users.some((u) => u.user_id === tenant.user_id && u.paused), JSON.stringify(users));
  const runs = [];
  for await (const run of client.iterConsolidationRuns({ ...tenant, limit: 1 })) runs.push(run);
  assert.deepEqual(runs, []);
});

test("2,000 concurrent calls are all answered: results or a typed BusyError, none lost to a client-side timeout", live, async () => {
  // as the Python client's test (tests/test_langgraph_store.py): searches (each embeds its
  // query on the service) all at once through 8 slots, an attempt's timeout of 2 s that
  // most calls wait longer than for a slot, and no retries to hide a call that gave up
  const tenant = who();
  const loaded = new MemexClient({ baseUrl, apiKey, timeoutMs: 2_000, retries: 0, maxConcurrent: 8 });
  await loaded.store({ ...tenant, content: "one memory to find" });
  const started = Date.now();
  const answers = await Promise.allSettled(
    Array.from({ length: 2000 }, (_, i) => loaded.search({ ...tenant, query: `memory ${i}` })),
  );
  const took = (Date.now() - started) / 1000;
  const lost = answers.filter((a) => a.status === "rejected" && !(a.reason instanceof BusyError));
  assert.equal(lost.length, 0, `${lost.length} calls lost, e.g. ${lost[0]?.reason}`);
  const found = answers.filter((a) => a.status === "fulfilled" && a.value.results.length === 1);
  assert.ok(found.length >= 1900, `${found.length} of 2000 found the memory`);
  console.log(`2000 concurrent searches over HTTP: ${took.toFixed(1)} s, ${2000 - found.length} busy`);
});

test("maxConcurrent must be a positive integer", () => {
  for (const bad of [0, -1, 1.5]) {
    assert.throws(() => new MemexClient({ baseUrl: "http://127.0.0.1:9", maxConcurrent: bad }), TypeError);
  }
});
