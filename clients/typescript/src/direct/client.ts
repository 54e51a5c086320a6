/** Direct-Postgres mode: the `memex.*` SQL functions through the `pg` driver, as a SQL role
 * bound to a tenant (`memex.bind_sql_role`), with no service in between. The methods take
 * and return what service mode's do (the generated request and result types). This
 * module is the only one that imports `pg`: service mode never loads it. */

import pg from "pg";

import { ConflictError, ForbiddenError, InvalidArgumentError, MemexError } from "../errors.js";
import { MEMORIZE_ACTOR } from "../generated/agentic.js";
import type { Items, Requests, Results } from "../generated/operations.js";
import * as sql from "../generated/sql.js";
import { memorize, searchPassages, type AgentHost, type ChatModelOptions, type VectorSource } from "./agentic.js";
import { embedLocally, embedTexts, type Embedded, type EmbeddingsEndpoint, type LocalEmbedder } from "./embeddings.js";
import { errorFromSql, RETRIED_SQLSTATES } from "./errors.js";
import { migrate, type MigrateOptions } from "./migrate.js";

export interface DirectClientOptions {
  /** A libpq-style URL of the bound role, e.g. `postgresql://alice_app:secret@db/memex`. */
  connectionString: string;
  /** Connections kept open (default 4). */
  maxConnections?: number;
  /** Where query vectors come from; without one (nor an `embedder`), search runs in text mode. */
  embeddings?: EmbeddingsEndpoint;
  /** A model run in this process (e.g. `await MiniLM.load()` of `@memexdb/minilm`): it
   * embeds every query and every write, stores included (each memory is embedded before
   * its statement commits, never queued). Used instead of `embeddings` when both are given. */
  embedder?: LocalEmbedder;
  /** Queue stores for the embed worker even with an `embedder` (the stand-in vector of
   * `memex.store_queued` until a memexdb process embeds them). Default: queue only when
   * there is no `embedder`. */
  queueStores?: boolean;
  /** The OpenAI-compatible chat model of `memorize` and `searchPassages`' answers (base
   * URL, model, key); without one, memorize stores the text as one episodic memory and
   * memory search answers no question (`llm: "not_configured"`). */
  llm?: ChatModelOptions;
}

/** A client of the same pool writing as one of memexdb's own agents (memex._delegate):
 * how `memorize` writes as `memorize-agent` (module-private). */
const DELEGATED = Symbol("delegated");
interface Delegated {
  pool: pg.Pool;
  actor: string;
}

/** A search's result, and the mode it ran in: `text` when neither an embedder nor an
 * embeddings endpoint was given (full-text ranking only; memories not yet embedded are found too). */
export type DirectSearchResult = Results["search"] & { mode: "vector" | "text" | "hybrid" };

type Row = Record<string, unknown>;

/** Attempts in all of a call that loses a deadlock or serialization conflict
 * (memexdb.session.CONFLICT_ATTEMPTS; tests/test_conflict_retry.py compares them). */
const CONFLICT_ATTEMPTS = 3;

/** The defaults of the request fields direct mode must fill in itself (a page's limit
 * tells it whether there is a next page; SQL takes no null for these). They are the REST
 * API's (memexdb/fields.py and memexdb/<domain>/models.py): test/direct.test.mjs compares them with the service's OpenAPI
 * document, so they cannot drift. */
export const DEFAULTS = {
  searchTopK: 10,
  listMemoriesLimit: 50,
  listFilesLimit: 50,
  listRevisionsLimit: 50,
  memoryHistoryLimit: 50,
  accessLogLimit: 100,
  smartReadBudget: 4000,
} as const;

/** Tries of a patch without `base_revision` whose file moves on between preview and write. */
const PATCH_TRIES = 5;

const TIMESTAMPTZ_OID = 1184;
const INT8_OID = 20;

/** `2026-12-05 06:00:00.123456+00` (the session runs in UTC) as the service writes it,
 * `2026-12-05T06:00:00.123456Z`: microseconds kept (a JS Date would drop them). */
