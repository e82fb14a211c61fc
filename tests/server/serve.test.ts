import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { tempCheckout } from "./_support/servers.ts";

let server: DocketServer | null = null;
let root: string | null = null;

afterEach(async () => {
  await server?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
  server = null;
  root = null;
});

describe("startServer", () => {
  test("startServer refuses a port another server already listens on, instead of sharing it", async () => {
    registerDocketModules();
    root = tempCheckout();
    server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: () => undefined });
    const port = Number(new URL(server.url).port);
    const other = tempCheckout();
    try {
      // A second checkout's server on the same port would otherwise take some of the first one's connections.
      const second = startServer({ cwd: other, port, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: () => undefined });
      void second.then((wrong) => wrong.stop(), () => undefined);
      await expect(second).rejects.toThrow(/in use|EADDRINUSE/i);
      for (let i = 0; i < 5; i++) {
        const plane = (await (await fetch(`${server.url}/api/v1/plane`)).json()) as { root: string };
        expect(plane.root).toBe(server.root);
      }
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test("startServer says once on its log which capability files did not load, and serves the rest", async () => {
    registerDocketModules();
    root = tempCheckout();
    mkdirSync(join(root, "capabilities"));
    writeFileSync(join(root, "capabilities", "team.broken.ts"), 'import { capability } from "docket";\nexport default capability({ id: "team.broken", \n  oops oops\n});\n');
    writeFileSync(
      join(root, "capabilities", "team.ok.ts"),
      'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "team.ok", title: "OK", description: "fine", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n',
    );
    const lines: string[] = [];
    server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: (line) => lines.push(line) });
    expect(lines[0]).toContain(`at ${server.url}`);
    const loadLines = lines.filter((line) => line.startsWith("docket could not load"));
    expect(loadLines).toHaveLength(1);
    expect(loadLines[0]).toContain("team.broken.ts:3");
    const listed = (await (await fetch(`${server.url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }>; load_errors: Array<{ file: string }> };
    expect(listed.capabilities.map((c) => c.id)).toContain("team.ok");
    expect(listed.load_errors.map((e) => e.file)).toEqual([join(root, "capabilities", "team.broken.ts")]);
  });

  test("startServer refuses --allow-host localhost, or a name under it: a browser's localhost may be another program at this port", async () => {
    for (const name of ["localhost", "LocalHost.", "app.localhost"]) {
      root = tempCheckout();
      const start = startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], allowedHosts: [name], runtime: "bun", log: () => undefined });
      void start.then((wrong) => wrong.stop(), () => undefined);
      await expect(start).rejects.toThrow(`--allow-host ${name} is refused`);
      rmSync(root, { recursive: true, force: true });
      root = null;
    }
  });
});
