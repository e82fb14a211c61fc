import { afterAll, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecutionStore } from "../../runtime/store/store.ts";
import { createSqliteStore, type SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { storeContract } from "./contract.ts";
import { removeDbDirs } from "./_sqlite-support.ts";
import { restartCases } from "./_sqlite-restart.ts";
import { expiryCases } from "./_sqlite-expiry.ts";
import { fileErrorCases } from "./_sqlite-file-errors.ts";
import { serveCases } from "./_sqlite-serve.ts";
import { chunkCases } from "./_sqlite-chunks.ts";
import { durabilityCases } from "./_sqlite-durability.ts";
import { logSyncCases } from "./_sqlite-log-sync.ts";
import { forgetCases } from "./_sqlite-forget.ts";
import { migrationCases } from "./_sqlite-migration.ts";
import { headCases } from "./_sqlite-head.ts";
import { logBoundCases } from "./_sqlite-log-bound.ts";

// Every contract test opens a new database file, and creating one costs SQLite a sync or two to
// the disk (~5–15 ms here): the property test's 300 stores need more than the default 5 s.
setDefaultTimeout(60_000);

const dir = mkdtempSync(join(tmpdir(), "docket-sqlite-contract-"));
let n = 0;
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  removeDbDirs();
});

storeContract("sqlite", (limits, clock, onForgotUnsettled) => createSqliteStore({ path: join(dir, `${++n}.db`), limits, clock, onListenerError: () => {}, onForgotUnsettled }));

/**
 * The same store, written to the file after every call that changes it: every read then comes
 * from the file instead of the events still pending in memory.
 */
function writtenThrough(store: SqliteExecutionStore): ExecutionStore {
  return {
    ...store,
    create: (execution) => {
      const snapshot = store.create(execution);
      store.flush();
      return snapshot;
    },
    append: (id, drafts, options) => {
      const stored = store.append(id, drafts, options);
      store.flush();
      return stored;
    },
    recordRun: (identity) => {
      const recorded = store.recordRun(identity);
      store.flush();
      return recorded;
    },
  };
}

storeContract("sqlite, written through", (limits, clock, onForgotUnsettled) => writtenThrough(createSqliteStore({ path: join(dir, `${++n}.db`), limits, clock, onListenerError: () => {}, onForgotUnsettled })));

chunkCases();
restartCases();
expiryCases();
fileErrorCases();
serveCases();
durabilityCases();
logSyncCases();
forgetCases();
migrationCases();
headCases();
logBoundCases();
