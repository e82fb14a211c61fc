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
      ["/cockpit", { accept: "text/html", cookie: `docket_session_${new URL(server.url).port}=an-earlier-runs-session` }],
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

  test("the printed link sets an HttpOnly SameSite=Strict cookie of this port, holding a value of this run and never the token, and redirects to the page without the token", async () => {
    const response = await get("/cockpit/executions?state=running&token=" + TOKEN);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/cockpit/executions?state=running");
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toStartWith(`docket_session_${new URL(server.url).port}=`);
    expect(cookie).not.toContain(TOKEN);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
  });

  test("the session cookie opens the cockpit, the API and the live channel; the token in a cookie opens nothing", async () => {
    const cookie = await signIn(server);
    expect((await get("/cockpit", { cookie })).status).toBe(200);
    expect((await get("/api/v1/capabilities/list", { cookie })).status).toBe(200);
    const ws = new WebSocket(`${server.url.replace("http", "ws")}/events`, { headers: { cookie } } as unknown as string[]);
    const first = await new Promise<string>((resolve, reject) => {
      ws.onmessage = (m) => resolve(String(m.data));
      ws.onerror = () => reject(new Error("the live channel refused the cookie"));
    });
    ws.close();
    expect(JSON.parse(first).type).toBe("stream.ready");
    const port = new URL(server.url).port;
    for (const tokenCookie of [`docket_token=${TOKEN}`, `docket_session_${port}=${TOKEN}`]) {
      expect((await get("/api/v1/capabilities/list", { cookie: tokenCookie })).status).toBe(401);
    }
  });

  test("the session cookie is honoured on requests of the cockpit's own pages and the address bar, never from a page of another port of this host (Sec-Fetch-Site: same-site)", async () => {
    const cookie = await signIn(server);
    for (const site of ["same-origin", "none"]) {
      expect((await get("/api/v1/capabilities/list", { cookie, "sec-fetch-site": site })).status).toBe(200);
    }
    for (const site of ["same-site", "cross-site"]) {
      const refused = await get("/api/v1/capabilities/list", { cookie, "sec-fetch-site": site });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("another port of this host");
      const page = await get("/cockpit", { cookie, "sec-fetch-site": site, accept: "text/html" });
      expect(page.status).toBe(401);
      expect(await page.text()).toContain("another port of this host");
    }
    // A token sent decides alone, whatever page asks: the Bearer header is no browser's doing.
    expect((await get("/api/v1/capabilities/list", { authorization: `Bearer ${TOKEN}`, "sec-fetch-site": "same-site" })).status).toBe(200);
  });

  test("two servers of one host with one token each keep their own cookie: signing in to the second leaves the first signed in", async () => {
    const otherRoot = tempCheckout();
    const other = await startServer({ cwd: otherRoot, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token: TOKEN, runtime: "bun", mounts: defaultMounts, log: () => undefined });
    try {
      const first = await signIn(server);
      const second = await signIn(other);
      expect(first.split("=")[0]).not.toBe(second.split("=")[0]);
      // What a browser sends to either: both cookies, since it keeps one jar per host.
      const both = `${first}; ${second}`;
      expect((await fetch(`${server.url}/cockpit`, { headers: { cookie: both } })).status).toBe(200);
      expect((await fetch(`${other.url}/cockpit`, { headers: { cookie: both } })).status).toBe(200);
      // One server's session opens no other server, though both have the same token.
      expect((await fetch(`${other.url}/cockpit`, { headers: { cookie: first.replace(/^[^=]+/, second.split("=")[0]!) } })).status).toBe(401);
    } finally {
      await other.stop();
      rmSync(otherRoot, { recursive: true, force: true });
    }
  });
});

/** Opens the printed link of `on` and answers the cookie it set, as `name=value`. */
async function signIn(on: DocketServer): Promise<string> {
  const response = await fetch(`${on.url}/cockpit?token=${TOKEN}`, { redirect: "manual" });
  expect(response.status).toBe(303);
  return (response.headers.get("set-cookie") ?? "").split(";")[0]!;
}
