import { join } from "node:path";
import { holdCheckoutShared, holdRunClaims } from "../server/checkout-lock.ts";
import { ensureDocketDir, ownPidNamespace, processStarted } from "../server/lease.ts";
import { countRunMarks, createRunMark, readRunMark, type RunMark } from "../store/run-marks.ts";
import type { RunIdentity } from "../store/store.ts";
import { storedRunIdentity } from "../store/stored-run-identity.ts";

/** What a run without a server learns when it claims its run_id (claimRunIdLocally). */
export type LocalClaim =
  /** Nobody used it: the mark is left, the handler may begin. */
  | { kind: "claimed"; mark: RunMark }
  /** A run without a server used it with the same capability and input: this run is that one. */
  | { kind: "marked"; mark: RunMark }
  /** The checkout's server took it (its store holds it) with the same capability and input. */
  | { kind: "stored"; known: RunIdentity }
  /** Used with another capability or input. */
  | { kind: "conflict"; known: RunIdentity }
  /** A server took the checkout meanwhile: the run should go to it. */
  | { kind: "server" }
  /** The checkout holds as many marks as run identities may be kept. */
  | { kind: "full"; count: number };

/**
 * Claims `identity.run_id` for a `docket run` that found no server (docs/protocol.md, "A run
 * without a server"): under the checkout's shared lock, the run_id is looked up among the marks
 * earlier runs without a server left and in the store file a server left, and, when nobody used
 * it, this run's mark is left before its handler begins. A server starting meanwhile waits for the
 * lock and then records every mark (serve.ts): a retry through it is this run too. Throws when a
 * mark or the store cannot be read or the mark cannot be written: nothing may run then.
 */
export function claimRunIdLocally(root: string, identity: RunIdentity, limit: number): LocalClaim {
  ensureDocketDir(root);
  const mark: RunMark = { ...identity, pid: process.pid, pid_namespace: ownPidNamespace(), pid_started: processStarted(process.pid), started_at: new Date().toISOString() };
  // Claims one at a time (each reads the store file a server left, which SQLite opens for one), and
  // only then the checkout's shared lock, which keeps a server starting waiting: held as briefly.
  const claims = holdRunClaims(root);
  if (claims === "held") throw new Error("other runs without a server kept claiming run_ids in this checkout for 10 s (.docket/runs.lock)");
  try {
    return claimUnderLocks(root, identity, mark, limit);
  } finally {
    claims?.release();
  }
}

function claimUnderLocks(root: string, identity: RunIdentity, mark: RunMark, limit: number): LocalClaim {
  const lock = holdCheckoutShared(root);
  if (lock === "held") return { kind: "server" };
  try {
    const same = (known: RunIdentity) => known.capability === identity.capability && known.input_hash === identity.input_hash;
    const marked = readRunMark(root, identity.run_id);
    if (marked !== null) return same(marked) ? { kind: "marked", mark: marked } : { kind: "conflict", known: marked };
    const stored = storedRunIdentity(join(root, ".docket", "state.db"), identity.run_id);
    if (stored !== null) return same(stored) ? { kind: "stored", known: stored } : { kind: "conflict", known: stored };
    const count = countRunMarks(root);
    if (count >= limit) return { kind: "full", count };
    const created = createRunMark(root, mark);
    if (created === "created") return { kind: "claimed", mark };
    return same(created) ? { kind: "marked", mark: created } : { kind: "conflict", known: created };
  } finally {
    lock?.release();
  }
}


