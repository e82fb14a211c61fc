// The commit a build is stamped with (scripts/build.ts gitCommit): `docket --version` names it.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitCommit } from "../../scripts/build.ts";
import { REPO } from "../cli/_harness.ts";

test("the checkout's own commit, and unknown outside its own repository: no git installed, or sources inside another project (distribution tester, session 47: a crash, and the outer project's commit)", () => {
  expect(gitCommit(REPO)).toMatch(/^[0-9a-f]{12}(\+dirty)?$/);
  // A folder of the repository that is not its top is sources unpacked inside another project.
  expect(gitCommit(join(REPO, "scripts"))).toBe("unknown");
  const outside = mkdtempSync(join(tmpdir(), "docket-no-git-"));
  try {
    expect(gitCommit(outside)).toBe("unknown");
  } finally {
    rmSync(outside, { recursive: true, force: true });
  }
  const path = process.env.PATH;
  process.env.PATH = "/nonexistent";
  try {
    expect(gitCommit(REPO)).toBe("unknown");
  } finally {
    process.env.PATH = path;
  }
});
