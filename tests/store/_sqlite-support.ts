import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Limits } from "../../runtime/execution/limits.ts";
import { createSqliteStore, type SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { limitsWith, TestClock } from "./_fixtures.ts";

const dirs: string[] = [];

/** A database path in a fresh temporary folder; `removeDbDirs` deletes them all. */
export function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), "docket-sqlite-"));
  dirs.push(dir);
  return join(dir, "state.db");
}

/** Deletes every folder `tempDb` made (an afterAll). */
export function removeDbDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Opens a sqlite store on `path` with the test clock and some limits overridden. */
export function openStore(path: string, clock: TestClock, overrides: Partial<Limits> = {}): SqliteExecutionStore {
  return createSqliteStore({ path, limits: limitsWith(overrides), clock: clock.now, onListenerError: () => {}, onPersistError: (error) => {
    throw error;
  } });
}

/**
 * What a crash leaves of a running store: its files as they are at this instant (what the last
 * ticks wrote), copied to a new path. Nothing is written between two ticks, so the copy is whole.
 */
export function copyOfFiles(path: string): string {
  const copy = tempDb();
  copyFileSync(path, copy);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
  if (existsSync(`${path}-starting`)) copyFileSync(`${path}-starting`, `${copy}-starting`);
  return copy;
}

