import { describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer } from "../../runtime/server/serve.ts";
import { client } from "./_support/http.ts";
import { startBun, tempCheckout } from "./_support/servers.ts";

describe("run identities over HTTP", () => {
  test("POST /executions/start with the run_id of a forgotten execution answers 200, deduplicated with details_expired (never a 500, never a second run)", async () => {
    const server = await startBun({ limits: { executions_retained: 1 } });
    const http = client(server);
    try {
      const body = { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 }, run_id: "nightly-42" };
      const first = (await (await http.post("/api/v1/executions/start", body)).json()) as any;
      await http.completed(first.execution.id);
      await http.completed(await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 }));
      expect((await http.get(`/api/v1/executions/get?id=${first.execution.id}`)).status).toBe(404);

      const again = await http.post("/api/v1/executions/start", body);
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({
        execution: { id: first.execution.id, capability: "executions.demonstrate", run_id: "nightly-42", details_expired: true, links: expect.any(Object) },
        deduplicated: true,
        details_expired: true,
      });
      const listed = (await (await http.get("/api/v1/executions")).json()) as any;
      expect(listed.items).toHaveLength(1);
      expect(listed.items[0].id).not.toBe(first.execution.id);
    } finally {
      await server.stop();
    }
  });

  test("a server with the memory store answers a run_id a server with the sqlite store took before it as that run, not a second run (tester)", async () => {
    const root = tempCheckout();
    const logged: string[] = [];
    const serve = (storeKind: "memory" | "sqlite") => startServer({ cwd: root, port: 0, storeKind, limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: (line) => logged.push(line) });
    const body = { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 }, run_id: "invoice-42" };
    try {
      const durable = await serve("sqlite");
      const first = (await (await client(durable).post("/api/v1/executions/start", body)).json()) as any;
      await client(durable).completed(first.execution.id);
      await durable.stop();

      const memory = await serve("memory");
      try {
        const http = client(memory);
        const again = await http.post("/api/v1/executions/start", body);
        expect(again.status).toBe(200);
        expect(await again.json()).toMatchObject({ execution: { id: first.execution.id, run_id: "invoice-42", details_expired: true }, deduplicated: true, details_expired: true });
        // Another input with it is a conflict there too; nothing ran.
        expect((await http.post("/api/v1/executions/start", { ...body, input: { steps: 1, delay_ms: 0 } })).status).toBe(409);
        expect(((await (await http.get("/api/v1/executions")).json()) as any).items).toEqual([]);
        expect(logged.join("\n")).toContain("recorded the run_ids of 1 run of .docket/state.db");
      } finally {
        await memory.stop();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
