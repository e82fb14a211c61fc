// runtime/store/_sqlite-file-identity.ts: which changes of the store's files are someone else's.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storeFileIdentity } from "../../runtime/store/_sqlite-file-identity.ts";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "docket-identity-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a log cut back to its own bound is SQLite's (it cuts it there when it starts it over, in any write), not a cut; below its bound it is (checking tester, session 49: a healthy server refused every start after an expiry pass)", () => {
  const path = join(dir, "state.db");
  writeFileSync(path, Buffer.alloc(4096));
  writeFileSync(`${path}-wal`, Buffer.alloc(6_000_000));
  const bound = 5_000_000;
  const identity = storeFileIdentity(path, () => bound);
  identity.settled();
  // SQLite started the log over in a write the store did not settle after, and cut it to its bound.
  truncateSync(`${path}-wal`, bound);
  expect(identity.changed()).toBeNull();
  // Written on a little past the bound, still shorter than before: SQLite's too.
  truncateSync(`${path}-wal`, bound + 100_000);
  expect(identity.changed()).toBeNull();
  // Emptied by something else.
  truncateSync(`${path}-wal`, 0);
  expect(identity.changed()).toContain("-wal, the store's write-ahead log, was cut from 6000000 to 0 bytes");
  expect(identity.logCut()).toBe(true);
});
