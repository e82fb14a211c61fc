import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { StoreFileError } from "../../runtime/store/sqlite-store.ts";
import { newExecution, TestClock } from "./_fixtures.ts";
import { copyOfFiles, openStore, tempDb } from "./_sqlite-support.ts";
import { asFileError } from "../../runtime/store/_sqlite-open.ts";

/** The error a store open throws, or a failure when it opens. */
function openError(path: string): StoreFileError {
  try {
    openStore(path, new TestClock()).close();
  } catch (error) {
    expect(error).toBeInstanceOf(StoreFileError);
    return error as StoreFileError;
  }
  throw new Error(`the store opened ${path}`);
}

/** A file the store cannot use is refused with a message naming it, never emptied. */
export function fileErrorCases(): void {
  describe("sqlite store file errors", () => {
    test("sqlite store refuses a file that is not a database, naming it and what to do, and leaves it as it was", () => {
      const path = tempDb();
      const garbage = "this is not a database, but somebody's notes\n".repeat(200);
      writeFileSync(path, garbage);
      const error = openError(path);
      expect(error.message).toContain(`Cannot open the execution store ${path}:`);
      expect(error.message).toContain("not a database");
      expect(error.message).toContain("Move the file aside");
      expect(error.message).toContain("--store memory");
      expect(readFileSync(path, "utf8")).toBe(garbage);
    });

    test("sqlite store refuses a database written by a newer docket, and one that is not a docket store", () => {
      const newer = tempDb();
      const db = new Database(newer);
      db.run("PRAGMA user_version = 99");
      db.close();
      expect(openError(newer).message).toContain("written by a newer docket (store schema 99; this one reads up to 3)");

      const foreign = tempDb();
      const other = new Database(foreign);
      other.run("CREATE TABLE notes (text TEXT)");
      other.run("INSERT INTO notes VALUES ('keep me')");
      other.close();
      expect(openError(foreign).message).toContain("it is an SQLite database, but not a docket execution store");
      const check = new Database(foreign, { readonly: true });
      expect(check.query("SELECT text FROM notes").values()).toEqual([["keep me"]]);
      check.close();
    });

    test("sqlite store that cannot open for want of space says to free space, not to move its history aside", () => {
      const path = tempDb();
      for (const error of [Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" }), Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })]) {
        const refused = asFileError(path, error);
        expect(refused.message).toContain(`Cannot open the execution store ${path}: ${error.message}`);
        expect(refused.message).toContain("free some space and start again");
        expect(refused.message).not.toContain("Move the file aside");
      }
      expect(asFileError(path, Object.assign(new Error("file is not a database"), { code: "SQLITE_NOTADB" })).message).toContain("Move the file aside");
    });

    test("a store file another user owns, or a read-only disk, is answered with whose it is and the way out, not 'move it aside' (checking tester, session 42)", () => {
      const path = tempDb();
      writeFileSync(path, "");
      const me = process.getuid?.();
      // Another user's file: root can give one away; anyone else sees their own, and only the general advice.
      const other = me === 0 ? 65534 : me;
      if (me === 0) chownSync(path, other!, other!);
      for (const code of ["EACCES", "EPERM", "SQLITE_READONLY_DIRECTORY"]) {
        const refused = asFileError(path, Object.assign(new Error(`permission denied, open '${path}'`), { code }));
        expect(refused.message).toContain(`Cannot open the execution store ${path}: permission denied, open '${path}' (${code})`);
        expect(refused.message).not.toContain("Move the file aside");
        expect(refused.message).toContain("nothing in the file is lost, and moving it aside would only hide its history.");
        if (me === 0) expect(refused.message).toContain(`${path} belongs to nobody (uid 65534), not to this user (root, uid 0): run docket as that user, or give the folder to this one (sudo chown -R 0 ${dirname(path)})`);
        else expect(refused.message).toContain("This user may not write it or its folder");
      }
      if (me === 0) {
        // Only the log another user's (a sudo run's): SQLite's "unable to open" is answered with whose it is (checking tester).
        const own = tempDb();
        writeFileSync(own, "");
        writeFileSync(`${own}-wal`, "");
        chownSync(`${own}-wal`, 65534, 65534);
        const cannot = asFileError(own, Object.assign(new Error("unable to open database file"), { code: "SQLITE_CANTOPEN" }));
        expect(cannot.message).toContain(`${own}-wal belongs to nobody (uid 65534), not to this user (root, uid 0)`);
        expect(cannot.message).not.toContain("Move the file aside");
      }
      // An "unable to open" with every file this user's is not about owners: the general advice.
      const plain = tempDb();
      writeFileSync(plain, "");
      expect(asFileError(plain, Object.assign(new Error("unable to open database file"), { code: "SQLITE_CANTOPEN" })).message).toContain("Move the file aside");
      const readOnly = asFileError(path, Object.assign(new Error("EROFS: read-only file system, open"), { code: "EROFS" }));
      expect(readOnly.message).toContain("The file system holding it is read-only: serve from a checkout on a writable disk, or start with --store memory");
      expect(readOnly.message).not.toContain("Move the file aside");
    });

    test("sqlite store refuses an empty or missing file beside a log that holds a history, naming both, and leaves the log as it was (tester D3)", () => {
      const clock = new TestClock();
      const path = tempDb();
      const live = openStore(path, clock);
      for (let n = 1; n <= 5; n++) live.create(newExecution(n));
      live.flush();
      for (const lose of [(copy: string) => truncateSync(copy, 0), (copy: string) => rmSync(copy)]) {
        // What a crash leaves (the history in the log), then the database file emptied or lost.
        const copy = copyOfFiles(path);
        const log = readFileSync(`${copy}-wal`);
        expect(log.byteLength).toBeGreaterThan(0);
        lose(copy);
        const error = openError(copy);
        expect(error.message).toContain(`Cannot open the execution store ${copy}:`);
        expect(error.message).toContain(`${copy}-wal holds ${log.byteLength} bytes`);
        expect(error.message).toContain("Put back the state.db");
        expect(readFileSync(`${copy}-wal`).equals(log)).toBe(true);
        // Refused again, the same way: nothing was made in its place.
        expect(openError(copy).message).toContain(`${copy}-wal holds ${log.byteLength} bytes`);
      }
      live.close();
    });

    test("sqlite store refuses a path it cannot open as a file", () => {
      const path = tempDb();
      mkdirSync(path);
      expect(openError(path).message).toContain(path);
    });

    test("sqlite store opens no file through a link: a state.db linked outside the checkout is refused, the file it leads to untouched (tester Z1)", () => {
      const path = tempDb();
      const victim = `${path}.elsewhere`;
      writeFileSync(victim, "");
      chmodSync(victim, 0o644);
      symlinkSync(victim, path);
      const error = openError(path);
      expect(error.message).toContain(`Cannot open the execution store ${path}: it is a symbolic link`);
      expect(error.message).toContain(`Remove the link (rm ${path})`);
      expect(statSync(victim).mode & 0o777).toBe(0o644);
      expect(statSync(victim).size).toBe(0);
      expect(existsSync(`${victim}-wal`) || existsSync(`${path}-wal`)).toBe(false);
    });

    test("a folder or a pipe where a companion file goes is named, with what to move; the history is not what to give up, and is kept (testers, session 34)", () => {
      for (const [suffix, make, what] of [
        ["-starting", (at: string) => mkdirSync(at), "a folder"],
        ["-wal", (at: string) => mkdirSync(at), "a folder"],
        ["-starting", (at: string) => Bun.spawnSync(["mkfifo", at]), "not a regular file"],
      ] as const) {
        const path = tempDb();
        const store = openStore(path, new TestClock());
        store.create(newExecution(7));
        store.close();
        rmSync(`${path}${suffix}`, { force: true });
        make(`${path}${suffix}`);
        const error = openError(path);
        expect(error.message).toContain(`Cannot open the execution store ${path}${suffix}: it is ${what}`);
        expect(error.message).toContain(`Move it aside (mv ${path}${suffix} ${path}${suffix}.moved): the store itself is untouched and keeps its history`);
        expect(error.message).not.toContain("empty history");
        rmSync(`${path}${suffix}`, { recursive: true });
        const reopened = openStore(path, new TestClock());
        expect(reopened.get(newExecution(7).id)?.id).toBe(newExecution(7).id);
        reopened.close();
      }
    });

    test("sqlite store names a companion file committed as a link (the log, the starting journal), the file it leads to untouched (tester Z3)", () => {
      for (const suffix of ["-wal", "-shm", "-journal", "-starting"]) {
        const path = tempDb();
        const victim = `${path}.elsewhere`;
        writeFileSync(victim, "kept");
        symlinkSync(victim, `${path}${suffix}`);
        const error = openError(path);
        expect(error.message).toContain(`Cannot open the execution store ${path}${suffix}: it is a symbolic link`);
        expect(error.message).toContain(`Remove the link (rm ${path}${suffix})`);
        expect(readFileSync(victim, "utf8")).toBe("kept");
      }
    });
  });
}
