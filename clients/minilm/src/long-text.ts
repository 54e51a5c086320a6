/** Texts of any length as the Python package embeds them (memexdb/embedding/long_text.py):
 * a text longer than the model's window is cut into chunks that fit, preferring line and
 * sentence ends, then spaces between words, and cutting inside a word only when one word
 * is longer than a window; its vector is the mean of the chunks' vectors weighted by
 * their token counts, normalised. A text that fits is one chunk: the model's vector. */

/** A token's [start, end) character offsets in its text (UTF-16 code units). */
export type Span = readonly [number, number];

export interface Chunk {
  text: string;
  tokens: number;
}

const STRONG_GAP = /\n/;
const SENTENCE_END = /[.!?;:\u2026]['")\]]*$/u;
const CJK_END = /[\u3002\uff01\uff1f\uff1b]$/u;
// Python's str.isspace(): the characters of Unicode's White_Space property and the
// separators Python adds (\x1c-\x1f)
const PY_SPACE = /^[\s\x1c-\x1f\x85]+$/u;

/** How good a cut between two tokens is: 2 at a line or sentence end, 1 between words,
 * 0 inside a word. */
function gapStrength(text: string, before: Span, after: Span): number {
  const gap = text.slice(before[1], after[0]);
  if (STRONG_GAP.test(gap)) return 2;
  const token = text.slice(before[0], before[1]);
  if (CJK_END.test(token)) return 2;
  if (gap.length > 0 && PY_SPACE.test(gap) && !gap.includes("\ufeff")) {
    return SENTENCE_END.test(token) ? 2 : 1;
  }
  return 0;
}

/** `text` (whose tokens are at `spans`) cut into chunks of at most `capacity` tokens:
 * each ends at the last sentence end that fits, else the last space between words, else
 * at the window's edge. */
export function chunks(text: string, spans: readonly Span[], capacity: number): Chunk[] {
  const n = spans.length;
  if (n <= capacity) return [{ text, tokens: n }];
  const strength = [0];
  for (let k = 1; k < n; k++) strength.push(gapStrength(text, spans[k - 1]!, spans[k]!));
  const found: Chunk[] = [];
  let start = 0;
  while (start < n) {
    let end = Math.min(start + capacity, n);
    if (end < n) {
      // the last of the strongest cuts (Python: max by (strength, k))
      let best = start + 1;
      for (let k = start + 1; k <= end; k++) if (strength[k]! >= strength[best]!) best = k;
      if (strength[best]! > 0) end = best;
    }
    found.push({ text: text.slice(spans[start]![0], spans[end - 1]![1]), tokens: end - start });
    start = end;
  }
  return found;
}

/** The weighted mean of unit vectors, normalised. */
export function meanVector(vectors: readonly Float32Array[], weights: readonly number[]): Float32Array {
  const dim = vectors[0]!.length;
  const total = new Float64Array(dim);
  let weightSum = 0;
  vectors.forEach((vector, i) => {
    const w = Math.max(weights[i]!, 1);
    weightSum += w;
    for (let d = 0; d < dim; d++) total[d]! += w * vector[d]!;
  });
  for (let d = 0; d < dim; d++) total[d]! /= weightSum;
  return unit(total);
}

/** A float32 copy of `vector` with unit length (normalised in float64). */
export function unit(vector: ArrayLike<number>): Float32Array {
  let norm = 0;
  for (let d = 0; d < vector.length; d++) norm += vector[d]! * vector[d]!;
  norm = Math.sqrt(norm);
  if (!Number.isFinite(norm) || norm === 0) throw new Error("embedding is all zero or not finite");
  const out = new Float32Array(vector.length);
  for (let d = 0; d < vector.length; d++) out[d] = vector[d]! / norm;
  return out;
}

/** The chunks of some texts: `pieces` to embed, in order, and for each text the token
 * count of each of its chunks. */
export class Plan {
  constructor(
    readonly pieces: string[],
    readonly tokens: number[][],
  ) {}

  /** The texts' vectors from the vectors of `pieces`. */
  combine(vectors: readonly Float32Array[]): Float32Array[] {
    const rows: Float32Array[] = [];
    let at = 0;
    for (const counts of this.tokens) {
      const part = vectors.slice(at, at + counts.length);
      rows.push(counts.length === 1 ? part[0]! : meanVector(part, counts));
      at += counts.length;
    }
    return rows;
  }
}
