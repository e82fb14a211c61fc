import { onStopSignal } from "../adapter/stop-signals.ts";

/** What {@link installShutdown} stops. */
export interface Stoppable {
  stop(reason?: string): Promise<void>;
}

/** Options of {@link installShutdown}; the defaults fit `docket serve`. */
export interface ShutdownOptions {
  signals?: NodeJS.Signals[];
  log?: (line: string) => void;
  /** Ends the process; default `process.exit`. */
  exit?: (code: number) => void;
}

/**
 * Stops the server on SIGINT/SIGTERM (and SIGHUP unless started with it ignored: stop-signals.ts): live clients are told `stream.closing`, the plane is closed
 * and the lease removed, then the process exits 0. A second signal while stopping exits at once
 * (130); one signal that arrives twice (to the process group, and passed on by a parent) is one
 * (onStopSignal). Returns a function that removes the handlers. The CLI calls this; nothing else should.
 */
export function installShutdown(server: Stoppable, options: ShutdownOptions = {}): () => void {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log(`docket: ${signal} again, stopping at once`);
      exit(130);
      return;
    }
    stopping = true;
    log(`docket: ${signal}, stopping${signal === "SIGINT" ? " (press Ctrl-C again to stop at once)" : ""}`);
    server.stop(`server stopping (${signal})`).then(
      () => exit(0),
      (error) => {
        log(`docket: stopping failed: ${(error as Error)?.message ?? String(error)}`);
        exit(1);
      },
    );
  };
  return onStopSignal(onSignal, { signals: options.signals });
}
