// GitHub's runner reading a step's output for workflow commands, to check what docket prints there.

/**
 * The lines of `text` that GitHub's runner would obey as workflow commands, read as the runner
 * reads a stream (actions/runner, ActionCommandManager): line by line, at CR or LF; leading blanks
 * ignored; `::name …::data` or the older `##[name …]`; none between `::stop-commands::TOKEN` and
 * `::TOKEN::`.
 */
export function obeyedCommands(text: string): string[] {
  const obeyed: string[] = [];
  let pausedUntil: string | null = null;
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const line = raw.trimStart();
    const command = /^::([^\s:]+)[^:]*::(.*)$/.exec(line) ?? /^##\[([^\s\];]+)[^\]]*\](.*)$/.exec(line);
    if (!command) continue;
    const [, name, data] = command;
    if (pausedUntil !== null) {
      if (name === pausedUntil) pausedUntil = null;
    } else if (name === "stop-commands") {
      pausedUntil = data!;
    } else {
      obeyed.push(line);
    }
  }
  return obeyed;
}
