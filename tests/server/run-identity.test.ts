import { describe, expect, test } from "bun:test";
import { client } from "./_support/http.ts";
import { startBun } from "./_support/servers.ts";

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
});
