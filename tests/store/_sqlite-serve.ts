import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { client } from "../server/_support/http.ts";
import { tempCheckout } from "../server/_support/servers.ts";
import { expectValidEvent } from "./_fixtures.ts";

const BUN = fileURLToPath(new URL("../../node_modules/.bin/bun", import.meta.url));
const CHILD = fileURLToPath(new URL("./_sqlite-serve-child.ts", import.meta.url));

/** `docket serve` on the sqlite store, in this process, on a free port. */
function serve(root: string, log: (line: string) => void = () => {}): Promise<DocketServer> {
  return startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log });
}

/** The HTTP client of the test support, for one server. */
function http(server: DocketServer) {
  return client({ url: server.url, token: server.token, root: server.root, stop: () => server.stop() });
}

/** An execution's snapshot and all its events, over HTTP. */
async function readBack(server: DocketServer, id: string): Promise<{ execution: any; events: any[] }> {
  const h = http(server);
  const execution = await (await h.get(`/api/v1/executions/get?id=${id}`)).json();
  const events: any[] = [];
  for (let after = 0; ; ) {
    const page = (await (await h.get(`/api/v1/executions/events?id=${id}&after=${after}`)).json()) as { events: any[] };
    if (page.events.length === 0) return { execution, events };
    events.push(...page.events);
    after = page.events.at(-1).sequence;
  }
}

let servers: DocketServer[] = [];
let roots: string[] = [];
afterEach(async () => {
  for (const server of servers) await server.stop();
  for (const root of roots) rmSync(root, { recursive: true, force: true });
  servers = [];
  roots = [];
});

/** End to end: `docket serve` on the sqlite store, stopped or killed, then started again. */
export function serveCases(): void {
  describe("docket serve on the sqlite store", () => {
    test("docket serve keeps executions in .docket/state.db: after a restart the same execution and its events read back over HTTP", async () => {
      const root = tempCheckout();
      roots.push(root);
      const first = await serve(root);
      const id = await http(first).start("executions.demonstrate", { steps: 2, delay_ms: 0, events: 1500 });
      await http(first).completed(id);
      const before = await readBack(first, id);
      expect(before.execution.state).toBe("succeeded");
      expect(before.events).toHaveLength(before.execution.last_sequence);
      await first.stop();
      expect(existsSync(join(root, ".docket", "state.db"))).toBe(true);
      expect(readFileSync(join(root, ".docket", ".gitignore"), "utf8")).toBe("*\n");

      const second = await serve(root);
      servers.push(second);
      const after = await readBack(second, id);
      expect(after).toEqual(before);
      expect(after.events.map((e) => e.sequence)).toEqual(Array.from({ length: after.events.length }, (_, i) => i + 1));
      const listed = (await (await http(second).get("/api/v1/executions/list")).json()) as any;
      expect(listed.items.map((s: any) => s.id)).toContain(id);
    });

    test("docket serve refuses to start on an unusable .docket/state.db, naming it, and leaves it and no lease behind", async () => {
      const root = tempCheckout();
      roots.push(root);
      mkdirSync(join(root, ".docket"));
      const db = join(root, ".docket", "state.db");
      writeFileSync(db, "not a database");
      await expect(serve(root)).rejects.toThrow(`Cannot open the execution store ${db}: file is not a database`);
      expect(readFileSync(db, "utf8")).toBe("not a database");
      expect(existsSync(join(root, ".docket", "lease.json"))).toBe(false);
    });

    test("docket serve killed mid-run (SIGKILL) shows the execution failed interrupted when started again", async () => {
      const root = tempCheckout();
      roots.push(root);
      const child = Bun.spawn([BUN, CHILD], { cwd: root, stdout: "pipe", stderr: "pipe" });
      const reader = child.stdout.getReader();
      let out = "";
      while (!out.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the server exited first: ${await new Response(child.stderr).text()}`);
        out += new TextDecoder().decode(value);
      }
      const { url } = JSON.parse(out.slice(0, out.indexOf("\n"))) as { url: string };
      const h = client({ url, token: null, root, stop: async () => {} });
      // A long step: it is surely running when the server dies.
      const id = await h.start("executions.demonstrate", { steps: 3, delay_ms: 60_000 });
      // Wait until a reader is shown it running: what a reader is shown is committed (docs/durability.md).
      // The file itself is the server's alone while it lives.
      for (let tries = 0; ((await (await h.get(`/api/v1/executions/get?id=${id}`)).json()) as { state: string }).state !== "running"; tries++) {
        if (tries > 1000) throw new Error("gave up waiting for the server to show the execution running");
        await Bun.sleep(20);
      }
      child.kill("SIGKILL");
      await child.exited;

      const lines: string[] = [];
      const second = await serve(root, (line) => lines.push(line));
      servers.push(second);
      const { execution, events } = await readBack(second, id);
      expect(execution).toMatchObject({
        id,
        state: "failed",
        failure: { error_code: "interrupted", stage: "run", outcome_certainty: "not_applied", retryability: "safe" },
      });
      expect(execution.failure.message).toContain("the server stopped while it ran");
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
      expect(events.at(-1).type).toBe("execution.completed");
      for (const event of events) expectValidEvent(event);
      expect(lines.some((line) => line.includes("1 execution(s) unfinished") && line.includes("1 running → failed (interrupted)"))).toBe(true);
    });
  });
}
