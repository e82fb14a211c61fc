import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer } from "../../runtime/server/serve.ts";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import { copyOfFiles, removeDbDirs } from "../store/_sqlite-support.ts";
import { client } from "./_support/http.ts";
import { tempCheckout } from "./_support/servers.ts";
import { rmSync } from "node:fs";

// docs/durability.md: a forgotten execution is gone once the deletion of its rows is committed,
// and only then; no client is told it is gone while a crash would bring it back.
describe("forgetting past executions_retained over HTTP, sqlite store", () => {
  test("a cancel and a run_id retry of an execution just forgotten answer as the file holds it: not_found and details_expired only when a crash could not bring it back", async () => {
    const root = tempCheckout();
    const server = await startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits({ overrides: { executions_retained: 3 } }), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
    const http = client({ url: server.url, token: server.token, root, stop: async () => {} });
    try {
      const body = { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 }, run_id: "kept-1" };
      const first = ((await (await http.post("/api/v1/executions/start", body)).json()) as any).execution.id as string;
      await http.completed(first);
      for (let n = 0; n < 2; n++) await http.completed(await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 }));
      // The fourth creation forgets the first: its row goes with a later write.
      await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
      const cancel = await http.post("/api/v1/executions/cancel", { id: first });
      const retry = (await (await http.post("/api/v1/executions/start", body)).json()) as any;
      // What a SIGKILL at this moment leaves: the server runs in this process, so no write is half done.
      const crashed = copyOfFiles(join(root, ".docket", "state.db"));
      const reopened = createSqliteStore({ path: crashed, limits: resolveLimits({ overrides: { executions_retained: 1000 } }) });
      const survives = reopened.get(first) !== null;
      reopened.close();
      expect({ cancel: cancel.status, retry: retry.details_expired === true }).toEqual(survives ? { cancel: 200, retry: false } : { cancel: 404, retry: true });
      if (survives) expect(retry.execution).toMatchObject({ id: first, state: "succeeded" });
      // A read writes the deletion first: from then on it is gone, for the file too.
      expect((await http.get(`/api/v1/executions/get?id=${first}`)).status).toBe(404);
      expect((await http.post("/api/v1/executions/cancel", { id: first })).status).toBe(404);
    } finally {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
      removeDbDirs();
    }
  });
});
