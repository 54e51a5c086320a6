/** The memexdb service client: one typed method per REST operation (generated from the
 * operation table), typed errors, retries for calls safe to repeat, timeouts, and async
 * iterators over the paged listings and the NDJSON export. */

import {
  ConnectionError,
  errorFromResponse,
  InvalidArgumentError,
  MemexError,
  TimeoutError,
} from "./errors.js";
import type { components, paths } from "./generated/openapi.js";
import {
  ITERATORS,
  OPERATIONS,
  type Items,
  type OperationMethods,
  type OperationName,
  type PagedOperationName,
  type Requests,
  type Results,
} from "./generated/operations.js";
import type { CallOptions } from "./types.js";

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** An API key (`mxk_...`), sent as `Authorization: Bearer`; omit for a service without keys. */
  apiKey?: string;
  /** Timeout of each attempt, in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** How many times a call safe to repeat is retried on 429, 503 or a broken connection
   * (default 3; 0: never). Of the writes, only stores are retried (with their ids). */
  retries?: number;
  /** The longest a call may spend waiting between retries, in all (default 30 000 ms):
   * a Retry-After beyond it ends the retries. */
  maxRetryWaitMs?: number;
  /** First backoff delay when the service gives no Retry-After (default 200 ms; doubled
   * each retry, with jitter, at most 5 s). */
  backoffMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The fetch to use (default: the platform's `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** How many requests this client sends at once (default 64). More calls queue for a
   * free slot, in the order they were made, instead of opening ever more connections;
   * the timeout of an attempt starts when it is sent, not while it queues. */
  maxConcurrent?: number;
}

export type ExportedMemory = components["schemas"]["ExportedMemory"];
export type ExportRequest = NonNullable<paths["/v1/export"]["get"]["parameters"]["query"]>;
export type HealthResponse = components["schemas"]["HealthResponse"];
export type ImportResponse = components["schemas"]["ImportResponse"];

interface Spec {
  readonly method: string;
  readonly path: string;
  readonly source: "body" | "query" | "path";
  readonly pathParams: readonly string[];
  readonly retrySafe: boolean;
  readonly noBody: boolean;
  readonly paging: { readonly cursor: string; readonly next: string; readonly items: string } | null;
}

/** The requests a client has in flight: at most `size`, the others wait in order. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** A free slot (resolved once one is), or the signal's reason if it aborts first. */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const granted = (): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = (): void => {
        const at = this.#waiting.indexOf(granted);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(granted);
    });
  }

  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

