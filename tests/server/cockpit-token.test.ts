import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { tempCheckout } from "./_support/servers.ts";

const TOKEN = "a-test-token-0123456789abcdef";
let server: DocketServer;
let root: string;

beforeAll(async () => {
  root = tempCheckout();
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token: TOKEN, runtime: "bun", mounts: defaultMounts, log: () => undefined });
});

afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, { headers, redirect: "manual" });

describe("cockpit sign-in with a token", () => {
  test("a token server refuses the cockpit without a token, and a wrong token in the link", async () => {
    expect((await get("/cockpit")).status).toBe(401);
    expect((await get("/cockpit?token=wrong-token-wrong-token")).status).toBe(401);
  });

  test("a browser opening the cockpit without a token is told, in a page, to open the link with the token once; a script gets the same in JSON", async () => {
    const page = await get("/cockpit/executions", { accept: "text/html,application/xhtml+xml" });
    expect(page.status).toBe(401);
    expect(page.headers.get("content-type")).toContain("text/html");
    const text = await page.text();
    expect(text).toContain("open /cockpit?token=&lt;token&gt; once");
    expect(text).toContain(".docket/lease.json");
    expect(text).not.toContain(TOKEN);
    const json = await get("/cockpit");
    expect(json.status).toBe(401);
    expect(((await json.json()) as { error: { message: string } }).error.message).toContain("open /cockpit?token=<token> once");
    // A stale cookie (a server restarted with another token) and a link of an earlier server get the page too; Accept is read in any case.
    for (const [path, headers] of [
      ["/cockpit", { accept: "text/html", cookie: "docket_token=an-earlier-servers-token" }],
      ["/cockpit?token=an-earlier-servers-token", { accept: "text/html" }],
      ["/cockpit", { accept: "TEXT/HTML" }],
    ] as const) {
      const refused = await get(path, headers);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("content-type")).toContain("text/html");
      expect(await refused.text()).not.toContain(TOKEN);
    }
    // The API keeps its own words.
    expect(((await (await get("/api/v1/capabilities/list")).json()) as { error: { message: string } }).error.message).toBe("This server requires a token: send Authorization: Bearer <token>.");
  });

  test("the printed link sets an HttpOnly SameSite=Strict cookie and redirects to the page without the token", async () => {
    const response = await get("/cockpit/executions?state=running&token=" + TOKEN);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/cockpit/executions?state=running");
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toContain(`docket_token=${TOKEN}`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
  });

  test("the cookie opens the cockpit, the API and the live channel", async () => {
    const cookie = `docket_token=${TOKEN}`;
    expect((await get("/cockpit", { cookie })).status).toBe(200);
    expect((await get("/api/v1/capabilities/list", { cookie })).status).toBe(200);
    const ws = new WebSocket(`${server.url.replace("http", "ws")}/events`, { headers: { cookie } } as unknown as string[]);
    const first = await new Promise<string>((resolve, reject) => {
      ws.onmessage = (m) => resolve(String(m.data));
      ws.onerror = () => reject(new Error("the live channel refused the cookie"));
    });
    ws.close();
    expect(JSON.parse(first).type).toBe("stream.ready");
  });
});
