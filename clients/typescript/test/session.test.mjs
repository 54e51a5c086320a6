// Read-your-writes across service processes (docs/rest.md): the client keeps the latest
// Memex-Write-LSN it was answered and sends it as Memex-Min-LSN. Against a tiny fake
// server (node:http) that answers the headers the service does.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { MemexClient } from "../dist/index.js";

async function fake(replies) {
  const seen = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      seen.push({ url: req.url, minLsn: req.headers["memex-min-lsn"] });
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)];
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${server.address().port}`;
  return { baseUrl, seen, close: () => new Promise((resolve) => server.close(resolve)) };
}

const who = { agent_id: "a", user_id: "u" };
const stored = (lsn) => ({ status: 201, headers: { "memex-write-lsn": lsn }, body: { id: "3fa85f64-5717-4562-b3fc-2c963f66afa6", status: "created" } });
const counted = { status: 200, body: { count: 1 } };

test("the latest session token is sent back on every later request", async () => {
  // 16B0000 < 10000000A: a later answer with an earlier token does not move it back
  const server = await fake([counted, stored("10000000A"), counted, stored("16B0000"), counted]);
  try {
    const client = new MemexClient({ baseUrl: server.baseUrl });
    assert.equal(client.sessionToken, undefined);
    await client.count(who);
    await client.store({ ...who, content: "x" });
    assert.equal(client.sessionToken, "10000000A");
    await client.count(who);
    await client.store({ ...who, content: "y" });
    await client.count(who);
    assert.deepEqual(
      server.seen.map((s) => s.minLsn),
      [undefined, undefined, "10000000A", "10000000A", "10000000A"],
    );
    assert.equal(client.sessionToken, "10000000A");
    // another client instance keeps its own
    const other = new MemexClient({ baseUrl: server.baseUrl });
    assert.equal(other.sessionToken, undefined);
  } finally {
    await server.close();
  }
});