const RETRY_CODES = new Set(["rate_limited", "busy", "database_unavailable", "connection_failed"]);

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function queryString(values: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined || value === null) continue;
    params.append(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** A raw request: method, path with query string, JSON body. */
interface Raw {
  method: string;
  path: string;
  body?: unknown;
  /** A body streamed as it is produced (read once: such a request is never retried). */
  stream?: ReadableStream<Uint8Array>;
  contentType?: string;
  retrySafe: boolean;
  accept?: string;
}

/** What `importMemories` sends: export records (as `export` yields them), or the text
 * of an export file (JSON Lines). */
export type ImportSource = Iterable<object> | AsyncIterable<object> | string;

/** The NDJSON body of `POST /v1/import`, produced as it is read (chunks of ~256 KiB). */
function ndjsonStream(records: ImportSource): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  if (typeof records === "string") {
    const bytes = encoder.encode(records);
    return new ReadableStream({
      start(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    });
  }
  async function* lines(): AsyncGenerator<object> {
    yield* records as AsyncIterable<object>;
  }
  const iterator = lines();
  return new ReadableStream({
    async pull(controller) {
      let chunk = "";
      while (chunk.length < 256 * 1024) {
        const { value, done } = await iterator.next();
        if (done) {
          if (chunk) controller.enqueue(encoder.encode(chunk));
          controller.close();
          return;
        }
        chunk += JSON.stringify(value) + "\n";
      }
      controller.enqueue(encoder.encode(chunk));
    },
    async cancel() {
      await iterator.return?.(undefined);
    },
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Arguments that name one thing (beside the path's parameters): never empty.
const NAMES = ["agent_id", "user_id", "path", "key", "confirm"];

function invalid(name: string, field: string, message: string): InvalidArgumentError {
  return new InvalidArgumentError(`${name}: ${field}: ${message}`, {
    code: "invalid_argument",
    fields: [{ field, message }],
  });
}

/** Refuse, before anything is sent, an id that is missing (a path parameter), empty, or
 * (a memory id) not a UUID: an empty id in a path would name another route. */
function refuseBadIds(name: string, request: Record<string, unknown>, pathParams: readonly string[]): void {
  for (const param of pathParams) {
    const value = request[param];
    if (value === undefined || value === null || String(value) === "") {
      throw invalid(name, param, "is required and must not be empty");
    }
  }
  for (const field of NAMES) {
    if (request[field] === "") throw invalid(name, field, "must not be empty");
  }
  const id = request.memory_id;
  if (id !== undefined && !UUID.test(String(id))) {
    throw invalid(name, "memory_id", `must be a UUID, not ${JSON.stringify(id)}`);
  }
}

export interface MemexClient extends OperationMethods {}

/** A client of a memexdb service (service mode; direct-Postgres mode: `@memexdb/client/direct`). */
/**
 * Stores take an id the caller chooses: the service answers a repeat of the same memory
 * with the stored one (and another memory with that id with 409), so a store whose answer
 * was lost is safe to send again. Gives each memory of a store without one a fresh UUID;
 * true when the call may then be retried (false where the platform has no
 * `crypto.randomUUID`, or the caller's ids are left as given).
 */
function withFreshIds(name: string, body: Record<string, unknown>): boolean {
  const uuid = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto?.randomUUID;
  if (uuid === undefined) return false;
  const fresh = (memory: Record<string, unknown>) => {
    memory.id ??= uuid.call(globalThis.crypto);
  };
  if (name === "store") {
    fresh(body);
    return true;
  }
  if (name === "storeMany" && Array.isArray(body.memories)) {
    for (const memory of body.memories as Record<string, unknown>[]) fresh(memory);
    return true;
  }
  return false;
}

/** A session token (a WAL position as up to 16 hexadecimal digits) as a number;
 * undefined if it is not one. */
function lsn(token: string): bigint | undefined {
  return /^[0-9A-Fa-f]{1,16}$/.test(token) ? BigInt(`0x${token}`) : undefined;
}

export class MemexClient {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #maxRetryWaitMs: number;
  readonly #backoffMs: number;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  readonly #slots: Slots;
  #sessionToken: string | undefined;

  constructor(options: ClientOptions) {
    if (!options || !options.baseUrl) throw new TypeError("MemexClient needs a baseUrl");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#retries = Math.max(0, options.retries ?? 3);
    this.#maxRetryWaitMs = options.maxRetryWaitMs ?? 30_000;
    this.#backoffMs = options.backoffMs ?? 200;
    this.#headers = { ...options.headers };
    const platformFetch = options.fetch ?? globalThis.fetch;
    if (typeof platformFetch !== "function") throw new TypeError("no fetch: pass options.fetch");
    this.#fetch = platformFetch;
    const concurrent = options.maxConcurrent ?? 64;
    if (!Number.isInteger(concurrent) || concurrent < 1) {
      throw new TypeError("maxConcurrent must be a positive integer");
    }
    this.#slots = new Slots(concurrent);
  }

  /** The latest session token the service answered this client (its `Memex-Write-LSN`
   * header, with read replicas), sent back on every request as `Memex-Min-LSN` so that
   * the client's reads see its writes whichever service process answers (docs/rest.md). */
  get sessionToken(): string | undefined {
    return this.#sessionToken;
  }

  #keepToken(token: string | null): void {
    if (token === null) return;
    const position = lsn(token);
    if (position === undefined) return;
    const kept = this.#sessionToken === undefined ? undefined : lsn(this.#sessionToken);
    if (kept === undefined || position > kept) this.#sessionToken = token; // answers can cross
  }

  /** Call operation `name` with `request` (what every typed method does). */
  async call<N extends OperationName>(
    name: N,
    request?: Requests[N],
    options: CallOptions = {},
  ): Promise<Results[N]> {
    const spec: Spec = OPERATIONS[name];
    if (!spec) throw new TypeError(`unknown operation ${String(name)}`);
    const rest: Record<string, unknown> = { ...(request as Record<string, unknown> | undefined) };
    refuseBadIds(String(name), rest, spec.pathParams);
    let path = spec.path;
    for (const param of spec.pathParams) {
      path = path.replace(`{${param}}`, encodeURIComponent(String(rest[param])));
      delete rest[param];
    }
    const raw: Raw = { method: spec.method, path, retrySafe: spec.retrySafe };
    if (withFreshIds(String(name), rest)) raw.retrySafe = true;
    if (spec.source === "query") raw.path += queryString(rest);
    else if (spec.source === "body") raw.body = rest;
    const response = await this.#send(raw, options);
    if (spec.noBody || response.status === 204) {
      await response.body?.cancel();
      return undefined as Results[N];
    }
    return (await response.json()) as Results[N];
  }

  /** The pages of a paged listing, following its cursor until the last page. */
  async *pages<N extends PagedOperationName>(
    name: N,
    request: Requests[N],
    options: CallOptions = {},
  ): AsyncIterableIterator<Results[N]> {
    const paging = (OPERATIONS[name] as Spec).paging;
    if (!paging) throw new TypeError(`${name} is not paged`);
    let next: Record<string, unknown> = { ...(request as Record<string, unknown>) };
    for (;;) {
      const page = await this.call(name, next as Requests[N], options);
      yield page;
      const cursor = (page as Record<string, unknown>)[paging.next];
      if (cursor === null || cursor === undefined) return;
      next = { ...next, [paging.cursor]: cursor };
    }
  }

  /** Every item of a paged listing (what the `iter<Name>` methods do). */
  async *iterate<N extends PagedOperationName>(
    name: N,
    request: Requests[N],
    options: CallOptions = {},
  ): AsyncIterableIterator<Items[N]> {
    const paging = (OPERATIONS[name] as Spec).paging!;
    for await (const page of this.pages(name, request, options)) {
      yield* (page as Record<string, unknown>)[paging.items] as Items[N][];
    }
  }

  /** An agent's (or one of its users') whole memory from `GET /v1/export`, streamed as
   * NDJSON and yielded one record at a time: a header (`record: "header"`), the memories
   * (`record: "memory"`, typed here), then the file revisions, access log and
   * consolidation runs (`importMemories` and `memexdb import` read the same format). */
  async *export(request: ExportRequest, options: CallOptions = {}): AsyncIterableIterator<ExportedMemory> {
    const response = await this.#send(
      {
        method: "GET",
        path: `/v1/export${queryString(request as Record<string, unknown>)}`,
        retrySafe: true,
        accept: "application/x-ndjson",
      },
      options,
      false,
    );
    if (!response.body) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line) yield JSON.parse(line) as ExportedMemory;
        }
      }
      if (buffered.trim()) yield JSON.parse(buffered) as ExportedMemory;
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** `POST /v1/import`: import an export as it was (memories, files, their history),
   * the records streamed as NDJSON from an (async) iterable, or the text of an export
   * file. Needs the operator's key or an admin key of the agent. The body is read once,
   * so the request is not retried: an import run again skips what it had inserted.
   * Streamed request bodies need Node 18+, Deno or Bun (browsers: pass smaller imports). */
  async importMemories(records: ImportSource, options: CallOptions = {}): Promise<ImportResponse> {
    const response = await this.#send(
      {
        method: "POST",
        path: "/v1/import",
        stream: ndjsonStream(records),
        contentType: "application/x-ndjson",
        retrySafe: false,
      },
      options,
    );
    return (await response.json()) as ImportResponse;
  }

  /** `GET /health`: whether the service and its database answer (a 503 is an error). */
  async health(options: CallOptions = {}): Promise<HealthResponse> {
    const response = await this.#send({ method: "GET", path: "/health", retrySafe: true }, options);
    return (await response.json()) as HealthResponse;
  }

  /** Send `raw`, retrying if safe; the successful Response, or a typed error. With
   * `bounded` false the timeout covers only the wait for the headers (a stream may
   * take longer). */
  async #send(raw: Raw, options: CallOptions, bounded = true): Promise<Response> {
    const retries = raw.retrySafe ? Math.max(0, options.retries ?? this.#retries) : 0;
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      let error: MemexError;
      try {
        return await this.#attempt(raw, options, bounded);
      } catch (caught) {
        if (!(caught instanceof MemexError) || !RETRY_CODES.has(caught.code)) throw caught;
        error = caught;
      }
      if (attempt >= retries) throw error;
      const backoff = Math.min(5_000, this.#backoffMs * 2 ** attempt) * (0.5 + Math.random() / 2);
      const delay = error.retryAfter !== undefined ? error.retryAfter * 1000 : backoff;
      if (waited + delay > this.#maxRetryWaitMs) throw error;
      waited += delay;
      await sleep(delay, options.signal);
    }
  }

  /** One attempt, once the client has a free slot for it (held until its body is read;
   * a stream's, until its headers arrive). */
  async #attempt(raw: Raw, options: CallOptions, bounded: boolean): Promise<Response> {
    await this.#slots.take(options.signal);
    try {
      return await this.#sendOnce(raw, options, bounded);
    } finally {
      this.#slots.give();
    }
  }

  async #sendOnce(raw: Raw, options: CallOptions, bounded: boolean): Promise<Response> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const outer = options.signal;
    const onAbort = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) onAbort();
    outer?.addEventListener("abort", onAbort, { once: true });
    const headers: Record<string, string> = {
      accept: raw.accept ?? "application/json",
      ...this.#headers,
    };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    if (this.#sessionToken !== undefined) headers["memex-min-lsn"] = this.#sessionToken;
    if (raw.body !== undefined) headers["content-type"] = "application/json";
    if (raw.contentType !== undefined) headers["content-type"] = raw.contentType;
    const done = (): void => {
      clearTimeout(timer);
      // a stream handed on stays abortable by the caller's signal
      if (bounded) outer?.removeEventListener("abort", onAbort);
    };
    try {
      let response: Response;
      try {
        const init: RequestInit & { duplex?: "half" } = {
          method: raw.method,
          headers,
          body: raw.stream ?? (raw.body === undefined ? undefined : JSON.stringify(raw.body)),
          signal: controller.signal,
        };
        if (raw.stream !== undefined) init.duplex = "half"; // a streamed request body
        response = await this.#fetch(`${this.baseUrl}${raw.path}`, init);
      } catch (caught) {
        if (outer?.aborted) throw caught;
        if (controller.signal.aborted) {
          throw new TimeoutError(`${raw.method} ${raw.path.split("?")[0]} timed out after ${timeoutMs} ms`, {
            code: "timeout",
            cause: caught,
          });
        }
        // Node's fetch says "fetch failed"; why (ECONNREFUSED, ...) is its cause
        const reason = (caught as { cause?: { code?: string; message?: string } })?.cause;
        const why = reason?.code ?? reason?.message ?? String(caught);
        throw new ConnectionError(`${raw.method} ${this.baseUrl}${raw.path.split("?")[0]}: no answer (${why})`, {
          code: "connection_failed",
          cause: caught,
        });
      }
      if (!response.ok) {
        const text = await response.text();
        throw errorFromResponse(response.status, text, response.headers.get("retry-after"));
      }
      this.#keepToken(response.headers.get("memex-write-lsn"));
      if (bounded) {
        // read the body within the timeout, then hand it on
        const body = await response.arrayBuffer();
        return new Response(response.status === 204 ? null : body, {
          status: response.status,
          headers: response.headers,
        });
      }
      return response;
    } finally {
      done();
    }
  }
}

for (const name of Object.keys(OPERATIONS) as OperationName[]) {
  Object.defineProperty(MemexClient.prototype, name, {
    value: function (this: MemexClient, request?: Requests[typeof name], options?: CallOptions) {
      return this.call(name, request, options);
    },
    writable: true,
    configurable: true,
  });
}
for (const [method, name] of Object.entries(ITERATORS) as [string, PagedOperationName][]) {
  Object.defineProperty(MemexClient.prototype, method, {
    value: function (this: MemexClient, request: Requests[typeof name], options?: CallOptions) {
      return this.iterate(name, request, options);
    },
    writable: true,
    configurable: true,
  });
}
