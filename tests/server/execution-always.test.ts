// `execution: "always"`: a capability that only makes sense as an execution has no direct call on
// any surface (HTTP route, OpenAPI, MCP tool, the cockpit's Run button), and starts as usual.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { toolTargets } from "../../runtime/mcp/tools.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer } from "../../runtime/server/serve.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { useDocketModules } from "../_support/capability-fixtures.ts";
import { catalog, registered } from "../_support/registered.ts";
import { client } from "./_support/http.ts";
import { tempCheckout, type StartedServer } from "./_support/servers.ts";
import * as v from "valibot";

const ARCHIVE = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "report.archive-notes",
  title: "Archive notes",
  description: "Writes the notes as an artifact: only useful as an execution.",
  effect: "read",
  execution: "always",
  input: v.object({ notes: v.optional(v.string(), "hello") }),
  output: v.object({ bytes: v.number() }),
  async handler(input, ctx) {
    const written = await ctx.artifacts.write("notes.txt", input.notes);
    return { bytes: written.bytes };
  },
});
`;

let server: StartedServer;

beforeAll(async () => {
  useDocketModules();
  const root = tempCheckout();
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "report.archive-notes.ts"), ARCHIVE);
  const started = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits({}), capabilityDirs: [], token: null, runtime: "bun", log: () => undefined, mounts: defaultMounts });
  server = {
    url: started.url,
    token: started.token,
    root,
    stop: async () => {
      await started.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
});

afterAll(() => server.stop());

describe('execution: "always"', () => {
  test("its HTTP route refuses a direct call with not_runnable and says how to start it", async () => {
    const response = await client(server).post("/api/v1/report/archive-notes", {});
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { error_code: string; message: string; suggestion: string } };
    expect(error.error_code).toBe("not_runnable");
    expect(error.message).toContain('report.archive-notes runs only as an execution (execution: "always")');
    expect(error.suggestion).toContain('executions.start {"capability":"report.archive-notes"}');
  });

  test("its HTTP route answers not_runnable whatever the input: a wrong one, malformed JSON, a GET with a bad query", async () => {
    const http = client(server);
    const answers = [
      await http.post("/api/v1/report/archive-notes", { notes: 5 }),
      await http.post("/api/v1/report/archive-notes", "{not json"),
      await http.post("/api/v1/report/archive-notes?notes=x", {}),
      await http.get("/api/v1/report/archive-notes?notes=a&notes=b"),
    ];
    for (const response of answers) {
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { error_code: string } }).error.error_code).toBe("not_runnable");
    }
  });

  test("it starts as an execution and writes its artifact", async () => {
    const http = client(server);
    const id = await http.start("report.archive-notes", { notes: "twelve bytes" });
    const completed = await http.completed(id);
    expect(completed.data).toMatchObject({ state: "succeeded", output: { bytes: 12 } });
  });

  test("OpenAPI has no path for it, and capabilities.list says it runs only as an execution", async () => {
    const http = client(server);
    const openapi = (await (await http.get("/api/v1/openapi.json")).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).not.toContain("/api/v1/report/archive-notes");
    expect(Object.keys(openapi.paths)).toContain("/api/v1/executions/start");
    const listed = (await (await http.get("/api/v1/capabilities/list")).json()) as { capabilities: Array<{ id: string; execution: string }> };
    expect(listed.capabilities.find((c) => c.id === "report.archive-notes")).toMatchObject({ execution: "always" });
  });

  test("the cockpit offers Run as execution and no Run button, and refuses a posted direct call", async () => {
    const http = client(server);
    const page = await (await http.get("/cockpit/capabilities/report.archive-notes")).text();
    expect(page).toContain('value="start"');
    expect(page).toContain("Run as execution");
    expect(page).not.toContain('value="call"');
    expect(page).toContain("an execution only");
    const origin = new URL(server.url).origin;
    const posted = await http.send("/cockpit/capabilities/report.archive-notes", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: origin },
      body: "mode=call",
    });
    expect(posted.status).toBe(400);
    expect(await posted.text()).toContain("report.archive-notes runs only as an execution: use");
  });
});

describe("MCP tools", () => {
  test("tools/list over /mcp has no direct-call tool for it; docket_execution_start is there", async () => {
    const mcp = new Client({ name: "always-test", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL("/mcp", server.url)));
    try {
      const names = (await mcp.listTools()).tools.map((t) => t.name);
      expect(names).toContain("docket_execution_start");
      expect(names).toContain("files_digest");
      expect(names).not.toContain("report_archive-notes");
      // Called anyway (an agent guessing the name), the refusal names the tool to use instead.
      const refused = await mcp.callTool({ name: "report_archive-notes", arguments: {} }).catch((error: Error) => error);
      expect(String((refused as Error).message)).toContain('report.archive-notes runs only as an execution: call docket_execution_start with {"capability":"report.archive-notes"}');
      const typo = await mcp.callTool({ name: "files_digets", arguments: {} }).catch((error: Error) => error);
      expect(String((typo as Error).message)).toContain('Did you mean "files_digest"?');
    } finally {
      await mcp.close();
    }
  });

  test("toolTargets offers no direct-call tool for an execution-only capability", () => {
    const def = (id: string, execution?: "always") => ({
      id,
      title: id,
      description: id,
      effect: "read" as const,
      execution,
      input: v.object({}),
      output: v.object({}),
      handler: () => ({}),
    });
    const plane = catalog([registered(def("report.archive-notes", "always"), { file: "/x/report.archive-notes.ts" }), registered(def("hello.greet"), { file: "/x/hello.greet.ts" })]);
    const names = [...toolTargets({ capabilities: plane.list, capability: plane.get }).keys()];
    expect(names).toContain("hello_greet");
    expect(names).not.toContain("report_archive-notes");
  });
});
