import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import type { SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { STORE_SCHEMA_VERSION } from "../../runtime/store/_sqlite-schema.ts";
import { allEvents, draft, idOf, newExecution, pathTo, TestClock } from "./_fixtures.ts";
import { openStore, tempDb } from "./_sqlite-support.ts";

// The tables as schema 1 (docket before the tables were keyed by `ord`) created them, verbatim.
const SCHEMA_1 = `
CREATE TABLE executions_1 (
  ord             INTEGER PRIMARY KEY,
  id              TEXT    NOT NULL UNIQUE,
  capability      TEXT    NOT NULL,
  state           TEXT    NOT NULL,
  finished_at     TEXT,
  last_sequence   INTEGER NOT NULL,
  retained_from   INTEGER NOT NULL,
  details_expired INTEGER NOT NULL DEFAULT 0,
  snapshot        TEXT    NOT NULL
);
CREATE TABLE events_1 (
  execution_id   TEXT    NOT NULL,
  sequence       INTEGER NOT NULL,
  first_sequence INTEGER NOT NULL,
  json           TEXT    NOT NULL,
  PRIMARY KEY (execution_id, sequence)
) WITHOUT ROWID;
`;
const INDEXES_1 = `
CREATE INDEX executions_by_state ON executions (state);
CREATE INDEX executions_by_capability ON executions (capability);
CREATE INDEX executions_expiring ON executions (finished_at) WHERE details_expired = 0 AND finished_at IS NOT NULL;
`;

/**
 * Rewrites a closed store's file into schema 1, row for row: what a file written by the docket
 * before schema 2 holds with the same executions, events and run identities.
 */
function downgradeToSchema1(path: string): void {
  const db = new Database(path);
  db.transaction(() => {
    db.run(SCHEMA_1);
    db.run("INSERT INTO executions_1 SELECT ord, id, capability, state, finished_at, last_sequence, retained_from, details_expired, snapshot FROM executions");
    db.run("INSERT INTO events_1 SELECT x.id, e.sequence, e.first_sequence, e.json FROM events e JOIN executions x ON x.ord = e.execution_ord");
    db.run("DROP TABLE events");
    db.run("DROP TABLE executions");
    db.run("ALTER TABLE executions_1 RENAME TO executions");
    db.run("ALTER TABLE events_1 RENAME TO events");
    db.run(INDEXES_1);
    db.run("PRAGMA user_version = 1");
  })();
  db.close();
}

/** Every execution the store holds, newest first, with all its events and the list counts. */
function everything(store: SqliteExecutionStore) {
  const snapshots: ExecutionSnapshot[] = [];
  for (let cursor: string | undefined = undefined; ; ) {
    const page = store.list({ limit: 4, cursor });
    snapshots.push(...page.items);
    if (page.next_cursor === null) break;
    cursor = page.next_cursor;
  }
  return { snapshots, events: snapshots.map((s) => allEvents(store, s.id)), counts: store.list().counts };
}

/** Schema migrations: a file an older docket wrote opens with everything it held. */
export function migrationCases(): void {
  describe("sqlite store schema migration", () => {
    test("sqlite store opens a schema 1 file with every execution, event, run identity, cursor and filter as before, and writes on in schema 2", () => {
      const path = tempDb();
      const clock = new TestClock();
      const first = openStore(path, clock, { events_retained: 20 });
      first.create(newExecution(1, { run_id: "run-1", input: { list: [1, "two", null] } }));
      first.recordRun({ run_id: "run-1", execution_id: idOf(1), capability: "demo.read", input_hash: "hash-1" });
      first.append(idOf(1), [draft.started(), draft.step("scan", "Scanning"), draft.log("reading")]);
      for (let i = 0; i < 40; i++) first.append(idOf(1), [draft.log(`line ${i}`)]);
      first.append(idOf(1), [draft.completed("succeeded", { files: 3 })]);
      for (let n = 2; n <= 9; n++) {
        first.create(newExecution(n, { capability: n % 2 ? "demo.read" : "demo.write" }));
        first.append(idOf(n), pathTo(n % 3 ? "succeeded" : "failed"));
      }
      // One left running: reopening recovers it, from the migrated rows.
      first.create(newExecution(10));
      first.append(idOf(10), [draft.started(), draft.log("working")]);
      first.flush();
      const page = first.list({ limit: 3 });
      first.close();
      downgradeToSchema1(path);

      const reopened = openStore(path, clock, { events_retained: 20 });
      expect(reopened.recovered.map((r) => r.id)).toEqual([idOf(10)]);
      const migrated = everything(reopened);
      expect(migrated.snapshots.map((s) => s.id)).toEqual(Array.from({ length: 10 }, (_, i) => idOf(10 - i)));
      expect(reopened.get(idOf(1))).toMatchObject({ state: "succeeded", output: { files: 3 }, input: { list: [1, "two", null] }, last_sequence: 45, retained_from: 26, truncated: true });
      expect(allEvents(reopened, idOf(1)).map((e) => e.sequence)).toEqual(Array.from({ length: 20 }, (_, i) => 26 + i));
      expect(allEvents(reopened, idOf(10)).map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.log", "execution.completed"]);
      expect(reopened.findRun("run-1")).toEqual({ run_id: "run-1", execution_id: idOf(1), capability: "demo.read", input_hash: "hash-1" });
      expect(reopened.list({ limit: 3, cursor: page.next_cursor! }).items.map((s) => s.id)).toEqual([idOf(7), idOf(6), idOf(5)]);
      // The recovered one failed (interrupted).
      expect(reopened.list({ state: "failed" }).items.map((s) => s.id)).toEqual([idOf(10), idOf(9), idOf(6), idOf(3)]);
      expect(reopened.list({ capability: "demo.write" }).items.map((s) => s.id)).toEqual([idOf(8), idOf(6), idOf(4), idOf(2)]);
      // New writes go on after the migrated rows.
      reopened.create(newExecution(11));
      reopened.append(idOf(11), pathTo("succeeded"));
      const after = everything(reopened);
      reopened.close();

      const file = new Database(path, { readonly: true });
      expect(file.query("PRAGMA user_version").values()).toEqual([[STORE_SCHEMA_VERSION]]);
      // The migrated file's tables and indexes are a new file's, statement for statement.
      const fresh = openStore(tempDb(), clock);
      const freshPath = fresh.path;
      fresh.close();
      const schemaOf = (db: Database) => db.query("SELECT type, name, sql FROM sqlite_schema ORDER BY name").all();
      const freshFile = new Database(freshPath, { readonly: true });
      expect(schemaOf(file)).toEqual(schemaOf(freshFile));
      expect(schemaOf(file).map((row) => (row as { name: string }).name)).toEqual(["events", "executions", "run_identities"]);
      freshFile.close();
      file.close();
      const third = openStore(path, clock, { events_retained: 20 });
      expect(everything(third)).toEqual(after);
      third.close();
    });
  });
}
