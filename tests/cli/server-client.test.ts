// How docket run, mcp and executions tell the checkout's server (runtime/cli/server-client.ts):
// a server in another pid namespace is judged by its lock and its answers, never by its pid.
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { checkoutHolder, NO_ADDRESS, serverClient, ServerUnreachableError } from "../../runtime/cli/server-client.ts";
import { lockCheckout } from "../../runtime/server/checkout-lock.ts";
import { ensureDocketDir, leasePath, ownPidNamespace, type Lease } from "../../runtime/server/lease.ts";
import { removeTempDirs, tempCheckout } from "./_harness.ts";

afterAll(removeTempDirs);

describe("checkoutHolder", () => {
  test("a lease of another pid namespace is not judged by its pid: the server is there while it holds the checkout's lock, and gone once it does not", () => {
    const root = tempCheckout();
    // The number names a process of the server's namespace: here it names nobody.
    const pid = spawnSync(process.execPath, ["-e", "0"]).pid!;
    const lease: Lease = { url: "http://127.0.0.1:9", pid, root, token: null, started_at: new Date().toISOString(), pid_namespace: "pid:[1]" };
    ensureDocketDir(root);
    writeFileSync(leasePath(root), JSON.stringify(lease));
    expect(checkoutHolder(root)).toBeNull();
    const lock = lockCheckout(root)!;
    try {
      // Before the fix the lease was taken for a dead server's, and the run waited 5 s for another.
      expect(checkoutHolder(root)).toEqual(lease);
    } finally {
      lock.release();
    }
    expect(checkoutHolder(root)).toBeNull();
  });
});

describe("checkoutHolder and a stale lease", () => {
  test.skipIf(process.platform !== "linux")("a lease whose pid another live process took is not the holder's: the lock's holder is named, as a server with no lease yet (checking tester)", async () => {
    const root = tempCheckout();
    // A dead server's lease, its pid now a `sleep`'s, in this pid namespace.
    const other = Bun.spawn(["sleep", "30"]);
    try {
      ensureDocketDir(root);
      writeFileSync(leasePath(root), JSON.stringify({ url: "http://127.0.0.1:9", pid: other.pid, root, token: null, started_at: new Date(0).toISOString(), pid_namespace: ownPidNamespace() }));
      const lock = lockCheckout(root)!;
      try {
        // Before, the lease was taken as the holder's: the `sleep` was "the docket server", to be resumed or killed.
        expect(checkoutHolder(root)).toMatchObject({ pid: process.pid, url: NO_ADDRESS });
      } finally {
        lock.release();
      }
    } finally {
      other.kill();
    }
  });
});

describe("serverClient", () => {
  test("serverClient takes an answer whose body stops coming for its time, or is not JSON, for no answer (never for a success with nothing in it); one that keeps coming is read whole", async () => {
    const started = new TextEncoder().encode('{"state":"succ');
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        // Its status and the start of its body are sent, and the rest never is.
        if (new URL(request.url).pathname === "/cut") return new Response(new ReadableStream({ start: (c) => c.enqueue(started) }), { headers: { "content-type": "application/json" } });
        if (new URL(request.url).pathname === "/slow") {
          const parts = ['{"parts":[', ...Array.from({ length: 10 }, (_, i) => (i === 0 ? "0" : `,${i}`)), "]}"];
          return new Response(
            new ReadableStream({
              async pull(c) {
                const part = parts.shift();
                if (part === undefined) return c.close();
                await Bun.sleep(part.startsWith("{") ? 0 : 100);
                c.enqueue(new TextEncoder().encode(part));
              },
            }),
            { headers: { "content-type": "application/json" } },
          );
        }
        return new Response("<html>a proxy's page</html>", { headers: { "content-type": "text/html" } });
      },
    });
    try {
      const client = serverClient({ url: server.url.origin, pid: process.pid, root: "/nowhere", token: null, started_at: new Date().toISOString(), pid_namespace: "pid:[1]" });
      const cut = client.request("GET", "/cut", { timeoutMs: 300 });
      await expect(cut).rejects.toThrow(ServerUnreachableError);
      await expect(cut).rejects.toThrow("no answer in time");
      // One that keeps coming, a part every 100 ms for 1 s, is read whole: the time is a bound on silence.
      const slow = await client.request("GET", "/slow", { timeoutMs: 300 });
      expect(slow).toEqual({ ok: true, status: 200, body: { parts: Array.from({ length: 10 }, (_, i) => i) } });
      const page = client.request("GET", "/page");
      await expect(page).rejects.toThrow(ServerUnreachableError);
      await expect(page).rejects.toThrow("HTTP 200 whose body is not JSON");
    } finally {
      server.stop(true);
    }
  });
});
