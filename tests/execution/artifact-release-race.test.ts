import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeArtifacts } from "../../runtime/execution/artifact-files.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * A handler can swap `.docket/artifacts` for a link while another execution is released: the
 * release checked the folders, then removed by path, and deleted the victim's folder of the same
 * id outside the checkout (a tester's race: 15 of 40). Raced here by a process of its own.
 */
describe("removeArtifacts against a link swapped in while it runs", () => {
  test("never removes anything outside the checkout's own artifacts folder", async () => {
    const root = mkdtempSync(join(tmpdir(), "docket-race-"));
    const victim = mkdtempSync(join(tmpdir(), "docket-victim-"));
    dirs.push(root, victim);
    const artifacts = join(root, ".docket", "artifacts");
    const real = join(root, ".docket", "real-artifacts");
    mkdirSync(artifacts, { recursive: true });
    mkdirSync(real, { recursive: true });
    // Swaps .docket/artifacts between the real folder and a link to the victim, for 3 s at most.
    const swapper = Bun.spawn([process.execPath, "-e", `
      const { renameSync, symlinkSync, rmSync } = require("node:fs");
      const [artifacts, real, victim, link] = ${JSON.stringify([artifacts, real, victim, join(root, ".docket", "link")])};
      const end = Date.now() + 3000;
      while (Date.now() < end) {
        try { renameSync(artifacts, real); symlinkSync(victim, link); renameSync(link, artifacts); } catch {}
        try { rmSync(artifacts); renameSync(real, artifacts); } catch {}
      }
    `], { stdout: "ignore", stderr: "ignore" });
    let removed = 0;
    const end = Date.now() + 2500;
    for (let i = 0; Date.now() < end && i < 5000; i++) {
      const id = `x-20260908T010203Z-${i.toString(16).padStart(8, "0")}`;
      mkdirSync(join(victim, id), { recursive: true });
      writeFileSync(join(victim, id, "keep.txt"), "not docket's");
      try {
        mkdirSync(join(artifacts, id));
        writeFileSync(join(artifacts, id, "a.txt"), "docket's");
      } catch {
        // the swapper moved it meanwhile (or the link led to the victim's own folder)
      }
      removed += removeArtifacts(root, id);
      expect(existsSync(join(victim, id, "keep.txt"))).toBe(true);
    }
    await swapper.exited;
    // The race ran: some releases found their folder and removed it.
    expect(removed).toBeGreaterThan(0);
  }, 20_000);
});
