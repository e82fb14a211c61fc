// A checkout's capabilities folder that is there but cannot be listed (foundation tester, session
// 48): a file, a link to itself or to nothing, a folder this user cannot read. Each is a load error
// naming it and what to do; the built-ins still run.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docket, fromSource, removeTempDirs, tempCheckout } from "./_harness.ts";

afterAll(removeTempDirs);

// Root reads any folder: the refusal is seen as another user, which needs root to become.
const asNobody = process.getuid?.() === 0 && Bun.which("su") !== null;

describe("a capabilities folder docket cannot list", () => {
  test.each([
    ["a file", (at: string) => writeFileSync(at, "x"), "capabilities it is a file, not a folder; capability files go in a folder of that name (move the file away)"],
    ["a link to itself", (at: string) => symlinkSync("capabilities", at), "capabilities it is a link that leads back to itself; remove it, or make it a folder or a link to one"],
    ["a link to nothing", (at: string) => symlinkSync("nowhere", at), "capabilities it is a link to a folder that does not exist; create the folder it points to, or remove the link"],
  ])("%s is a load error naming it; the built-ins run", async (_, make, said) => {
    const checkout = tempCheckout();
    make(join(checkout, "capabilities"));
    const listed = await docket(fromSource, ["capabilities", "list"], { cwd: checkout });
    expect(listed.code).toBe(0);
    expect(listed.stdout + listed.stderr).toContain(said);
    const ran = await docket(fromSource, ["run", "health.report"], { cwd: checkout });
    expect(ran.code).toBe(0);
  });

  test.skipIf(!asNobody)("one this user cannot read is a load error saying so, not an unexpected error with a stack, nor 'reinstall docket'", async () => {
    const checkout = tempCheckout();
    chmodSync(checkout, 0o755);
    const folder = join(checkout, "capabilities");
    mkdirSync(folder);
    writeFileSync(join(folder, "team.hello.ts"), "export default 1;\n");
    chmodSync(folder, 0o000);
    chownSync(checkout, 65534, 65534);
    const asUser = (args: string) => Bun.spawnSync(["su", "nobody", "-s", "/bin/sh", "-c", `cd ${checkout} && exec ${fromSource.argv().join(" ")} ${args}`], { stdout: "pipe", stderr: "pipe", timeout: 50_000 });
    const listed = asUser("capabilities list");
    const said = listed.stdout.toString() + listed.stderr.toString();
    expect(said).toContain("capabilities it cannot be read: permission denied; let this user read and enter it (chmod u+rx)");
    expect(said).not.toMatch(/unexpected error|EACCES|    at /);
    expect(listed.exitCode).toBe(0);
    const ran = asUser("run health.report");
    expect(ran.stderr.toString()).not.toContain("reinstall docket");
    expect(ran.exitCode).toBe(0);
    // Readable but not enterable: said of the folder, not of each file (checking tester, session 48).
    chmodSync(folder, 0o644);
    const entered = asUser("capabilities list");
    expect(entered.stdout.toString() + entered.stderr.toString()).toContain("capabilities it cannot be entered: permission denied; let this user enter it (chmod u+x)");
  }, 60_000);
});
