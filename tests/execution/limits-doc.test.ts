import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { defaultLimits, LIMIT_SPECS, limitEnvName, limitFlagName, type Limits } from "../../runtime/execution/limits.ts";
import { protocolDocument } from "../../runtime/execution/protocol-document.ts";

const doc = readFileSync(new URL("../../docs/limits.md", import.meta.url), "utf8");
const NEW_LIMITS: Array<keyof Limits> = [
  "step_title_bytes",
  "step_message_bytes",
  "progress_message_bytes",
  "diagnostic_message_bytes",
  "failure_message_bytes",
  "stream_chunk_bytes",
  "events_retained_bytes",
  "storage_budget_bytes",
];

describe("limits documentation and protocol", () => {
  test("docs/limits.md has one table row per limit, with its flag and environment variable", () => {
    for (const key of Object.keys(LIMIT_SPECS) as Array<keyof Limits>) {
      const row = doc.split("\n").find((line) => line.startsWith(`| \`${key}\` |`));
      if (row === undefined) throw new Error(`docs/limits.md has no row for the limit ${key}: add one (name, default, flag, env, behaviour at its edge)`);
      expect(row).toContain(`\`--${limitFlagName(key)}\``);
      expect(row).toContain(`\`${limitEnvName(key)}\``);
    }
  });

  test("executions.protocol serves every text limit, the retained bytes and the storage budget in force", () => {
    const limits = { ...defaultLimits(), step_title_bytes: 128, storage_budget_bytes: 2 * 1024 * 1024 };
    const served = protocolDocument(limits).limits as Record<string, number>;
    for (const key of NEW_LIMITS) expect(served[key]).toBe(limits[key]);
    expect(served.step_title_bytes).toBe(128);
  });
});
