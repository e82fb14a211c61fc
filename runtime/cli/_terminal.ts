// The CLI's one decision about drawing on a terminal: colour or not, and the colours themselves.
// ANSI codes by hand: five of them do not justify a dependency.

/** A stream as far as the decision needs it (process.stderr, process.stdout). */
export interface TerminalStream {
  isTTY?: boolean;
}

/** Paints text for one stream; every function returns its input unchanged when colour is off. */
export interface TerminalStyle {
  /** True when ANSI colour is written to this stream. */
  readonly color: boolean;
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/**
 * Colour is on for a TTY unless `NO_COLOR` is set to anything non-empty (no-color.org) or
 * `TERM=dumb`; `FORCE_COLOR` (not "0") turns it on for pipes, e.g. CI logs that render ANSI.
 */
export function wantsColor(stream: TerminalStream, env: Record<string, string | undefined>): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" && env.FORCE_COLOR !== "0") return true;
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** The style for one stream under this environment. */
export function terminalStyle(stream: TerminalStream, env: Record<string, string | undefined>): TerminalStyle {
  const color = wantsColor(stream, env);
  const sgr = (open: number, close: number) => (text: string) => (color ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return {
    color,
    dim: sgr(2, 22),
    bold: sgr(1, 22),
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    cyan: sgr(36, 39),
  };
}
