import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";

/** A fresh checkout (a temp folder with `.git`), by its real path; remove it with `removeCheckout`. */
export async function tempCheckout(prefix = "docket-test-"): Promise<string> {
  const root = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  await mkdir(join(root, ".git"));
  return root;
}

export async function removeCheckout(root: string): Promise<void> {
  await rm(root, { recursive: true, force: true });
}

/** Writes files (relative path → text) under `root`, creating folders as needed. */
export async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
}

/** Options of `capabilitySource`: the parts of a capability file a fixture varies. */
export interface CapabilitySourceOptions {
  id: string;
  /** valibot expression of the input schema. */
  input?: string;
  output?: string;
  /** More declaration properties, as source text (`examples: [{ n: "x" }],`). */
  extra?: string;
}

/** The text of a capability file as a user writes it: imports from "docket" and "valibot" only. */
export function capabilitySource(options: CapabilitySourceOptions): string {
  return [
    'import { capability } from "docket";',
    'import * as v from "valibot";',
    "",
    "export default capability({",
    `  id: ${JSON.stringify(options.id)},`,
    '  title: "Fixture",',
    '  description: "A capability written by a test.",',
    '  effect: "read",',
    `  input: ${options.input ?? "v.object({ n: v.optional(v.number(), 1) })"},`,
    `  output: ${options.output ?? "v.object({ n: v.number() })"},`,
    ...(options.extra ? [`  ${options.extra}`] : []),
    "  handler(input) {",
    "    return { n: 1 };",
    "  },",
    "});",
    "",
  ].join("\n");
}

/** Serves "docket" and "valibot" to fixture files outside the repository, as the binary does. */
export function useDocketModules(): void {
  registerDocketModules();
}
