// `npm run release` takes target names only: an option was dropped without a word and all six
// targets built in place of dist/release (distribution tester, session 41).
import { expect, test } from "bun:test";
import { join } from "node:path";

const RELEASE = join(import.meta.dir, "..", "..", "scripts", "release.ts");

test("release refuses an option it does not take before building anything, and --help says what it takes", () => {
  const refused = Bun.spawnSync([process.execPath, RELEASE, "--only=linux-x64"], { stdout: "pipe", stderr: "pipe" });
  expect(refused.exitCode).toBe(2);
  expect(refused.stderr.toString()).toContain('Unknown option "--only=linux-x64": release takes the names of targets only.');
  expect(refused.stdout.toString()).toBe("");
  const help = Bun.spawnSync([process.execPath, RELEASE, "--help"], { stdout: "pipe", stderr: "pipe" });
  expect(help.exitCode).toBe(0);
  expect(help.stdout.toString()).toContain("Usage: npm run release [-- TARGET…]");
  expect(help.stdout.toString()).toContain("linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64, windows-arm64");
});
