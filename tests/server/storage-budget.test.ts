import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { client } from "./_support/http.ts";
import { startBun } from "./_support/servers.ts";

const MIB = 1024 * 1024;

describe(".docket/ over its storage budget", () => {
  test("POST /executions/start answers 429 capacity with Retry-After, naming the budget, and health.report fails its store check (resumption: tests/execution/storage-admission.test.ts)", async () => {
    const server = await startBun({ limits: { storage_budget_bytes: MIB } });
    const http = client(server);
    const id = "x-20261201T050000Z-0000beef";
    const dir = join(server.root, ".docket", "artifacts", id);
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "big.bin"), Buffer.alloc(2 * MIB));
      const refused = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("60");
      const { error } = (await refused.json()) as any;
      expect(error).toMatchObject({ error_code: "capacity", stage: "admit", context: { reason: "storage_budget", bytes: 2 * MIB, limit: MIB } });
      expect(error.message).toContain("over its storage budget of 1 MiB (storage_budget_bytes)");
      expect(error.suggestion).toContain("--storage-budget-bytes");

      const report = (await (await http.post("/api/v1/health/report", {})).json()) as any;
      expect(report.ok).toBe(false);
      // The memory store keeps nothing on disk: its disk is not looked at.
      expect(report.store.storage).toEqual({ bytes: 2 * MIB, budget_bytes: MIB, over_budget: true, disk_free_bytes: null, disk_free_floor_bytes: 192 * MIB, disk_low: false });
      expect(report.checks.find((c: any) => c.id === "store")).toMatchObject({ ok: false });
      // Refused before anything was kept.
      expect((await (await http.get("/api/v1/executions")).json() as any).items).toEqual([]);

    } finally {
      await server.stop();
    }
  });
});
