/** The agentic tools in direct mode (issue 38): memorize and memory search (passages, with
 * an optional answer) against an OpenAI-compatible chat model the app names, as the
 * service runs them (memexdb.agentic): the same prompts and tool schemas (generated from
 * the Python package, src/generated/agentic.ts), the same rules for the model's proposals
 * (SQL's, one definition: memex.check_memorize_fact and memex.check_memorize_file), the
 * same writes as `memorize-agent` on behalf of the caller (memex._delegate), so the same
 * records. */

import { ConflictError, InvalidArgumentError, NotFoundError } from "../errors.js";
import * as prompts from "../generated/agentic.js";
import type { Requests, Results } from "../generated/operations.js";
import * as sql from "../generated/sql.js";
import type { MemexDirectClient } from "./client.js";

/** An OpenAI-compatible chat model: `POST {url}/chat/completions` with function tools. */
export interface ChatModelOptions {
  /** The base URL, ending in `/v1` (e.g. `https://api.openai.com/v1`). */
  url: string;
  /** The `model` to ask for. */
  model: string;
  /** Sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Timeout of one request in milliseconds (default 60 000). */
  timeoutMs?: number;
}

/** The model could not be asked, or its reply was not a chat completion (memexdb.llm.LLMError):
 * memorize falls back, memory search answers without an answer; never thrown to the caller. */
export class LLMError extends Error {
  override name = "LLMError";
}

export interface ToolCall {
  name: string;
  /** The raw JSON arguments, as the model sent them (untrusted). */
  arguments: string;
}

export interface ChatReply {
  content: string | null;
  toolCalls: ToolCall[];
}

type Message = { role: "system" | "user"; content: string };

