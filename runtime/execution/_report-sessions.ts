import type { Clock } from "./clock.ts";
import type { Actor } from "./protocol.ts";

/** A reported run this server still hears. */
export interface ReportSession {
  pid: number;
  /** The run's pid namespace as it last said (null: it said none, or this server adopted it after a restart). */
  namespace: string | null;
  /** This server saw the run's process gone: it is given a short grace, not the whole limit. */
  gone: boolean;
  timer: unknown;
  /** When the silence timer is due (`clock.monotonic()`): a timer that fires much later lost time. */
  due: number;
  /** Who asked this server to cancel the run; the run hears it until it reports its own cancel. */
  cancelBy: Actor | null;
  /**
   * When this server first held the run running (`clock.now()` ms: heard started, or adopted
   * running after a restart), or null: a duration it computes counts from here, on its own clock,
   * never from the run's `started_at`, which is the run's clock (docs/protocol.md).
   */
  runningSince: number | null;
  /**
   * Adopted after a restart and not heard since: the namespace its reports named is not known, so
   * its pid is looked up among this server's processes (report-watch.ts); a report clears it.
   */
  adopted?: boolean;
}

/**
 * How late a silence timer may fire and still be judged: later than this, this process was stopped
 * or starved while it was due, and the run's reports may be waiting unread (docs/protocol.md).
 */
const LATE_TOLERANCE_MS = 50;

/**
 * The reported runs a server hears, each with its silence timer (report-ledger.ts): heard again,
 * the timer starts over; silent for `silenceMs`, `onSilent` ends it. A timer that fires well after
 * it was due (this process was stopped, SIGSTOP or a suspended terminal, or starved) judges
 * nothing: timers run before pending input is read, so judging then would blame a run that
 * reported all along; it listens for a whole limit again first, and a report read in that time
 * resumes the run.
 */
export class ReportSessions {
  readonly #sessions = new Map<string, ReportSession>();

  constructor(
    private readonly clock: Clock,
    private readonly silenceMs: number,
    private readonly onSilent: (id: string, session: ReportSession) => void,
  ) {}

  get(id: string): ReportSession | undefined {
    return this.#sessions.get(id);
  }

  /** The run was heard: its silence is measured from now. A namespace it names is kept; null keeps the one known. */
  touch(id: string, pid: number, namespace: string | null = null): ReportSession {
    const session = this.#sessions.get(id) ?? { pid, namespace, gone: false, timer: null, due: 0, cancelBy: null, runningSince: null };
    if (namespace !== null) session.namespace = namespace;
    session.gone = false;
    session.adopted = false;
    this.#sessions.set(id, session);
    this.#listen(id, session, this.silenceMs);
    return session;
  }

  /** The runs heard now, with their sessions. */
  entries(): IterableIterator<[string, ReportSession]> {
    return this.#sessions.entries();
  }

  get size(): number {
    return this.#sessions.size;
  }

  /**
   * The run's process is gone: its silence ends within `ms` (sooner than the limit), which leaves
   * time for reports it sent before it exited and this server has not read yet. Heard meanwhile,
   * it is listened to for a whole limit again.
   */
  endWithin(id: string, ms: number): void {
    const session = this.#sessions.get(id);
    if (!session) return;
    session.gone = true;
    if (session.due - this.clock.monotonic() > ms) this.#listen(id, session, ms);
  }

  /** The run ended: nothing more to hear. */
  end(id: string): void {
    const session = this.#sessions.get(id);
    if (session?.timer != null) this.clock.clearTimeout(session.timer);
    this.#sessions.delete(id);
  }

  close(): void {
    for (const session of this.#sessions.values()) if (session.timer !== null) this.clock.clearTimeout(session.timer);
    this.#sessions.clear();
  }

  /** (Re)arms the silence timer of a session, `ms` from now. */
  #listen(id: string, session: ReportSession, ms: number): void {
    if (session.timer !== null) this.clock.clearTimeout(session.timer);
    session.due = this.clock.monotonic() + ms;
    session.timer = this.clock.setTimeout(() => this.#silent(id), ms);
  }

  #silent(id: string): void {
    const session = this.#sessions.get(id);
    if (!session) return;
    if (this.clock.monotonic() - session.due > Math.min(LATE_TOLERANCE_MS, this.silenceMs / 4)) {
      session.timer = null;
      session.gone = false;
      this.#listen(id, session, this.silenceMs);
      return;
    }
    this.#sessions.delete(id);
    this.onSilent(id, session);
  }
}
