/** Model calls of texts of similar length, as the Python package makes them
 * (memexdb/embedding/fastembed_model.py: length_groups, estimated_tokens). */

/** What one model call costs beyond its tokens, in tokens of one text. */
export const CALL_OVERHEAD_TOKENS = 64;

/** Indexes of texts split into model calls that waste little on padding: sorted by
 * (estimated) length and cut where the padding saved outweighs `overhead` (dynamic
 * programming over the sorted order). */
export function lengthGroups(lengths: readonly number[], overhead = CALL_OVERHEAD_TOKENS): number[][] {
  // a stable sort, as Python's sorted
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  const n = order.length;
  const best = new Array<number>(n + 1).fill(0);
  const cut = new Array<number>(n + 1).fill(0);
  for (let end = 1; end <= n; end++) {
    const longest = lengths[order[end - 1]!]!;
    let bestCost = Infinity;
    let bestStart = 0;
    // Python's min over (cost, start) tuples: the lowest cost, then the lowest start
    for (let start = 0; start < end; start++) {
      const cost = best[start]! + (end - start) * longest + overhead;
      if (cost < bestCost) {
        bestCost = cost;
        bestStart = start;
      }
    }
    best[end] = bestCost;
    cut[end] = bestStart;
  }
  const groups: number[][] = [];
  let end = n;
  while (end > 0) {
    groups.push(order.slice(cut[end], end));
    end = cut[end]!;
  }
  return groups.reverse();
}

/** A token count from the length (about 4 characters a token), capped at the window
 * (`capacity` tokens besides the two special ones). Python counts code points. */
export function estimatedTokens(text: string, capacity: number): number {
  let codePoints = 0;
  for (const _ of text) codePoints++;
  return Math.min(Math.floor(codePoints / 4) + 2, capacity + 2);
}
