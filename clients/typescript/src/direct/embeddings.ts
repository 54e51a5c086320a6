/** Where direct mode's vectors come from: a model run in-process (`LocalEmbedder`, e.g.
 * `@memexdb/minilm`, the Python package's own model in Node), or an OpenAI-compatible
 * embeddings endpoint (memexdb's own `POST /v1/embeddings` included). */

import { ConnectionError, errorFromResponse, MemexError, TimeoutError } from "../errors.js";

export interface EmbeddingsEndpoint {
  /** The endpoint's full URL, e.g. `http://127.0.0.1:8000/v1/embeddings`. */
  url: string;
  /** Sent as `Authorization: Bearer` (a memexdb API key, or the provider's key). */
  apiKey?: string;
  /** The `model` to ask for (memexdb's endpoint: leave it out). It must be the model the
   * embed worker stores vectors with: searches compare only vectors of the model the
   * endpoint answers with. */
  model?: string;
  /** Timeout of one request, in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** A model run in the app's own process. `@memexdb/minilm`'s `MiniLM` is one
 * (`await MiniLM.load()`): the Python package's bundled all-MiniLM-L6-v2 with the same
 * vectors and `embedding_model`, so memories written from Node and from Python rank
 * together. Any object of this shape will do. */
export interface LocalEmbedder {
  /** Stored as `embedding_model` with every vector; searches compare only vectors of it. */
  readonly modelId: string;
  /** One unit vector per text, in order, each of the whole text however long (the Python
   * package's `embed_in_full`: long texts chunked and averaged). */
  embedInFull(texts: readonly string[]): Promise<ArrayLike<number>[]>;
}

export interface Embedded {
  vectors: number[][];
  /** The model the endpoint says made the vectors. */
  model: string;
}

interface EmbeddingsAnswer {
  data?: { index?: number; embedding?: unknown }[];
  model?: unknown;
}

/** One vector per text, in input order, from an in-process model. */
export async function embedLocally(embedder: LocalEmbedder, texts: string[]): Promise<Embedded> {
  const vectors = await embedder.embedInFull(texts);
  if (vectors.length !== texts.length) {
    throw new MemexError("embedder: not one vector per text", { code: "bad_embeddings_answer" });
  }
  return { vectors: vectors.map((v) => Array.from(v)), model: embedder.modelId };
}

/** One vector per text, in input order. */
export async function embedTexts(endpoint: EmbeddingsEndpoint, texts: string[]): Promise<Embedded> {
  const controller = new AbortController();
  const timeoutMs = endpoint.timeoutMs ?? 30_000;
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let response: Response;
  let body: string;
  try {
    response = await fetch(endpoint.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
        ...endpoint.headers,
      },
      body: JSON.stringify({ input: texts, ...(endpoint.model ? { model: endpoint.model } : {}) }),
      signal: controller.signal,
    });
    body = await response.text();
  } catch (error) {
    if (controller.signal.aborted) {
      throw new TimeoutError(`embeddings endpoint: no answer within ${timeoutMs} ms`, { code: "timeout" });
    }
    throw new ConnectionError(`embeddings endpoint ${endpoint.url} could not be reached`, {
      code: "connection_failed",
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
  if (!response.ok) throw errorFromResponse(response.status, body, response.headers.get("retry-after"));
  const answer = JSON.parse(body) as EmbeddingsAnswer;
  const vectors: (number[] | undefined)[] = texts.map(() => undefined);
  for (const [position, item] of (answer.data ?? []).entries()) {
    const index = item.index ?? position;
    if (!Array.isArray(item.embedding) || index < 0 || index >= texts.length) break;
    vectors[index] = item.embedding as number[];
  }
  const model = endpoint.model ?? (typeof answer.model === "string" ? answer.model : "");
  const complete = vectors.filter((v): v is number[] => v !== undefined);
  if (complete.length !== texts.length || !model) {
    throw new MemexError("embeddings endpoint: the answer is not one float vector per text with its model", {
      code: "bad_embeddings_answer",
    });
  }
  return { vectors: complete, model };
}
