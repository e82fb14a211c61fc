import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";

/**
 * The text of a file docket keeps under `.docket/` (its lease, a run's mark, reports left for a
 * server), read only when it is a regular file. A plain read of a named pipe waits in `open()`
 * for a writer that never comes: one at `.docket/lease.json` or under `runs/` or `reports/` held
 * the server's thread for good, its clients and its stop signals too (serve tester, session 50).
 * Opened without waiting (O_NONBLOCK, which changes nothing for a regular file) and looked at
 * before it is read; anything else throws an error whose `code` is "ENOT_REGULAR", naming what
 * stands there. Other errors (ENOENT, EACCES) are thrown as they come.
 */
export function readRegularFileText(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) {
      const what = stat.isFIFO() ? "a named pipe (FIFO)" : stat.isSocket() ? "a socket" : stat.isDirectory() ? "a folder" : stat.isCharacterDevice() || stat.isBlockDevice() ? "a device" : "not a regular file";
      throw Object.assign(new Error(`${path} is ${what}, not a file docket wrote; remove it (docket writes its own again)`), { code: "ENOT_REGULAR" });
    }
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}
