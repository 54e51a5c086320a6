// Retries, timeouts and error classes against a tiny fake server (node:http): no service needed.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { MemexClient, RateLimitedError, DatabaseUnavailableError, TimeoutError, ConnectionError, BusyError, InvalidArgumentError } from "../dist/index.js";

/** A server answering each request with the next of `replies` ({status, body, headers, delayMs}). */
async function fake(replies) {
  const seen = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, body, at: Date.now(), auth: req.headers.authorization });
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)];
      setTimeout(() => {
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        res.end(JSON.stringify(reply.body ?? {}));
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${server.address().port}`;
  return { baseUrl, seen, close: () => new Promise((resolve) => server.close(resolve)) };
}

const who = { agent_id: "a", user_id: "u" };
const ok = { status: 200, body: { count: 3 } };
const limited = (seconds) => ({
  status: 429,
  headers: { "retry-after": String(seconds) },
  body: { error: { code: "rate_limited", message: "slow down", fields: [], retry_after_seconds: seconds } },
});
const unavailable = { status: 503, body: { error: { code: "database_unavailable", message: "database is unavailable, retry later", fields: [] } } };

test("a read is retried on 429, honouring Retry-After, then succeeds", async () => {
  const server = await fake([limited(1), ok]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl, apiKey: "mxk_x" });
    const started = Date.now();
    assert.deepEqual(await client.count(who), { count: 3 });
    assert.equal(server.seen.length, 2);
    assert.ok(server.seen[1].at - server.seen[0].at >= 950, "waited the Retry-After second");
    assert.ok(Date.now() - started < 5000);
    assert.equal(server.seen[0].auth, "Bearer mxk_x");
    assert.equal(server.seen[0].url, "/v1/memories/count?agent_id=a&user_id=u");
  } finally {
    await server.close();
  }
});

test("a read is retried on 503 with backoff, bounded in count", async () => {
  const server = await fake([unavailable]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl, retries: 2, backoffMs: 10 });
    const error = await client.search({ ...who, query: "x" }).catch((e) => e);
    assert.ok(error instanceof DatabaseUnavailableError, String(error));
    assert.equal(error.status, 503);
    assert.equal(server.seen.length, 3); // one try + two retries
  } finally {
    await server.close();
  }
});

test("retries are bounded in time: a Retry-After beyond the budget ends them", async () => {
  const server = await fake([limited(120), ok]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl, maxRetryWaitMs: 2000 });
    const started = Date.now();
    const error = await client.count(who).catch((e) => e);
    assert.ok(error instanceof RateLimitedError);
    assert.equal(error.retryAfter, 120);
    assert.equal(server.seen.length, 1);
    assert.ok(Date.now() - started < 1000);
  } finally {
    await server.close();
  }
});

test("a store is retried with the same fresh id; another write is never retried", async () => {
  const server = await fake([limited(0), { status: 201, body: { id: "x" } }]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl });
    await client.store({ ...who, content: "once" });
    assert.equal(server.seen.length, 2);
    const [first, second] = server.seen.map((s) => JSON.parse(s.body));
    assert.match(first.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(second, first); // the same id: the service stores it once
    assert.deepEqual({ ...first, id: undefined }, { ...who, content: "once", id: undefined });
    const busy = await fake([{ status: 503, body: { error: { code: "busy", message: "busy" } } }]);
    try {
      const writer = new MemexClient({ baseUrl: busy.baseUrl });
      await assert.rejects(writer.writeFile({ ...who, path: "a.md", content: "x" }), BusyError);
      assert.equal(busy.seen.length, 1);
    } finally {
      await busy.close();
    }
  } finally {
    await server.close();
  }
});

test("a call over its timeout is aborted", async () => {
  const server = await fake([{ ...ok, delayMs: 2000 }]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl, timeoutMs: 200, retries: 0 });
    const started = Date.now();
    const error = await client.count(who).catch((e) => e);
    assert.ok(error instanceof TimeoutError, String(error));
    assert.ok(Date.now() - started < 1500);
  } finally {
    await server.close();
  }
});

test("no service: a ConnectionError after the retries", async () => {
  const server = await fake([ok]);
  const baseUrl = server.baseUrl;
  await server.close();
  const client = new MemexClient({ baseUrl, retries: 1, backoffMs: 10 });
  const error = await client.count(who).catch((e) => e);
  assert.ok(error instanceof ConnectionError, String(error));
  assert.equal(error.status, 0);
  // the message names the service's URL and why no answer came
  assert.ok(error.message.includes(`${baseUrl}/v1/memories/count`), error.message);
  assert.ok(error.message.includes("ECONNREFUSED"), error.message);
});

test("export yields NDJSON lines split across chunks, and stops when aborted", async () => {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    res.write('{"id": "1", "content": "one"}\n{"id": "2", "con');
    setTimeout(() => res.write('tent": "two"}\n'), 20);
    setTimeout(() => res.write('{"id": "3", "content": "three"}'), 40);
    setTimeout(() => res.end(), 60);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const client = new MemexClient({ baseUrl: `http://127.0.0.1:${server.address().port}` });
    const records = [];
    for await (const record of client.export({ agent_id: "a" })) records.push(record.content);
    assert.deepEqual(records, ["one", "two", "three"]);
    const controller = new AbortController();
    const seen = [];
    await assert.rejects(async () => {
      for await (const record of client.export({ agent_id: "a" }, { signal: controller.signal })) {
        seen.push(record.content);
        controller.abort();
      }
    });
    assert.ok(seen.length < 3, seen.join());
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("an empty or malformed id is refused before anything is sent (issue 33)", async () => {
  // `get({memory_id: ""})` was GET /v1/memories/, redirected to the list: a page typed as
  // a Memory; `forget` with it was DELETE /v1/memories/, redirected to the erase of the user
  const server = await fake([ok]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl });
    const refusals = [
      ["get", () => client.get({ ...who, memory_id: "" }), "memory_id"],
      ["get", () => client.get({ ...who, memory_id: "123" }), "memory_id"],
      ["forget", () => client.forget({ ...who, memory_id: "" }), "memory_id"],
      ["forget", () => client.forget({ ...who }), "memory_id"],
      ["update", () => client.update({ ...who, memory_id: "not-a-uuid", importance: 2 }), "memory_id"],
      ["revokeKey", () => client.revokeKey({ key: "" }), "key"],
      ["readFile", () => client.readFile({ ...who, path: "" }), "path"],
      ["deleteFile", () => client.deleteFile({ ...who, path: "" }), "path"],
      ["eraseUser", () => client.eraseUser({ agent_id: "a", user_id: "", confirm: "" }), "user_id"],
      ["count", () => client.count({ agent_id: "", user_id: "u" }), "agent_id"],
    ];
    for (const [name, call, field] of refusals) {
      const error = await call().then(() => null, (e) => e);
      assert.ok(error instanceof InvalidArgumentError, `${name}: ${String(error)}`);
      assert.equal(error.code, "invalid_argument");
      assert.deepEqual(error.fields.map((f) => f.field), [field], name);
    }
    assert.equal(server.seen.length, 0, JSON.stringify(server.seen));
    // a well-formed id is sent as it is
    await client.get({ ...who, memory_id: "7F0C0B5E-3D3C-4F55-9A53-2B1C8F7D9E01" });
    assert.equal(server.seen.length, 1);
    assert.equal(server.seen[0].url, "/v1/memories/7F0C0B5E-3D3C-4F55-9A53-2B1C8F7D9E01?agent_id=a&user_id=u");
  } finally {
    await server.close();
  }
});
