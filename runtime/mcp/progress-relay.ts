import type { ProgressNotificationParams } from "@modelcontextprotocol/sdk/types.js";
import type { ExecutionEvent } from "../execution/protocol.ts";

/** One progress notification's parameters, without the token (the sender adds it). */
export type ProgressParams = Omit<ProgressNotificationParams, "progressToken">;

/** The `_meta` key that ties a notification to the event it came from: a cursor for docket_execution_events. */
export const EVENT_META_KEY = "docket/event";

/**
 * Turns an execution's `execution.progress` events into MCP progress notifications.
 *
 * - MCP requires `progress` to increase with every notification; a handler's counter may restart
 *   (a second phase counts from 1 again). A restart continues from where the last phase ended, so
 *   `progress`/`total` read as work units over the whole run; a count that did not move is skipped.
 * - The sender is never waited for by the execution: at most one notification is in flight and
 *   only the newest waits behind it, so a fast counter costs the client a few notifications, not
 *   one per event, and the last one always arrives. Order is kept.
 */
export class ProgressRelay {
  private base = 0;
  private lastCurrent: number | null = null;
  private lastProgress: number | null = null;
  private pending: ProgressParams | null = null;
  private flowing: Promise<void> | null = null;
  private failed = false;

  constructor(private readonly send: (params: ProgressParams) => Promise<void>) {}

  /** Takes one event of the execution; anything but a progress event is ignored. */
  push(event: ExecutionEvent): void {
    if (event.type !== "execution.progress" || this.failed) return;
    const { current, total, message } = (event as ExecutionEvent<"execution.progress">).data;
    if (this.lastCurrent !== null && current < this.lastCurrent) this.base += this.lastCurrent;
    this.lastCurrent = current;
    const progress = this.base + current;
    if (this.lastProgress !== null && progress <= this.lastProgress) return;
    this.lastProgress = progress;
    this.pending = {
      progress,
      ...(total !== undefined && total !== null ? { total: this.base + total } : {}),
      ...(message !== undefined ? { message } : {}),
      _meta: { [EVENT_META_KEY]: { execution_id: event.execution_id, sequence: event.sequence } },
    };
    this.kick();
  }

  /** Resolves once every notification taken so far was handed to the transport (or sending failed). */
  async drained(): Promise<void> {
    while (this.flowing) await this.flowing;
  }

  private kick(): void {
    if (this.flowing || !this.pending) return;
    this.flowing = this.flow().finally(() => {
      this.flowing = null;
      // Taken after the loop ended and before this ran: it must not wait for the next event.
      this.kick();
    });
  }

  private async flow(): Promise<void> {
    try {
      while (this.pending && !this.failed) {
        const params = this.pending;
        this.pending = null;
        await this.send(params);
      }
    } catch {
      // The client is gone or its stream broke: nobody is left to tell, and the execution goes on.
      this.failed = true;
      this.pending = null;
    }
  }
}