/** One chat completion (temperature 0); any failure is an LLMError. */
export async function chat(
  options: ChatModelOptions,
  messages: Message[],
  tools?: readonly unknown[],
): Promise<ChatReply> {
  const body: Record<string, unknown> = { model: options.model, messages, temperature: 0 };
  if (tools && tools.length) body.tools = tools;
  const controller = new AbortController();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let response: Response;
  let bytes: ArrayBuffer;
  try {
    response = await fetch(`${options.url.replace(/\/+$/, "")}/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    bytes = await response.arrayBuffer();
  } catch (error) {
    if (controller.signal.aborted) throw new LLMError(`TimeoutError: no answer within ${timeoutMs} ms`);
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new LLMError(reason);
  } finally {
    clearTimeout(timer);
  }
  const text = new TextDecoder().decode(bytes);
  if (response.status !== 200) throw new LLMError(`HTTP ${response.status}: ${text.slice(0, 200)}`);
  if (bytes.byteLength > prompts.MAX_REPLY_BYTES) {
    throw new LLMError(`reply of ${bytes.byteLength} bytes is too large`);
  }
  try {
    return replyOf(JSON.parse(text));
  } catch (error) {
    throw new LLMError(`not a chat completion: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function replyOf(data: unknown): ChatReply {
  const message = (data as { choices: { message: Record<string, unknown> }[] }).choices[0]!.message;
  if (typeof message !== "object" || message === null) throw new TypeError("no message");
  const content = message.content ?? null;
  if (content !== null && typeof content !== "string") throw new TypeError("message.content is not a string");
  const toolCalls: ToolCall[] = [];
  for (const call of (message.tool_calls as { function: { name: unknown; arguments?: unknown } }[] | null) ?? []) {
    const { name, arguments: args = "{}" } = call.function;
    if (typeof name !== "string") throw new TypeError("a tool call's name is not a string");
    // some servers send an object
    toolCalls.push({ name, arguments: typeof args === "string" ? args : JSON.stringify(args) });
  }
  return { content, toolCalls };
}

/** Where vectors come from (the client's embeddings endpoint today; a Node embedder
 * plugs in here): a text's vector as a pgvector literal with its model, or null (text
 * mode: no embedder). */
export interface VectorSource {
  vectorOf(text: string): Promise<{ vector: string; model: string } | null>;
}

type Row = Record<string, unknown>;

/** What memorize runs on: the client writing as `memorize-agent` for its bound role (every
 * statement in a transaction that first runs memex._delegate), a generated call run the
 * same way, the vectors, and the chat model. */
export interface AgentHost {
  agent: MemexDirectClient;
  call(call: sql.SqlCall): Promise<Row[]>;
  vectors: VectorSource;
  llm: ChatModelOptions | undefined;
}

type MemorizeRequest = Requests["memorize"];
type MemorizeResult = Results["memorize"];
type Decision = MemorizeResult["decisions"][number];
type Change = MemorizeResult["applied"][number];
type Refusal = MemorizeResult["refused"][number];

class Refused extends Error {}

/** The first `n` characters (code points, as Python counts them). */
function first(text: string, n: number): string {
  const points = Array.from(text);
  return points.length <= n ? text : points.slice(0, n).join("");
}

function invalid(field: string, message: string): InvalidArgumentError {
  return new InvalidArgumentError(`${field}: ${message}`, {
    code: "invalid_argument",
    status: 422,
    fields: [{ field, message }],
  });
}

/** `2026-12-06 10:15` of a time (UTC), as the Python prompt writes it. */
function minute(now: Date): string {
  return now.toISOString().slice(0, 16).replace("T", " ");
}

/** memory_memorize (memexdb.agentic.memorizing): keep what is durable in `request.text`.
 * `now` dates the memories it stores (default: the time of the call). */
export async function memorize(host: AgentHost, request: MemorizeRequest, now = new Date()): Promise<MemorizeResult> {
  const text = request.text;
  if (typeof text !== "string" || !/\S/.test(text)) throw invalid("text", "must not be blank");
  if (Array.from(text).length > prompts.MEMORIZE_TEXT_MAX_CHARS) {
    throw invalid("text", `must be at most ${prompts.MEMORIZE_TEXT_MAX_CHARS} characters`);
  }
  const who = { agent_id: request.agent_id, user_id: request.user_id };
  // refuse a caller without write access before spending a model call on it
  await host.call({
    text: "memex._authorize($1, $2, 'write')",
    values: [who.agent_id, who.user_id],
  } as sql.SqlCall);
  if (host.llm === undefined) return fallback(host, request, now, null);
  const { files } = await host.agent.listFiles({ ...who, limit: prompts.MEMORIZE_FILE_LIST });
  const candidates = await candidatesOf(host, request, new Set(files.map((f) => f.memory_id)));
  let reply: ChatReply;
  try {
    reply = await chat(host.llm, await messagesOf(host, request, now, files, candidates), prompts.MEMORIZE_TOOLS);
  } catch (error) {
    if (error instanceof LLMError) return fallback(host, request, now, error.message);
    throw error;
  }
  const applied: Change[] = [];
  const decisions: Decision[] = [];
  const refused: Refusal[] = [];
  const facts = new Facts(host, request, now, candidates.map((c) => c.id));
  for (const [index, call] of reply.toolCalls.entries()) {
    if (index >= prompts.MEMORIZE_MAX_PROPOSALS) {
      refused.push(refusal(call, `over ${prompts.MEMORIZE_MAX_PROPOSALS} proposals`));
      continue;
    }
    try {
      if (call.name === "memory_fact") decisions.push(await facts.decide(call));
      else applied.push(await applyFile(host, request, call));
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      refused.push(refusal(call, error.message));
    }
  }
  return { mode: "llm", applied, decisions, refused, llm_error: null };
}

function refusal(call: ToolCall, reason: string): Refusal {
  return { tool: first(call.name, 100), arguments: first(call.arguments, 500), reason };
}

/** A refusal for what SQL refused while applying (the proposal's, not the caller's). */
function refusedBySql(error: unknown): Refused {
  if (error instanceof InvalidArgumentError) {
    const [field] = error.fields;
    return new Refused(field ? `${field.field}: ${field.message}` : error.message);
  }
  if (error instanceof ConflictError || error instanceof NotFoundError) return new Refused(error.message);
  // other errors (forbidden, rate limited, database down) are the caller's: they fail the call
  throw error;
}

/** Store one memory as memorize-agent: with its vector when there is an embedder
 * (memex.store, as the Python package), else queued for the embed worker. */
async function storeMemory(
  host: AgentHost,
  who: { agent_id: string; user_id: string },
  content: string,
  fields: { memory_type: "episodic" | "semantic"; metadata: Record<string, unknown>; created_at: string; supersedes?: string[] },
): Promise<string> {
  const embedded = await host.vectors.vectorOf(content);
  const supersedes = fields.supersedes?.length ? fields.supersedes : undefined;
  const metadata = JSON.stringify(fields.metadata);
  const rows = embedded
    ? await host.call(
        sql.store({
          ...who,
          content,
          embedding: embedded.vector,
          embedding_model: embedded.model,
          memory_type: fields.memory_type,
          metadata,
          created_at: fields.created_at,
          supersedes,
        }),
      )
    : await host.call(
        sql.storeQueued({
          agent_ids: [who.agent_id],
          user_ids: [who.user_id],
          contents: [content],
          memory_types: [fields.memory_type],
          metadata: [metadata],
          created_at: [fields.created_at],
          ids: [globalThis.crypto.randomUUID()],
          supersedes: supersedes ? [JSON.stringify(supersedes)] : undefined,
        }),
      );
  return rows[0]!.id as string;
}

/** The memory_fact decisions of one call: each checked by SQL against the candidates
 * shown and the decisions before it, then applied. */
class Facts {
  readonly #named: string[] = [];
  #retired = 0;

  constructor(
    readonly host: AgentHost,
    readonly request: MemorizeRequest,
    readonly now: Date,
    readonly offered: string[],
  ) {}

  async decide(call: ToolCall): Promise<Decision> {
    const who = { agent_id: this.request.agent_id, user_id: this.request.user_id };
    const [checked] = await this.host.call(
      sql.checkMemorizeFact({
        ...who,
        arguments: call.arguments,
        offered: this.offered,
        named: this.#named,
        retired: this.#retired,
      }),
    );
    if (!checked || checked.refusal !== null || checked.action === null) {
      throw new Refused((checked?.refusal as string | null) ?? "refused");
    }
    const action = checked.action as Decision["action"];
    const fact = checked.fact as string | null;
    const ids = checked.ids as string[];
    const reason = checked.reason as string;
    let memoryId: string | null = null;
    try {
      if (action === "add" || action === "supersede") {
        memoryId = await storeMemory(this.host, who, fact!, {
          memory_type: "semantic",
          metadata: { source: "memorize", decision: action, reason },
          created_at: this.now.toISOString(),
          supersedes: ids,
        });
      } else if (action === "retire") {
        await this.host.call(sql.retireMemories({ ...who, ids, reason: reason || null }));
        this.#retired += ids.length;
      }
    } catch (error) {
      throw refusedBySql(error);
    }
    this.#named.push(...ids);
    return { action, fact, ids, reason, memory_id: memoryId };
  }
}

async function applyFile(host: AgentHost, request: MemorizeRequest, call: ToolCall): Promise<Change> {
  const who = { agent_id: request.agent_id, user_id: request.user_id };
  const [checked] = await host.call(sql.checkMemorizeFile({ ...who, tool: call.name, arguments: call.arguments }));
  if (!checked || checked.refusal !== null || checked.path === null) {
    throw new Refused((checked?.refusal as string | null) ?? "refused");
  }
  const path = checked.path as string;
  let file: { path: string; memory_id: string; revision: number };
  try {
    if (checked.tool === "memory_write") {
      file = await host.agent.writeFile({ ...who, path, content: checked.content as string });
    } else {
      const patch: Requests["patchFile"] = { ...who, path };
      for (const key of ["heading", "append", "old_text", "new_text"] as const) {
        if (checked[key] !== null) patch[key] = checked[key] as string;
      }
      file = await host.agent.patchFile(patch);
    }
  } catch (error) {
    throw refusedBySql(error);
  }
  return { tool: call.name, path: file.path, memory_id: file.memory_id, revision: file.revision };
}

type Hit = Results["search"]["results"][number];

/** The tenant's memories most similar to the text (the default search, files left out),
 * plus the top few of each of its first sentences (memexdb.agentic.memorizing._candidates). */
async function candidatesOf(host: AgentHost, request: MemorizeRequest, paths: Set<string>): Promise<Hit[]> {
  const who = { agent_id: request.agent_id, user_id: request.user_id };
  const whole = await host.agent.search({
    ...who,
    query: first(request.text, prompts.QUERY_MAX_CHARS),
    top_k: prompts.MEMORIZE_CANDIDATES + paths.size,
  });
  const found = whole.results.filter((h) => !paths.has(h.id)).slice(0, prompts.MEMORIZE_CANDIDATES);
  const seen = new Set([...found.map((h) => h.id), ...paths]);
  const sentences = sentencesOf(request.text);
  for (const sentence of sentences.length > 1 ? sentences.slice(0, prompts.MEMORIZE_SENTENCE_SEARCHES) : []) {
    const hits = await host.agent.search({
      ...who,
      query: first(sentence, prompts.QUERY_MAX_CHARS),
      top_k: prompts.MEMORIZE_SENTENCE_CANDIDATES + paths.size,
    });
    const fresh = hits.results.filter((h) => !seen.has(h.id)).slice(0, prompts.MEMORIZE_SENTENCE_CANDIDATES);
    found.push(...fresh);
    for (const h of fresh) seen.add(h.id);
  }
  return found;
}

/** The sentences of a text worth a search of their own (4 words or more). */
function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((p) => p.trim())
    .filter((p) => p.split(/\s+/).filter(Boolean).length >= 4);
}

function candidateLines(candidates: Hit[]): string {
  const lines = candidates.map((c) => {
    let text = c.content.split(/\s+/).filter(Boolean).join(" ");
    if (Array.from(text).length > prompts.MEMORIZE_CANDIDATE_CHARS) {
      text = first(text, prompts.MEMORIZE_CANDIDATE_CHARS - 1) + "…";
    }
    return `- id ${c.id} (recorded ${c.created_at.slice(0, 10)}): ${text}`;
  });
  return lines.join("\n") || "(none yet)";
}

async function messagesOf(
  host: AgentHost,
  request: MemorizeRequest,
  now: Date,
  files: Results["listFiles"]["files"],
  candidates: Hit[],
): Promise<Message[]> {
  const names = files.map((f) => `- ${f.path} (${f.size} chars)`).join("\n") || "(none yet)";
  const query = first(request.text, prompts.QUERY_MAX_CHARS);
  const embedded = await host.vectors.vectorOf(query);
  const [context] = await host.call(
    sql.smartRead({
      agent_id: request.agent_id,
      user_id: request.user_id,
      query,
      query_embedding: embedded?.vector ?? null,
      embedding_model: embedded?.model ?? null,
      budget: prompts.MEMORIZE_CONTEXT_CHARS,
    }),
  );
  const user =
    `Now: ${minute(now)} UTC\n\nFiles:\n${names}\n\n` +
    `Relevant memory:\n${(context?.context as string) || "(nothing yet)"}\n\n` +
    `Existing memories most similar to the new text:\n${candidateLines(candidates)}\n\n` +
    `New text:\n${request.text}`;
  return [
    { role: "system", content: prompts.MEMORIZE_SYSTEM },
    { role: "user", content: user },
  ];
}

async function fallback(
  host: AgentHost,
  request: MemorizeRequest,
  now: Date,
  llmError: string | null,
): Promise<MemorizeResult> {
  const who = { agent_id: request.agent_id, user_id: request.user_id };
  const id = await storeMemory(host, who, request.text, {
    memory_type: "episodic",
    metadata: { source: "memorize" },
    created_at: now.toISOString(),
  });
  return {
    mode: "fallback",
    applied: [{ tool: "store_memory", path: null, memory_id: id, revision: null }],
    decisions: [], // nothing is superseded by guesswork
    refused: [],
    llm_error: llmError,
  };
}

/** What memory search runs on: generated calls as the caller, the vectors, the model. */
export interface SearchHost {
  call(call: sql.SqlCall): Promise<Row[]>;
  vectors: VectorSource;
  llm: ChatModelOptions | undefined;
}

const CITATION = /\[(\d{1,3})\]/g;

/** memory_search (memexdb.agentic.answering): passages of files and memories for the
 * query (BM25 fused with vectors; text alone without an embedder); with `answer` and a
 * chat model, the model's answer citing them by rank. */
export async function searchPassages(
  host: SearchHost,
  request: Requests["searchPassages"],
): Promise<Results["searchPassages"]> {
  const embedded = await host.vectors.vectorOf(request.query);
  const rows = await host.call(
    sql.searchPassages({
      agent_id: request.agent_id,
      user_id: request.user_id,
      query: request.query,
      query_embedding: embedded?.vector ?? null,
      embedding_model: embedded?.model ?? null,
      top_k: request.top_k ?? prompts.DEFAULT_PASSAGES_TOP_K,
      passage_chars: request.passage_chars ?? prompts.DEFAULT_PASSAGE_CHARS,
    }),
  );
  const passages = rows as Results["searchPassages"]["passages"];
  const none = { passages, answer: null, cited: [] as number[], llm_error: null };
  if (!request.answer) return { ...none, llm: "not_asked" };
  if (host.llm === undefined) return { ...none, llm: "not_configured" };
  let answer: string;
  try {
    const numbered = passages.map((p) => `[${p.rank}] (${p.path ?? `memory ${p.memory_id}`})\n${p.passage}`).join("\n\n");
    const reply = await chat(host.llm, [
      { role: "system", content: prompts.ANSWER_SYSTEM },
      { role: "user", content: `Passages:\n${numbered || "(none)"}\n\nQuestion: ${request.query}` },
    ]);
    if (!reply.content) throw new LLMError("the model sent no answer");
    answer = reply.content;
  } catch (error) {
    if (!(error instanceof LLMError)) throw error;
    return { ...none, llm: "failed", llm_error: error.message };
  }
  const cited = new Set<number>();
  for (const [, n] of answer.matchAll(CITATION)) {
    const rank = Number(n);
    if (rank >= 1 && rank <= passages.length) cited.add(rank);
  }
  return { passages, answer, cited: [...cited].sort((a, b) => a - b), llm: "answered", llm_error: null };
}
