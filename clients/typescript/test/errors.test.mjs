// The error table on the TypeScript side, no service needed: each SQLSTATE of the table
// becomes its class in direct mode, and each error code of an answer its class in service
// mode. The table is the Python package's (memexdb_client.errors.ERRORS), passed by
// tests/test_typescript_client.py as MEMEX_ERROR_TABLE; without it, the generated one.
import assert from "node:assert/strict";
import { test } from "node:test";

import * as client from "../dist/index.js";
import { errorFromSql } from "../dist/direct/errors.js";
import { ERRORS } from "../dist/generated/errors.js";

const table = process.env.MEMEX_ERROR_TABLE ? JSON.parse(process.env.MEMEX_ERROR_TABLE) : ERRORS;
// a SQLSTATE of each class the table names by its class alone
const OF_CLASS = { "22": "22P02", "08": "08006" };

test("the table has rows, each with a class", () => {
  assert.ok(table.length >= 10);
  for (const kind of table) assert.equal(typeof client[`${kind.name}Error`], "function", kind.name);
});

test("direct mode: each SQLSTATE of the table is its class, code and status", () => {
  for (const kind of table) {
    for (const [key, message] of Object.entries(kind.sqlstates)) {
      const state = OF_CLASS[key] ?? key;
      const detail = kind.code === "rate_limited" ? JSON.stringify({ retry_after_seconds: 7 }) : undefined;
      const raised = { code: state, message: "top_k: must be at most 100", detail };
      const error = errorFromSql(raised);
      const cls = client[`${kind.name}Error`];
      assert.ok(error instanceof cls, `${state}: ${error?.constructor?.name}, not ${kind.name}Error`);
      assert.equal(error.code, kind.code, state);
      assert.equal(error.status, kind.status, state);
      assert.equal(error.cause, raised, state);
      if (message !== null) assert.equal(error.message, message, state);
      if (kind.code === "rate_limited") assert.equal(error.retryAfter, 7);
      if (state === "MX422") assert.deepEqual(error.fields, [{ field: "top_k", message: "must be at most 100" }]);
    }
  }
  const other = { code: "XX000", message: "a bug" };
  assert.equal(errorFromSql(other), other, "a SQLSTATE outside the table is not dressed up");
});

test("service mode: each error code of an answer is its class, and a bare status its first row's", async () => {
  const { MemexClient } = client;
  for (const kind of table) {
    const body = JSON.stringify({ error: { code: kind.code, message: "m", fields: [] } });
    const memex = new MemexClient({
      baseUrl: "http://memex.test",
      retries: 0,
      fetch: async () => new Response(body, { status: kind.status, headers: { "content-type": "application/json" } }),
    });
    await assert.rejects(memex.count({ agent_id: "a", user_id: "u" }), (error) => {
      assert.ok(error instanceof client[`${kind.name}Error`], `${kind.code}: ${error.constructor.name}`);
      assert.equal(error.code, kind.code);
      assert.equal(error.status, kind.status);
      return true;
    });
  }
  const first = new Map();
  for (const kind of [...table].reverse()) first.set(kind.status, kind);
  for (const [status, kind] of first) {
    const memex = new MemexClient({
      baseUrl: "http://memex.test",
      retries: 0,
      fetch: async () => new Response("not json", { status }),
    });
    await assert.rejects(memex.count({ agent_id: "a", user_id: "u" }), (error) => {
      assert.equal(error.code, kind.code, `a bare ${status}`);
      return true;
    });
  }
});
