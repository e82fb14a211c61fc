// What writing a returned output costs its worker (runtime/execution/json-text.ts, jsonText): the
// walk that reads it once, checks it and writes its text, against a plain JSON.stringify of the
// same value (no check: the floor) and the JSON.stringify with a checking replacer it replaced
// (bench/peers/replacer-json-text.ts), side by side in one run, in this thread. The three take
// turns, ROUNDS rounds of about ROUND_MS each, so that whatever else the machine runs falls on all
// three alike: each figure is a round's mean per call, the fastest round (the least disturbed) and
// the median round.
import { MAX_INPUT_DEPTH } from "../runtime/execution/json-depth.ts";
import { jsonText } from "../runtime/execution/json-text.ts";
import { replacerJsonText } from "./peers/replacer-json-text.ts";
import type { BenchResult } from "./run.ts";

/** The outputs measured: what a no-op returns (the dispatch path), and three larger shapes. */
const SHAPES: Array<[string, () => unknown]> = [
  ["{} (a no-op's output)", () => ({})],
  ["1,000 objects of 6 members", () => ({ items: Array.from({ length: 1_000 }, (_, i) => ({ id: i, name: `item ${i}`, active: i % 2 === 0, score: i * 1.5, tags: ["a", "b"], owner: { id: i % 7, email: `user${i % 7}@example.com` } })) })],
  ["100,000 numbers in one array", () => Array.from({ length: 100_000 }, (_, i) => i * 3)],
  ["a tree 12 levels deep, 2 children a node (4,095 nodes)", () => tree(12)],
];
const ROUNDS = Number(process.env.DOCKET_BENCH_ROUNDS ?? 60);
const ROUND_MS = 4;
/** The worker's limit when none is set (worker-entry.ts, UNBOUNDED_OUTPUT). */
const LIMIT = 1024 * 1024 * 1024;

function tree(levels: number): unknown {
  const node: Record<string, unknown> = { name: `level ${levels}`, size: levels * 10, at: "2026-12-03T00:00:00.000Z" };
  if (levels > 1) node.children = [tree(levels - 1), tree(levels - 1)];
  return node;
}

/** µs per call: the fastest round, and the median round. */
type Timing = { fastest: number; median: number };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** µs per call of each of `writers`, taking turns: the fastest round and the median round of each. */
function perCall(writers: Array<() => unknown>): Timing[] {
  const rounds: number[][] = writers.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    writers.forEach((write, i) => {
      let calls = 0;
      const start = performance.now();
      let now = start;
      // Bounded: a call takes far less than a round, so a round is a few hundred thousand calls at most.
      while (now - start < ROUND_MS && calls < 1_000_000) {
        write();
        calls++;
        now = performance.now();
      }
      rounds[i]!.push(((now - start) * 1000) / calls);
    });
  }
  return rounds.map((us) => ({ fastest: Math.min(...us), median: median(us) }));
}

export async function benchJsonText(): Promise<BenchResult> {
  const rows: BenchResult["rows"] = [];
  for (const [shape, make] of SHAPES) {
    const value = make();
    const expected = JSON.stringify(value);
    for (const written of [jsonText(value, MAX_INPUT_DEPTH, "output", LIMIT), replacerJsonText(value, MAX_INPUT_DEPTH, "output", LIMIT)]) {
      if (!written.ok || written.text !== expected) throw new Error(`${shape}: not written as JSON.stringify writes it`);
    }
    const plain = () => JSON.stringify(value);
    const replacer = () => replacerJsonText(value, MAX_INPUT_DEPTH, "output", LIMIT);
    const walk = () => jsonText(value, MAX_INPUT_DEPTH, "output", LIMIT);
    // A first turn of each, untimed, so that none is measured cold.
    perCall([plain, replacer, walk]);
    const [plainUs, replacerUs, walkUs] = perCall([plain, replacer, walk]) as [Timing, Timing, Timing];
    const shown = (us: number) => us.toFixed(us < 10 ? 3 : 0);
    rows.push({
      output: `${shape}, ${expected.length.toLocaleString("en-US")} characters of JSON`,
      flags: `jsonText(output, ${MAX_INPUT_DEPTH}, "output", no output_bytes) in the bench's thread; ${ROUNDS} rounds of ~${ROUND_MS} ms each, taking turns`,
      json_text_us: walkUs.fastest,
      replacer_us: replacerUs.fastest,
      json_stringify_us: plainUs.fastest,
      vs_replacer: replacerUs.fastest / walkUs.fastest,
      vs_json_stringify: plainUs.fastest / walkUs.fastest,
      median_us: `${shown(walkUs.median)} / ${shown(replacerUs.median)} / ${shown(plainUs.median)}`,
      median_vs_replacer: replacerUs.median / walkUs.median,
    });
  }
  return { name: "json-text", rows };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchJsonText()).rows));
  process.exit(0);
}