function isoTimestamp(value: string): string {
  return value.replace(" ", "T").replace(/\+00(:00)?$/, "Z");
}

const types = {
  getTypeParser(oid: number, format?: string): (value: string) => unknown {
    if (oid === TIMESTAMPTZ_OID) return isoTimestamp;
    if (oid === INT8_OID) return Number; // counts and ids: far below 2^53
    return pg.types.getTypeParser(oid, format as "text") as (value: string) => unknown;
  },
};

function vectorLiteral(vector: number[]): string {
  return `[${vector.join(",")}]`;
}

function json(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/** What the model embeds for a content: a blank or missing one is the SQL API's to
 * refuse (naming its field, as the service does), so the model gets a stand-in. */
function modelText(content: unknown): string {
  return typeof content === "string" && content.replace(/[ \t\n\r\f\v]/g, "") !== "" ? content : "-";
}

function fresh(): string {
  return globalThis.crypto.randomUUID();
}

/** The next page's key: that of a full page's last row (the service's rule). */
function nextKey<T>(rows: Row[], limit: number, key: (row: Row) => T): T | null {
  const last = rows[rows.length - 1];
  return last !== undefined && rows.length === limit ? key(last) : null;
}

/**
 * A memexdb client over Postgres, as a bound SQL role. With an `embedder`, `store` and
 * `storeMany` embed their memories in this process and store them with their vectors, and
 * `search` embeds its query here too (hybrid ranking, as the service's); without one,
 * stores are queued for the embed worker and `search` embeds its query at `embeddings`
 * when given, else ranks by text only (`mode: "text"`). `memorize` and `searchPassages`
 * ask the chat model `llm` names (src/direct/agentic.ts). Service-only operations are not here
 * (README: "Direct-Postgres mode").
 */
export class MemexDirectClient {
  readonly #pool: pg.Pool;
  readonly #embeddings: EmbeddingsEndpoint | undefined;
  readonly #embedder: LocalEmbedder | undefined;
  readonly #queueStores: boolean;
  readonly #connectionString: string;
  readonly #options: DirectClientOptions;
  /** memexdb's agent this client writes as (memex._delegate), if any. */
  readonly #actor: string | undefined;

  constructor(options: DirectClientOptions) {
    this.#options = options;
    this.#connectionString = options.connectionString;
    this.#embeddings = options.embeddings;
    this.#embedder = options.embedder;
    this.#queueStores = options.queueStores ?? options.embedder === undefined;
    const delegated = (options as { [DELEGATED]?: Delegated })[DELEGATED];
    this.#actor = delegated?.actor;
    this.#pool =
      delegated?.pool ??
      new pg.Pool({
        connectionString: options.connectionString,
        max: options.maxConnections ?? 4,
        options: "-c TimeZone=UTC",
        types,
      });
  }

  /** Close the connections. */
  async close(): Promise<void> {
    if (this.#actor === undefined) await this.#pool.end();
  }

  async #rows(sql: string, values: unknown[]): Promise<Row[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (this.#actor !== undefined) return await this.#delegatedRows(this.#actor, sql, values);
        const result = await this.#pool.query<Row>(sql, values);
        return result.rows;
      } catch (error) {
        // each call is one statement, its own transaction: one that lost a deadlock was
        // rolled back whole, and runs again (as the Python package does)
        const code = (error as { code?: unknown }).code;
        const retried = typeof code === "string" && RETRIED_SQLSTATES.has(code);
        if (!retried || attempt === CONFLICT_ATTEMPTS) throw errorFromSql(error);
      }
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt));
    }
  }

  /** One statement in its own transaction as `actor` (memex._delegate first). */
  async #delegatedRows(actor: string, text: string, values: unknown[]): Promise<Row[]> {
    const connection = await this.#pool.connect();
    try {
      await connection.query("begin");
      await connection.query("select memex._delegate($1)", [actor]);
      const result = await connection.query<Row>(text, values);
      await connection.query("commit");
      return result.rows;
    } catch (error) {
      await connection.query("rollback").catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
  }

  /** The query vectors of the agentic tools: the embedder's, else the embeddings
   * endpoint's, else none (text mode). */
  #vectors(): VectorSource {
    return {
      vectorOf: async (text: string) => (this.#embeds ? this.#embed(text) : null),
    };
  }

  /** Keep what is durable in raw text, as the service's memory_memorize: with `llm`, the
   * model's decisions per fact (add, supersede, retire, none) and file writes and patches,
   * each checked by SQL's rules (memex.check_memorize_fact, memex.check_memorize_file)
   * and applied as `memorize-agent` on behalf of this role; hostile or malformed
   * proposals are refused (in `refused`, with why). Without `llm`, or when it fails, the
   * text is stored as one episodic memory. Memories are stored with their vector when
   * there is an embedder, else queued for the embed worker; file proposals need one. */
  async memorize(request: Requests["memorize"], options: { now?: Date } = {}): Promise<Results["memorize"]> {
    const agent = new MemexDirectClient({
      ...this.#options,
      [DELEGATED]: { pool: this.#pool, actor: MEMORIZE_ACTOR },
    } as DirectClientOptions);
    const host: AgentHost = {
      agent,
      call: (call) => agent.#from(call),
      vectors: this.#vectors(),
      llm: this.#options.llm,
    };
    return memorize(host, request, options.now);
  }

  /** Passages of files and memories for a query, best first, as the service's
   * memory_search (hybrid with an embedder, text alone without); with `answer` and `llm`,
   * the model's answer citing them by rank (`cited`). */
  async searchPassages(request: Requests["searchPassages"]): Promise<Results["searchPassages"]> {
    return searchPassages({ call: (call) => this.#from(call), vectors: this.#vectors(), llm: this.#options.llm }, request);
  }

  /** The rows of a generated call: `select * from memex.f(...)`. */
  async #from(call: sql.SqlCall): Promise<Row[]> {
    return this.#rows(`select * from ${call.text}`, call.values);
  }

  /** The one row of a generated call. */
  async #oneFrom(call: sql.SqlCall): Promise<Row> {
    return this.#one(`select * from ${call.text}`, call.values);
  }

  async #one(sql: string, values: unknown[]): Promise<Row> {
    const [row] = await this.#rows(sql, values);
    if (row === undefined) throw new MemexError("the SQL function returned no row");
    return row;
  }

  /** Whether this client can embed (an embedder or an embeddings endpoint). */
  get #embeds(): boolean {
    return this.#embedder !== undefined || this.#embeddings !== undefined;
  }

  /** The vectors of `texts` from the embedder, else the embeddings endpoint; without
   * either, an `InvalidArgumentError` naming `field` (the request field that needs it). */
  async #embedMany(texts: string[], field = "content"): Promise<{ vectors: string[]; model: string }> {
    let embedded: Embedded;
    if (this.#embedder !== undefined) {
      embedded = await embedLocally(this.#embedder, texts);
    } else if (this.#embeddings !== undefined) {
      embedded = await embedTexts(this.#embeddings, texts);
    } else {
      const message = "needs an embeddings endpoint in direct mode";
      throw new InvalidArgumentError(`${field}: ${message}`, {
        code: "invalid_argument",
        status: 422,
        fields: [{ field, message }],
      });
    }
    return { vectors: embedded.vectors.map(vectorLiteral), model: embedded.model };
  }

  /** The vector of `text` (see `#embedMany`). */
  async #embed(text: string, field = "content"): Promise<{ vector: string; model: string }> {
    const { vectors, model } = await this.#embedMany([text], field);
    return { vector: vectors[0]!, model };
  }

  /** Store one memory. With an `embedder` it is embedded first and stored with its
   * vector (`memex.store`, as the service); otherwise it is queued, and found by vector
   * search once the embed worker has embedded it. The client gives it a fresh id unless
   * you do. */
  async store(request: Requests["store"]): Promise<Results["store"]> {
    if (!this.#queueStores) {
      const { vector, model } = await this.#embed(modelText(request.content));
      const row = await this.#oneFrom(
        sql.store({
          agent_id: request.agent_id,
          user_id: request.user_id,
          content: request.content,
          embedding: vector,
          embedding_model: model,
          // left out, not null: memex.store's own defaults (episodic, importance 1, {})
          memory_type: request.memory_type ?? undefined,
          importance: request.importance ?? undefined,
          metadata: json(request.metadata) ?? undefined,
          expires_at: request.expires_at ?? null,
          created_at: request.created_at ?? null,
          id: request.id ?? fresh(),
          supersedes: request.supersedes ?? null,
          valid_from: request.valid_from ?? null,
          valid_to: request.valid_to ?? null,
        }),
      );
      return row as Results["store"];
    }
    try {
      const { memories } = await this.storeMany({ memories: [request] });
      return memories[0]!;
    } catch (error) {
      // the batch names `memories[0].content`; a single store names `content`, as the service
      if (!(error instanceof InvalidArgumentError)) throw error;
      const fields = error.fields.map((f) => ({ ...f, field: f.field.replace(/^memories\[0\]\./, "") }));
      throw new InvalidArgumentError(fields.map((f) => `${f.field}: ${f.message}`).join("; "), {
        code: error.code,
        status: error.status,
        fields,
        cause: error.cause,
      });
    }
  }

  /** Store memories in one statement (all or nothing): embedded first, in one batch, with
   * an `embedder` (`memex.store_many`, as the service); otherwise queued for embedding. */
  async storeMany(request: Requests["storeMany"]): Promise<Results["storeMany"]> {
    const items = request.memories;
    // memex.store_queued takes no validity: refused, never dropped (the service's single
    // store takes it); `supersedes` it takes, per item, in batch order
    items.forEach((m, i) => {
      for (const name of ["valid_from", "valid_to"] as const) {
        if (m[name] !== undefined && m[name] !== null) {
          const message = "not in direct mode (the service's store takes it)";
          throw new InvalidArgumentError(`memories[${i}].${name}: ${message}`, {
            code: "invalid_argument",
            status: 422,
            fields: [{ field: `memories[${i}].${name}`, message }],
          });
        }
      }
    });
    const columns = {
      agent_ids: items.map((m) => m.agent_id),
      user_ids: items.map((m) => m.user_id),
      contents: items.map((m) => m.content),
      // a null item takes the SQL API's default (episodic, importance 1, {})
      memory_types: items.map((m) => m.memory_type ?? null),
      importances: items.map((m) => m.importance ?? null),
      metadata: items.map((m) => json(m.metadata)),
      expires_at: items.map((m) => m.expires_at ?? null),
      created_at: items.map((m) => m.created_at ?? null),
      ids: items.map((m) => m.id ?? fresh()),
      // per item a JSON array of the ids it supersedes, or null
      supersedes: items.some((m) => m.supersedes) ? items.map((m) => json(m.supersedes)) : undefined,
    };
    let call: sql.SqlCall;
    if (this.#queueStores) {
      call = sql.storeQueued(columns);
    } else {
      const { vectors, model } = await this.#embedMany(items.map((m) => modelText(m.content)));
      call = sql.storeMany({ ...columns, embeddings: vectors, embedding_model: model });
    }
    const rows = await this.#from(call);
    return { memories: rows as Results["store"][], total: rows.length };
  }

  /** Rank the tenant's memories. With an embeddings endpoint the query is embedded there
   * and the mode is the service's default (hybrid; vector with `alpha`); without one the
   * mode is `text`, and asking for `vector` or `hybrid` is an `InvalidArgumentError`. */
  async search(request: Requests["search"]): Promise<DirectSearchResult> {
    const mode = request.mode ?? (!this.#embeds ? "text" : request.alpha == null ? "hybrid" : "vector");
    let vector: string | null = null;
    let model: string | null = null;
    if (mode !== "text") {
      if (!this.#embeds) {
        throw new InvalidArgumentError(`mode: ${mode} needs an embeddings endpoint in direct mode`, {
          code: "invalid_argument",
          status: 422,
          fields: [{ field: "mode", message: `${mode} needs an embeddings endpoint in direct mode` }],
        });
      }
      ({ vector, model } = await this.#embed(request.query, "mode"));
    }
    const memoryTypes = request.memory_types ?? (request.memory_type ? [request.memory_type] : null);
    const rows = await this.#from(
      // every request field named as a parameter of memex.search (the filters, the
      // weights) goes as it is, an omitted one takes its SQL default; these are the others
      sql.search({
        ...request,
        query_embedding: vector,
        top_k: request.top_k ?? DEFAULTS.searchTopK,
        memory_types: memoryTypes,
        query_text: request.query,
        mode,
        embedding_model: model,
        metadata: json(request.metadata),
      }),
    );
    return {
      agent_id: request.agent_id,
      user_id: request.user_id,
      query: request.query,
      total: rows.length,
      results: rows as Results["search"]["results"],
      mode,
    };
  }

  /** Delete one memory (as the service's 204: nothing returned). */
  async forget(request: Requests["forget"]): Promise<Results["forget"]> {
    const call = sql.forget({ agent_id: request.agent_id, user_id: request.user_id, id: request.memory_id });
    await this.#one(`select id from ${call.text}`, call.values);
  }

  /** Live memories of the tenant (those still queued for embedding included). */
  async count(request: Requests["count"]): Promise<Results["count"]> {
    const call = sql.count({
      agent_id: request.agent_id,
      user_id: request.user_id,
      memory_type: request.memory_type ?? null,
      metadata: json(request.metadata),
    });
    const row = await this.#one(`select ${call.text} as count`, call.values);
    return {
      agent_id: request.agent_id,
      user_id: request.user_id,
      memory_type: request.memory_type ?? null,
      count: row.count as number,
    };
  }

  async get(request: Requests["get"]): Promise<Results["get"]> {
    const row = await this.#oneFrom(
      sql.getMemory({
        agent_id: request.agent_id,
        user_id: request.user_id,
        id: request.memory_id,
        as_of: request.as_of ?? null,
      }),
    );
    return row as Results["get"];
  }

  /** Change fields of one memory. A new `content` needs its vector: it is embedded at the
   * embeddings endpoint (without one: `InvalidArgumentError` naming `content`).
   * `expires_at: null` removes the expiry; leaving it out keeps it. */
  async update(request: Requests["update"]): Promise<Results["update"]> {
    const embedded = request.content === undefined ? null : await this.#embed(request.content);
    const row = await this.#oneFrom(
      sql.updateMemory({
        agent_id: request.agent_id,
        user_id: request.user_id,
        id: request.memory_id,
        content: request.content ?? null,
        embedding: embedded?.vector ?? null,
        embedding_model: embedded?.model ?? null,
        importance: request.importance ?? null,
        metadata: json(request.metadata),
        memory_type: request.memory_type ?? null,
        expires_at: request.expires_at ?? null,
        clear_expires_at: "expires_at" in request && request.expires_at === null,
        supersedes: request.supersedes ?? null,
        valid_from: request.valid_from ?? null,
        valid_to: request.valid_to ?? null,
        clear_valid_to: "valid_to" in request && request.valid_to === null,
      }),
    );
    return row as Results["update"];
  }

  /** A memory's revisions, newest first, each a full snapshot of what it said after a
   * change (issue 36); `next_before` for the next page. */
  async memoryHistory(request: Requests["memoryHistory"]): Promise<Results["memoryHistory"]> {
    const limit = request.limit ?? DEFAULTS.memoryHistoryLimit;
    const rows = await this.#from(
      sql.listMemoryRevisions({
        agent_id: request.agent_id,
        user_id: request.user_id,
        id: request.memory_id,
        limit,
        before: request.before ?? null,
      }),
    );
    // revision 1 is the first: no page after it (as the service answers)
    const last = rows[rows.length - 1];
    const next = rows.length === limit && last !== undefined && (last.revision as number) > 1;
    return {
      revisions: rows,
      next_before: next ? (last.revision as number) : null,
    } as Results["memoryHistory"];
  }

  /** Every revision of a memory, newest first, page after page. */
  iterMemoryHistory(request: Requests["memoryHistory"]): AsyncIterableIterator<Items["memoryHistory"]> {
    return pagesOf(request, "before", "next_before", "revisions", (r) => this.memoryHistory(r));
  }

  /** What changed in a memory from one revision to another: a unified diff of the content
   * and `fields` (`{field: {from, to}}`) for the other fields that differ. */
  async memoryRevisionDiff(request: Requests["memoryRevisionDiff"]): Promise<Results["memoryRevisionDiff"]> {
    const { agent_id, user_id, memory_id, from_revision, to_revision } = request;
    const call = sql.diffMemoryRevisions({ agent_id, user_id, id: memory_id, from_revision, to_revision });
    const row = await this.#one(`select ${call.text} as diff`, call.values);
    const diff = (row.diff ?? {}) as { content?: string; fields?: Record<string, unknown> };
    return {
      memory_id,
      from_revision,
      to_revision,
      content: diff.content ?? "",
      fields: diff.fields ?? {},
    } as Results["memoryRevisionDiff"];
  }

  /** Make what a memory said at an earlier revision current again, as a new revision (a
   * changed content is embedded again by the service's embed worker). */
  async revertMemory(request: Requests["revertMemory"]): Promise<Results["revertMemory"]> {
    const row = await this.#oneFrom(
      sql.revertMemory({
        agent_id: request.agent_id,
        user_id: request.user_id,
        id: request.memory_id,
        revision: request.revision,
      }),
    );
    return row as Results["revertMemory"];
  }

  /** One page, newest first; `next_cursor` (the service's opaque cursor) for the next. */
  async listMemories(request: Requests["listMemories"]): Promise<Results["listMemories"]> {
    const limit = request.limit ?? DEFAULTS.listMemoriesLimit;
    // the cursor's key (memex.memory_cursor_key, $1) feeds the page's call
    const key = sql.memoryCursorKey({ cursor: request.cursor ?? null });
    const page = sql.listMemories(
      {
        ...request, // its fields named as parameters (the filters), as in search
        limit,
        cursor_created_at: new sql.SqlText("c.created_at"),
        cursor_id: new sql.SqlText("c.id"),
        metadata: json(request.metadata),
      },
      key.values.length + 1,
    );
    const cursor = sql.memoryCursor({ created_at: new sql.SqlText("m.created_at"), id: new sql.SqlText("m.id") });
    const rows = await this.#rows(
      `select m.*, ${cursor.text} as next_cursor
       from ${key.text} c, ${page.text} with ordinality m
       order by m.ordinality`,
      [...key.values, ...page.values],
    );
    const next = nextKey(rows, limit, (row) => row.next_cursor as string);
    const memories = rows.map(({ next_cursor: _cursor, ordinality: _ordinality, ...memory }) => memory);
    return { memories, next_cursor: next } as Results["listMemories"];
  }

  /** Every memory, page after page. */
  iterListMemories(request: Requests["listMemories"]): AsyncIterableIterator<Items["listMemories"]> {
    return pagesOf(request, "cursor", "next_cursor", "memories", (r) => this.listMemories(r));
  }

  /** Every file, page after page. */
  iterListFiles(request: Requests["listFiles"]): AsyncIterableIterator<Items["listFiles"]> {
    return pagesOf(request, "after", "next_after", "files", (r) => this.listFiles(r));
  }

  /** Every revision of a file, newest first, page after page. */
  iterListRevisions(request: Requests["listRevisions"]): AsyncIterableIterator<Items["listRevisions"]> {
    return pagesOf(request, "before", "next_before", "revisions", (r) => this.listRevisions(r));
  }

  /** Every access-log entry, newest first, page after page. */
  iterAccessLog(request: Requests["accessLog"]): AsyncIterableIterator<Items["accessLog"]> {
    return pagesOf(request, "before", "next_before", "events", (r) => this.accessLog(r));
  }

  /** Delete every row of the tenant (an operator's connection: a bound SQL role has no
   * admin access; `confirm` must repeat `user_id`); rows deleted per table. */
  async eraseUser(request: Requests["eraseUser"]): Promise<Results["eraseUser"]> {
    const rows = await this.#from(sql.eraseUser(request));
    const deleted = Object.fromEntries(rows.map((r) => [r.table_name as string, r.deleted as number]));
    return { agent_id: request.agent_id, user_id: request.user_id, deleted };
  }

  /** Create or overwrite a file; its content is embedded at the embeddings endpoint
   * (files need their vector when written: without an endpoint, `InvalidArgumentError`). */
  async writeFile(request: Requests["writeFile"]): Promise<Results["writeFile"]> {
    const { vector, model } = await this.#embed(request.content);
    const row = await this.#oneFrom(sql.writeFile({ ...request, embedding: vector, embedding_model: model }));
    return row as Results["writeFile"];
  }

  /** Append under a heading, or replace one text, and store the file with the vector of
   * its new content (embedded at the endpoint): the patch is previewed, its result
   * embedded, then applied again under the file's lock based on the previewed revision
   * (or `base_revision`), so the vector always matches the content. Without
   * `base_revision`, a file that moved on in between is previewed again (at most
   * `PATCH_TRIES` times), so concurrent appends all land; with it, that is a `ConflictError`. */
  async patchFile(request: Requests["patchFile"]): Promise<Results["patchFile"]> {
    const tries = request.base_revision == null ? PATCH_TRIES : 1;
    for (let attempt = 1; ; attempt++) {
      const preview = await this.#oneFrom(sql.previewPatch(request));
      const { vector, model } = await this.#embed(preview.content as string);
      try {
        const row = await this.#oneFrom(
          sql.patchFile({
            ...request,
            embedding: vector,
            embedding_model: model,
            base_revision: request.base_revision ?? preview.revision,
          }),
        );
        return row as Results["patchFile"];
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= tries) throw error;
      }
    }
  }

  /** Make an earlier revision current again, with the vector of its content (embedded at
   * the endpoint). */
  async restoreRevision(request: Requests["restoreRevision"]): Promise<Results["restoreRevision"]> {
    const old = await this.getRevision(request);
    const embedded = typeof old.content === "string" ? await this.#embed(old.content) : null;
    const row = await this.#oneFrom(
      sql.restoreRevision({
        ...request,
        embedding: embedded?.vector ?? null,
        embedding_model: embedded?.model ?? null,
      }),
    );
    return row as Results["restoreRevision"];
  }

  /** The best files and memories for a query packed into a character budget (hybrid
   * ranking: the query is embedded at the endpoint; without one, `InvalidArgumentError`
   * naming `query`). */
  async smartRead(request: Requests["smartRead"]): Promise<Results["smartRead"]> {
    const { vector, model } = await this.#embed(request.query, "query");
    const budget = request.budget ?? DEFAULTS.smartReadBudget;
    const call = sql.smartRead({ ...request, query_embedding: vector, embedding_model: model, budget });
    return (await this.#oneFrom(call)) as Results["smartRead"];
  }

  async readFile(request: Requests["readFile"]): Promise<Results["readFile"]> {
    const row = await this.#oneFrom(sql.readFile(request));
    return row as Results["readFile"];
  }

  async deleteFile(request: Requests["deleteFile"]): Promise<Results["deleteFile"]> {
    const row = await this.#oneFrom(sql.deleteFile(request));
    return row as Results["deleteFile"];
  }

  /** Files in path order; `next_after` for the next page. */
  async listFiles(request: Requests["listFiles"]): Promise<Results["listFiles"]> {
    const limit = request.limit ?? DEFAULTS.listFilesLimit;
    const rows = await this.#from(sql.listFiles({ ...request, limit }));
    return { files: rows, next_after: nextKey(rows, limit, (r) => r.path as string) } as Results["listFiles"];
  }

  /** A file's revisions, newest first, without content; `next_before` for the next page. */
  async listRevisions(request: Requests["listRevisions"]): Promise<Results["listRevisions"]> {
    const limit = request.limit ?? DEFAULTS.listRevisionsLimit;
    const call = sql.listRevisions({ ...request, limit });
    const rows = await this.#rows(
      `select id, agent_id, user_id, path, revision, operation, actor, at, size, memory_id,
              details
       from ${call.text}`,
      call.values,
    );
    return {
      revisions: rows,
      next_before: nextKey(rows, limit, (r) => r.revision as number),
    } as Results["listRevisions"];
  }

  async getRevision(request: Requests["getRevision"]): Promise<Results["getRevision"]> {
    const row = await this.#oneFrom(sql.getRevision(request));
    return row as Results["getRevision"];
  }

  async diffRevisions(request: Requests["diffRevisions"]): Promise<Results["diffRevisions"]> {
    const call = sql.diffRevisions(request);
    const row = await this.#one(`select ${call.text} as diff`, call.values);
    const { path, from_revision, to_revision } = request;
    return { path, from_revision, to_revision, diff: row.diff as string };
  }

  /** The tenant's access log, newest first; `next_before` for the next page. */
  async accessLog(request: Requests["accessLog"]): Promise<Results["accessLog"]> {
    const limit = request.limit ?? DEFAULTS.accessLogLimit;
    const rows = await this.#from(sql.accessEvents({ ...request, limit }));
    return { events: rows, next_before: nextKey(rows, limit, (r) => r.id as number) } as Results["accessLog"];
  }

  /**
   * Migrate the database with this connection, in Node (`migrate` of ./migrate.ts: the
   * schema this package ships, the same as `memexdb migrate` runs, no Python needed); the
   * revision it is now at. For the operator only: the SQL API's own notion of the caller
   * (`memex._caller()`) must be every tenant with admin access, which a bound tenant role
   * never is (`ForbiddenError`, nothing run). A database without the SQL layer yet (no
   * `memex._caller`) is migrated if the role may create it.
   */
  async migrate(options: MigrateOptions = {}): Promise<string> {
    await this.#requireOperator();
    return migrate(this.#connectionString, options);
  }

  async #requireOperator(): Promise<void> {
    let caller: { all?: boolean; access?: string; actor?: string } | undefined;
    try {
      // a database with no SQL layer yet (empty, or brought to a revision alone) has no
      // memex._caller, and no tenant role either
      const schema = await this.#pool.query<{ present: boolean }>(
        "select to_regprocedure('memex._caller()') is not null as present",
      );
      if (schema.rows[0]?.present) {
        const result = await this.#pool.query<{ caller: typeof caller }>("select memex._caller() as caller");
        caller = result.rows[0]?.caller;
      }
    } catch (error) {
      const mapped = errorFromSql(error);
      if (mapped instanceof ForbiddenError) {
        throw new ForbiddenError("migrate: only the operator may migrate (this role may not run memex._caller)", {
          code: "forbidden",
          status: 403,
          cause: error,
        });
      }
      throw mapped;
    }
    if (caller !== undefined && !(caller.all === true && caller.access === "admin")) {
      throw new ForbiddenError(`migrate: only the operator may migrate, not ${caller.actor ?? "this role"}`, {
        code: "forbidden",
        status: 403,
      });
    }
  }
}

/** The items of page after page: each next page asks from the last one's key (`next`,
 * sent as `cursor`) until a page has none (the last). */
async function* pagesOf<Q, I>(
  request: Q,
  cursor: string,
  next: string,
  items: string,
  page: (request: Q) => Promise<unknown>,
): AsyncIterableIterator<I> {
  let key: unknown = (request as Record<string, unknown>)[cursor] ?? null;
  for (;;) {
    const answer = (await page({ ...request, [cursor]: key })) as Record<string, unknown>;
    yield* answer[items] as I[];
    key = answer[next];
    if (key === null || key === undefined) return;
  }
}
