// The frame every live-channel figure sends, docket's and the peers' alike: a progress event's
// envelope as /events carries it. Plain JS, so the peer servers can run it on Node.

const EXECUTION = "x-20260908T010203Z-0a1b2c3d";

/** One event envelope as JSON; `data` is the event's payload (a progress's current/total/message). */
export function frameOf(sequence, data, type = "execution.progress") {
  return JSON.stringify({ schema_version: "1", event_id: `${EXECUTION}#${sequence}`, execution_id: EXECUTION, sequence, timestamp: new Date().toISOString(), type, data });
}

/** The same clock on every thread and process of this machine (they agree to ~0.1 ms): ms since the epoch. */
export const now = () => performance.timeOrigin + performance.now();
