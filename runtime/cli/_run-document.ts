// Where a docket run's end is recorded besides its streams (docs/distribution.md).
import { lstat, open, rename, rm, stat, writeFile } from "node:fs/promises";
import { constants } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { EXIT } from "./exit-code.ts";
import { onStopSignal } from "../adapter/stop-signals.ts";
import { appendStepOutputs, appendStepSummary, isGitHubActions, stepSummary } from "./github-actions.ts";
import type { LocalRunOptions } from "./local-run-options.ts";

/** Where a run's end is recorded besides its streams: `--result-file`, and in GitHub Actions the step's outputs and summary. */
export type DocumentTargets = Pick<LocalRunOptions, "cwd" | "env" | "resultFile" | "output">;

/**
 * The run's JSON document to `--result-file`, and in GitHub Actions the step's outputs
 * `execution-id`, `state` and `result-file` (docs/distribution.md). A result file or step outputs
 * that cannot be written fail a run that had succeeded: a later step would read a stale or
 * missing file, or an empty `state`.
 */
export async function deliverDocument(options: DocumentTargets, document: string, snapshot: ExecutionSnapshot | null, code: number): Promise<number> {
  let written = false;
  if (options.resultFile !== undefined) {
    try {
      await writeResultFile(options.resultFile, document);
      written = true;
    } catch (error) {
      options.output.stderr(`docket: cannot write --result-file ${options.resultFile}: ${(error as Error).message}\n`);
      if (code === EXIT.succeeded) code = EXIT.failed;
    }
  }
  const outputs = options.env.GITHUB_OUTPUT;
  if (isGitHubActions(options.env) && outputs) {
    try {
      await appendStepOutputs(outputs, { "execution-id": snapshot?.id ?? "", state: snapshot?.state ?? (code === EXIT.cancelled ? "cancelled" : "refused"), "result-file": written ? resolve(options.cwd, options.resultFile!) : "" });
    } catch (error) {
      options.output.stderr(`docket: cannot write the step outputs to ${outputs}: ${(error as Error).message}\n`);
      if (code === EXIT.succeeded) code = EXIT.failed;
    }
  }
  return code;
}

/**
 * Writes the result file whole or not at all: beside it under a short name, with its mode, then
 * renamed over it — a write that fails halfway (a full disk) leaves the previous file or none,
 * never a partial document a later step would read. What is no regular file (a link, /dev/stdout,
 * a FIFO) is written through as it is, never replaced; so is a file whose folder takes no new
 * file (a writable file in a folder that is not).
 */
async function writeResultFile(path: string, document: string): Promise<void> {
  const existing = await lstat(path).catch(() => null);
  if (existing !== null && !existing.isFile()) return (await stat(path).catch(() => null))?.isFIFO() ? writeToPipe(path, document) : writeFile(path, document, "utf8");
  const partial = join(dirname(path), `.docket-result.${process.pid}.partial`);
  try {
    await writeFile(partial, document, { encoding: "utf8", mode: existing === null ? 0o666 : existing.mode & 0o777 });
  } catch (error) {
    await rm(partial, { force: true }).catch(() => undefined);
    const code = (error as NodeJS.ErrnoException).code;
    if (existing !== null && (code === "EACCES" || code === "EPERM" || code === "EROFS")) return writeFile(path, document, "utf8");
    throw error;
  }
  try {
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true }).catch(() => undefined);
    throw error;
  }
}

/**
 * Writes `document` into a named pipe once something reads it. Opened without blocking and asked
 * again every 50 ms until a reader is there: a blocking open with no reader held the run for good,
 * past SIGTERM, after its write had run (round-2 checking tester, session 48); here a signal ends
 * the wait. A full pipe is waited on the same way.
 */
async function writeToPipe(path: string, document: string): Promise<void> {
  let stopped: NodeJS.Signals | null = null;
  const off = onStopSignal((signal) => (stopped = signal));
  const stillWanted = () => {
    if (stopped !== null) throw new Error(`stopped by ${stopped} while waiting for something to read the pipe`);
  };
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    while (handle === undefined) {
      stillWanted();
      try {
        handle = await open(path, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENXIO") throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const bytes = Buffer.from(document, "utf8");
    for (let at = 0; at < bytes.length; ) {
      stillWanted();
      try {
        at += (await handle.write(bytes, at, bytes.length - at)).bytesWritten;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  } finally {
    off();
    await handle?.close();
  }
}

/** The run's end in the GitHub Actions step summary: one that cannot be written is a warning, not a failed run. */
export async function writeSummary(options: DocumentTargets, facts: Parameters<typeof stepSummary>[0]): Promise<void> {
  const path = options.env.GITHUB_STEP_SUMMARY;
  if (!isGitHubActions(options.env) || !path) return;
  try {
    await appendStepSummary(path, stepSummary(facts));
  } catch (error) {
    options.output.stderr(`warning: cannot write the step summary to ${path}: ${(error as Error).message}\n`);
  }
}
