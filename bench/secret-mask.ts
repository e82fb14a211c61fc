// What masking a text costs when the secrets are hostile (docs/security.md, "Masked by value"):
// many that start alike, or one that repeats itself, beside a certificate bundle of random lines,
// the common large case. Each row times finding every secret in one text with what docket ships
// (runtime/execution/_secret-index.ts, _secret-borders.ts) against, in the same run, the searches
// it replaced: the lookup by first two characters alone (session 35), and one `indexOf` after
// each occurrence per secret (before). In-process, no server; sizes scaled down so that each
// baseline stays within a few seconds (the full sizes took 20 s a text). Medians of
// DOCKET_BENCH_ROUNDS (3) rounds; the shipped index is built afresh each round, its automaton's
// building included in the first text's time.
import { createSecretMask } from "../runtime/execution/secret-mask.ts";
import { indexSecrets, type SecretIndex } from "../runtime/execution/_secret-index.ts";
import { eachOccurrence } from "../runtime/execution/_secret-borders.ts";
import type { BenchResult } from "./run.ts";

const ROUNDS = Number(process.env.DOCKET_BENCH_ROUNDS ?? 3);

interface Case {
  name: string;
  values: string[];
  text: string;
}

function randomLine(length: number): string {
  const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let line = "";
  for (let i = 0; i < length; i++) line += letters[Math.floor(Math.random() * letters.length)];
  return line;
}

function cases(): Case[] {
  const certificates = Array.from({ length: 300 }, () => ["-----BEGIN CERTIFICATE-----", ...Array.from({ length: 60 }, () => randomLine(64)), "-----END CERTIFICATE-----"].join("\n")).join("\n");
  const alike = Array.from({ length: 5_000 }, (_, i) => `AAAAAAAA${i.toString(36).padStart(8, "x")}${"Z".repeat(20)}`).join("\n");
  const prefix = "A".repeat(1_900);
  const shared = Array.from({ length: 50 }, (_, i) => prefix + String(i).padStart(100, "q"));
  const repeated = "A".repeat(40_000);
  return [
    { name: "certificate bundle, 300 certificates of random lines (1.2 MB), whole in the text", values: [certificates], text: `ca=${certificates};` },
    { name: "5,000 lines all starting AAAAAAAA (0.2 MB), whole in the text", values: [alike], text: `ca=${alike};` },
    { name: "50 values sharing their first 1,900 of 2,000 characters, five in the text", values: shared, text: shared.slice(0, 5).join(" ") },
    { name: "one value of 40,000 repeated characters, twice in the text", values: [repeated], text: `<${repeated}${repeated}>` },
  ];
}

/** Every range `index` finds in `text`: what a mask then replaces. */
function findAll(index: SecretIndex, text: string): number {
  let found = 0;
  index.find(text, () => found++);
  return found;
}

/** One `indexOf` after each occurrence, per secret: the search of a mask of few secrets before this session. */
function naiveAll(secrets: readonly string[], text: string): number {
  let found = 0;
  for (const secret of secrets) for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) found++;
  return found;
}

/** Few secrets as docket searches for them now: each found again one period on (_secret-borders.ts). */
function periodAll(secrets: readonly string[], text: string): number {
  let found = 0;
  for (const secret of secrets) eachOccurrence(text, secret, secrets, () => found++);
  return found;
}

function timed(work: () => unknown): number {
  const began = performance.now();
  work();
  return performance.now() - began;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function benchSecretMask(): Promise<BenchResult> {
  const rows: Array<Record<string, unknown>> = [];
  for (const { name, values, text } of cases()) {
    const secrets = createSecretMask(values).secrets;
    const indexed = secrets.length >= 48;
    const shipped: number[] = [];
    const again: number[] = [];
    const baseline: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // A fresh index each round: the first text pays for building whatever it builds.
      const index = indexSecrets(secrets);
      const search = () => (index === null ? periodAll(secrets, text) : findAll(index, text));
      shipped.push(timed(search));
      again.push(timed(search));
      baseline.push(timed(() => (indexed ? findAll(indexSecrets(secrets, { patience: Infinity })!, text) : naiveAll(secrets, text))));
    }
    const first = median(shipped);
    const before = median(baseline);
    rows.push({
      case: name,
      texts_to_find: secrets.length,
      text_chars: text.length,
      docket_first_text_ms: first,
      docket_next_text_ms: median(again),
      baseline: indexed ? "lookup by first two characters alone" : "indexOf after each occurrence",
      baseline_ms: before,
      "docket ÷ baseline": first / before,
    });
  }
  return { name: "secret-mask", rows };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  const result = await benchSecretMask();
  console.log(`## ${result.name}\n\n${markdownTable(result.rows)}`);
}
