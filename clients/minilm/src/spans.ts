/** The character spans of MiniLM's tokens in a text (the Python package reads them from
 * the Rust tokenizer's offsets; the JavaScript tokenizer gives none): the text is split
 * into words as BERT's normalizer and pre-tokenizer split it, and each word into its
 * word pieces. */

import type { Tokenizer } from "@huggingface/tokenizers";

import type { Span } from "./long-text.js";

const WHITESPACE = /[\s\p{Zs}]/u;
// BERT's punctuation: ASCII's, and Unicode's P categories
const PUNCTUATION = /[\p{P}\u0021-\u002F\u003A-\u0040\u005B-\u0060\u007B-\u007E]/u;
// removed by the normalizer's clean_text (\t \n \r are whitespace)
const REMOVED = /[\0\ufffd\p{Cc}\p{Cf}\p{Co}\p{Cn}]/u;

function isChinese(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** BERT's words of `text`: [start, end) offsets, in order. */
export function words(text: string): Span[] {
  const found: Span[] = [];
  let start = -1;
  let end = -1;
  const close = (): void => {
    if (start >= 0) found.push([start, end]);
    start = -1;
  };
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    const next = i + ch.length;
    if (ch !== "\t" && ch !== "\n" && ch !== "\r" && REMOVED.test(ch)) {
      // dropped before the split: neither part of a word's tokens nor a boundary
    } else if (WHITESPACE.test(ch)) {
      close();
    } else if (isChinese(cp) || PUNCTUATION.test(ch)) {
      close();
      found.push([i, next]);
    } else {
      if (start < 0) start = i;
      end = next;
    }
    i = next;
  }
  close();
  return found;
}

/** The spans of `text`'s tokens (no special tokens), or null when they cannot be told
 * (the words' token counts do not add up to the text's). */
export function tokenSpans(tokenizer: Tokenizer, text: string, count: number): Span[] | null {
  const spans: Span[] = [];
  for (const [start, end] of words(text)) {
    const pieces = tokenizer.encode(text.slice(start, end), { add_special_tokens: false }).tokens;
    // each piece takes its length of the word (a [UNK] the whole word)
    let at = start;
    pieces.forEach((piece: string, k: number) => {
      const length = piece === "[UNK]" ? end - start : piece.replace(/^##/, "").length;
      const stop = k === pieces.length - 1 ? end : Math.min(at + length, end);
      spans.push([at, Math.max(stop, at)]);
      at = Math.max(stop, at);
    });
  }
  return spans.length === count ? spans : null;
}

/** `count` tokens spread evenly over `text` (when `tokenSpans` cannot tell them). */
export function evenSpans(text: string, count: number): Span[] {
  const spans: Span[] = [];
  for (let k = 0; k < count; k++) {
    spans.push([Math.floor((k * text.length) / count), Math.floor(((k + 1) * text.length) / count)]);
  }
  return spans;
}
