// Where many secrets stand in a text, in time that grows with the text alone (docs/security.md,
// "Masked by value"): an Aho-Corasick automaton over the secrets' UTF-16 units. A lookup by first
// units then a comparison (_secret-index.ts) costs, at each place, every secret that starts the
// same way, as far as they agree: 20,000 lines that all begin `AAAAAAAA`, or a hundred values
// sharing a 39,000-unit prefix, held a run's texts for tens of seconds. Here each unit of a text
// moves the automaton once, whatever the secrets share.
//
// The trie's nodes live in typed arrays, numbered in the order the sorted secrets create them
// (depth first), so a node's first child is the next node and its siblings follow in the order
// of their units: 19 bytes a node, at most one node per unit of the secrets. A node with many
// children (the root, a line's first unit among 30,000 lines that each start with another CJK
// character) has them in a table instead: walking 30,000 siblings at each step held the server
// 48 s to build and 55 µs a character to search.

import type { SecretIndex } from "./_secret-index.ts";

const NONE = -1;

interface Automaton {
  /** The unit on the edge into each node. */
  readonly unit: Uint16Array;
  /** Each node's next sibling, 0 when it is the last (the root is nobody's sibling). */
  readonly sibling: Int32Array;
  /** How many children the node has (255 for more): its first is the node after it. */
  readonly children: Uint8Array;
  readonly depth: Int32Array;
  /** The node of the longest proper suffix of this node's units that is in the trie. */
  readonly fail: Int32Array;
  /** The length of the longest secret that ends at this node (itself or a suffix of it), 0 if none. */
  readonly output: Int32Array;
  /** The root's children by unit, 0 when none. */
  readonly roots: Int32Array;
  /** The children of nodes with more than FEW_CHILDREN, by `node * 65536 + unit`. */
  readonly wide: Map<number, number>;
  readonly longest: number;
}

/** A node with more children than this finds them in `wide` rather than by walking its siblings. */
const FEW_CHILDREN = 8;

/** The child of `node` on `unit`, or NONE. */
function child(a: Automaton, node: number, unit: number): number {
  if (node === 0) return a.roots[unit]! || NONE;
  const count = a.children[node]!;
  if (count === 0) return NONE;
  if (count > FEW_CHILDREN) return a.wide.get(node * 65536 + unit) ?? NONE;
  for (let next = node + 1; next !== 0; next = a.sibling[next]!) {
    const on = a.unit[next]!;
    if (on === unit) return next;
    // Siblings come in the order of their units.
    if (on > unit) return NONE;
  }
  return NONE;
}

/** Where the automaton goes from `node` on `unit`. */
function step(a: Automaton, node: number, unit: number): number {
  for (;;) {
    const next = child(a, node, unit);
    if (next !== NONE) return next;
    if (node === 0) return 0;
    node = a.fail[node]!;
  }
}

function build(secrets: readonly string[]): Automaton {
  const sorted = [...new Set(secrets)].filter((secret) => secret.length > 0).sort();
  let units = 1;
  let longest = 0;
  for (const secret of sorted) {
    units += secret.length;
    longest = Math.max(longest, secret.length);
  }
  const a: Automaton = {
    unit: new Uint16Array(units),
    sibling: new Int32Array(units),
    children: new Uint8Array(units),
    depth: new Int32Array(units),
    fail: new Int32Array(units),
    output: new Int32Array(units),
    roots: new Int32Array(65536),
    wide: new Map(),
    longest,
  };
  // The nodes of the previous secret's path, by depth: a secret shares with its sorted neighbour
  // exactly the units they have in common.
  const path = new Int32Array(longest + 1);
  let previous = "";
  let count = 1;
  for (const secret of sorted) {
    let shared = 0;
    const most = Math.min(previous.length, secret.length);
    while (shared < most && previous.charCodeAt(shared) === secret.charCodeAt(shared)) shared++;
    for (let d = shared; d < secret.length; d++) {
      const node = count++;
      const above = path[d]!;
      const unit = secret.charCodeAt(d);
      a.unit[node] = unit;
      a.depth[node] = d + 1;
      // At the first new unit, the previous secret's node there (if it went on) is the last child so far.
      if (d === shared && previous.length > shared) a.sibling[path[d + 1]!] = node;
      if (above === 0) a.roots[unit] = node;
      if (a.children[above]! < 255) a.children[above]!++;
      path[d + 1] = node;
    }
    a.output[path[secret.length]!] = secret.length;
    previous = secret;
  }
  for (let node = 1; node < count; node++) {
    if (a.children[node]! <= FEW_CHILDREN) continue;
    for (let next = node + 1; next !== 0; next = a.sibling[next]!) a.wide.set(node * 65536 + a.unit[next]!, next);
  }
  // Breadth first, each node's suffix link from its parent's; a secret ending at a suffix ends here too.
  const queue = new Int32Array(count);
  let head = 0;
  let tail = 0;
  for (let node = a.children[0] ? 1 : 0; node !== 0; node = a.sibling[node]!) queue[tail++] = node;
  while (head < tail) {
    const node = queue[head++]!;
    if (a.children[node] === 0) continue;
    for (let next = node + 1; next !== 0; next = a.sibling[next]!) {
      const suffix = node === 0 ? 0 : a.fail[node]!;
      const fail = node === 0 ? 0 : step(a, suffix, a.unit[next]!);
      a.fail[next] = fail;
      if (a.output[next] === 0) a.output[next] = a.output[fail]!;
      queue[tail++] = next;
    }
  }
  return a;
}

/** An index over `secrets` whose automaton is built the first time a text is searched. */
export function secretAutomaton(secrets: readonly string[]): SecretIndex {
  let built: Automaton | null = null;
  const automaton = () => (built ??= build(secrets));
  return {
    find(text, found, from = 0) {
      const a = automaton();
      let node = 0;
      for (let at = Math.max(0, from); at < text.length; at++) {
        node = step(a, node, text.charCodeAt(at));
        const length = a.output[node]!;
        if (length > 0) found(at + 1 - length, at + 1);
      }
    },
    unfinished(text) {
      const a = automaton();
      // A tail that starts a secret without finishing it is shorter than the longest secret.
      let node = 0;
      for (let at = Math.max(0, text.length - a.longest + 1); at < text.length; at++) node = step(a, node, text.charCodeAt(at));
      // The longest suffix in the trie that some secret goes on past.
      while (node !== 0 && a.children[node] === 0) node = a.fail[node]!;
      return a.depth[node]!;
    },
  };
}
