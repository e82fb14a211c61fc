import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeSync } from "node:fs";
import { openStartingJournal, SETTLE_LINES, type WriteLine } from "../../runtime/store/_sqlite-starting.ts";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import { limitsWith, newExecution, idOf } from "./_fixtures.ts";

/** A disk the test fills and frees: "full" refuses every write, "part" takes 6 bytes of the next one. */
function disk() {
  let state: "free" | "full" | "part" = "free";
  const write: WriteLine = (fd, text) => {
    if (state === "full") throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    if (state === "part") {
      state = "full";
      return writeSync(fd, text.slice(0, 6));
    }
    return writeSync(fd, text);
  };
  return { write, set: (next: typeof state) => (state = next) };
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function databasePath(): string {
  const dir = mkdtempSync(join(tmpdir(), "docket-starting-"));
  dirs.push(dir);
  return join(dir, "state.db");
}

describe("the starting journal (runtime/store/_sqlite-starting.ts)", () => {
  test("notes are whole lines in a private file; a settled write empties it only once it holds SETTLE_LINES; empty() at once", () => {
    const path = databasePath();
    const journal = openStartingJournal(path);
    expect(statSync(`${path}-starting`).mode & 0o777).toBe(0o600);
    expect(journal.note("x-1")).toBe(true);
    expect(journal.note("x-2")).toBe(true);
    journal.settled();
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("x-1\nx-2\n");
    for (let i = 2; i < SETTLE_LINES; i++) journal.note(`x-${i + 1}`);
    journal.settled();
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("");
    journal.note("x-9");
    journal.empty();
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("");
    // Appends go on at the end after a truncation.
    journal.note("x-10");
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("x-10\n");
    journal.close();
    expect(journal.note("x-11")).toBe(false);
  });

  test("what the last process left: whole lines only, those the caller keeps, whatever the file's size or garbage", () => {
    const path = databasePath();
    // A garbage line longer than the read chunk, ids around it, and a line cut short at the end.
    writeFileSync(`${path}-starting`, `x-1\n${"g".repeat(3 * 1024 * 1024)}\nx-2\nx-3\n`);
    appendFileSync(`${path}-starting`, "x-4");
    const journal = openStartingJournal(path);
    expect(journal.left((id) => id !== "x-3")).toEqual(new Set(["x-1", "x-2"]));
    journal.close();
  });

  test("a file wider than private is narrowed; a symbolic link in its place is refused", () => {
    const path = databasePath();
    writeFileSync(`${path}-starting`, "", { mode: 0o644 });
    openStartingJournal(path).close();
    expect(statSync(`${path}-starting`).mode & 0o777).toBe(0o600);
    const other = databasePath();
    const target = join(other, "..", "elsewhere");
    writeFileSync(target, "kept\n");
    symlinkSync(target, `${other}-starting`);
    expect(() => openStartingJournal(other)).toThrow(/ELOOP|symbolic/);
    expect(readFileSync(target, "utf8")).toBe("kept\n");
  });

  test("a file removed or replaced under the journal is made again, empty, after the next settled write; one that cannot be made again takes no note until it can (durability tester, session 45)", () => {
    const path = databasePath();
    const journal = openStartingJournal(path);
    expect(journal.note("x-1")).toBe(true);
    rmSync(`${path}-starting`);
    // Between the removal and the write that commits it, a note goes to the file still open.
    expect(journal.note("x-2")).toBe(true);
    journal.settled();
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("");
    expect(journal.note("x-3")).toBe(true);
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("x-3\n");
    // Another file put in its place: taken over, emptied (what it held is no note of this store's).
    rmSync(`${path}-starting`);
    writeFileSync(`${path}-starting`, "someone else's\n", { mode: 0o644 });
    journal.settled();
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("");
    expect(statSync(`${path}-starting`).mode & 0o777).toBe(0o600);
    expect(journal.note("x-4")).toBe(true);
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("x-4\n");
    // A link put there is never written through: no note until the file can be made again.
    const target = join(path, "..", "elsewhere");
    writeFileSync(target, "kept\n");
    rmSync(`${path}-starting`);
    symlinkSync(target, `${path}-starting`);
    journal.settled();
    expect(journal.note("x-5")).toBe(false);
    expect(journal.writable()).toBe(false);
    expect(readFileSync(target, "utf8")).toBe("kept\n");
    rmSync(`${path}-starting`);
    expect(journal.note("x-5")).toBe(true);
    expect(readFileSync(`${path}-starting`, "utf8")).toBe("x-5\n");
    journal.close();
  });

  test("a line written in part is no note; the next note ends the fragment first, and the open skips it", () => {
    const path = databasePath();
    const d = disk();
    const journal = openStartingJournal(path, d.write);
    expect(journal.note(idOf(1))).toBe(true);
    d.set("part");
    expect(journal.note(idOf(2))).toBe(false);
    expect(journal.note(idOf(3))).toBe(false);
    d.set("free");
    expect(journal.note(idOf(3))).toBe(true);
    expect(readFileSync(`${path}-starting`, "utf8")).toBe(`${idOf(1)}\n${idOf(2).slice(0, 6)}\n${idOf(3)}\n`);
    journal.close();
    const again = openStartingJournal(path);
    // What the open asks for (the queued executions' ids): the fragment matches none, 2 was never noted.
    expect(again.left((id) => [idOf(1), idOf(2), idOf(3)].includes(id))).toEqual(new Set([idOf(1), idOf(3)]));
    again.close();
  });

  test("a store whose notes are refused reports it once as its storage fault, and clears it by itself once a note could be written, with nobody left to note", async () => {
    const path = databasePath();
    const d = disk();
    const reported: string[] = [];
    const store = createSqliteStore({ path, limits: limitsWith({}), journalWrite: d.write, onPersistError: (error) => reported.push((error as Error).message) });
    store.create(newExecution(1));
    await store.durable();
    d.set("full");
    expect(store.starting(idOf(1))).toBe(false);
    expect(store.starting(idOf(1))).toBe(false);
    expect(store.storageFault()?.reason).toMatch(/cannot note a start in .*state\.db-starting/);
    // Not damage: starts wait, and nobody is told to move the store's file aside (checking tester, session 45).
    expect(store.storageFault()?.damaged).toBeUndefined();
    expect(reported).toHaveLength(1);
    d.set("free");
    expect(store.storageFault()).toBeNull();
    expect(store.starting(idOf(1))).toBe(true);
    store.close();
  });
});
