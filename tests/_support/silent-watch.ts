import { EventEmitter } from "node:events";
import type { FSWatcher } from "node:fs";

/**
 * A file system watch that never reports a change, as a folder mounted from elsewhere sends none
 * (WSL's /mnt/c edited from Windows, a network share): given as `watch` to the folder watch, only
 * its looks find changes.
 */
export const silentWatch = (): FSWatcher => Object.assign(new EventEmitter(), { close() {} }) as unknown as FSWatcher;
