// How docket run, mcp and executions tell the checkout's server (runtime/cli/server-client.ts):
// a server in another pid namespace is judged by its lock and its answers, never by its pid.
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { unansweringServer } from "../../runtime/cli/server-client.ts";
import { lockCheckout } from "../../runtime/server/checkout-lock.ts";
import { ensureDocketDir, leasePath, type Lease } from "../../runtime/server/lease.ts";
import { removeTempDirs, tempCheckout } from "./_harness.ts";

afterAll(removeTempDirs);

describe("unansweringServer", () => {
  test("a lease of another pid namespace is not judged by its pid: the server is there while it holds the checkout's lock, and gone once it does not", () => {
    const root = tempCheckout();
    // The number names a process of the server's namespace: here it names nobody.
    const pid = spawnSync(process.execPath, ["-e", "0"]).pid!;
    const lease: Lease = { url: "http://127.0.0.1:9", pid, root, token: null, started_at: new Date().toISOString(), pid_namespace: "pid:[1]" };
    ensureDocketDir(root);
    writeFileSync(leasePath(root), JSON.stringify(lease));
    expect(unansweringServer(root)).toBeNull();
    const lock = lockCheckout(root)!;
    try {
      // Before the fix the lease was taken for a dead server's, and the run waited 5 s for another.
      expect(unansweringServer(root)).toEqual(lease);
    } finally {
      lock.release();
    }
    expect(unansweringServer(root)).toBeNull();
  });
});
