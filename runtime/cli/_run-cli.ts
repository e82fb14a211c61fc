import { runCommand, type CommandDef } from "citty";
import { checkCommandLine, commandPath, repeatedFlag, resolveChain, UsageError, type ResolvedCommand } from "./_command-line.ts";
import { buildFailure } from "../execution/failure.ts";
import { cliEdge } from "./cli-edge.ts";
import { didYouMeanText } from "../capability/did-you-mean.ts";
import { renderHelp } from "./_help.ts";
import { wantsColor } from "./_terminal.ts";
import { EXIT } from "./exit-code.ts";
import { writerOf } from "./fd-writer.ts";
import { VERSION_FLAGS, versionDocument, versionText } from "../version.ts";

/**
 * Writes to stdout and resolves once the text is handed to the OS, so an exit right after loses
 * nothing. Through stdout's own writer: a command that claimed stdout (stdout-claim.ts) sent
 * `process.stdout.write` to stderr, and its `--format json` refusal must still reach stdout.
 */
export function writeStdout(text: string): Promise<void> {
  return writerOf(process.stdout).write(text);
}

/** Writes a line of the CLI's own (not a run's) to stderr. */
function writeStderr(text: string): void {
  process.stderr.write(text);
}

/**
 * citty's `runMain`, with docket's exit codes: help and version like citty, a command line a
 * user can fix → its message, a pointer to `--help` and exit 2 (citty exits 1 for those, which
 * `docket run` keeps for "the capability failed"). A command's `run` answers its exit code.
 */
export async function runCli(root: CommandDef<any>, rawArgs: string[]): Promise<number> {
  let command = "docket";
  // The command the line names and its tokens, once known: a usage error is told to it (onUsageError).
  let named: { leaf: ResolvedCommand; rest: string[] } | null = null;
  try {
    const { chain, rest } = await resolveChain(root, rawArgs);
    command = commandPath(chain);
    const leaf = chain.at(-1)!;
    named = { leaf, rest };
    const wantsHelp = rawArgs.includes("--help") || rawArgs.includes("-h");
    // A group's word that names none of its commands: `docket help exectuions` (which is
    // `docket exectuions --help`) gets the "did you mean" the mistyped command gets, not the group's help.
    const unknown = leaf.cmd.run ? undefined : rest.find((t) => !t.startsWith("-"));
    if (wantsHelp && unknown === undefined) {
      await writeStdout(await renderHelp(chain, wantsColor(process.stdout, process.env)));
      return EXIT.succeeded;
    }
    const version = versionAsked(rawArgs);
    if (version !== null) {
      // The version, then the build (commit and target, or "from source"): docs/distribution.md.
      await writeStdout(version === "json" ? `${JSON.stringify(versionDocument(), null, 2)}\n` : `${versionText()}\n`);
      return EXIT.succeeded;
    }
    if (!leaf.cmd.run) {
      // A group (`docket`, `docket capabilities`): name one of its commands. Its help is printed
      // when nothing near one was given; a word or flag it does not know gets the refusal alone,
      // which points to it (the help printed first pushed the line that said what was wrong off the screen).
      if (unknown === undefined) {
        // `docket --versoin`: a flag that is near one the group takes is named, not "needs a command".
        const flag = rest.find((t) => t.startsWith("--"));
        const close = flag === undefined ? "" : didYouMeanText(flag.split("=")[0]!, command === "docket" ? ["--version", "--help"] : ["--help"]);
        if (flag !== undefined && close) throw new UsageError(`Unknown option ${flag.split("=")[0]} for ${command}. ${close}`, command);
        writeStderr(await renderHelp(chain, wantsColor(process.stderr, process.env)));
        throw new UsageError(`${command} needs a command.`, command);
      }
      const names = Object.keys((typeof leaf.cmd.subCommands === "function" ? await leaf.cmd.subCommands() : await leaf.cmd.subCommands) ?? {});
      const close = didYouMeanText(unknown, names, (name) => `${command} ${name}`);
      throw new UsageError(`Unknown command ${JSON.stringify(unknown)} for ${command}.${close ? ` ${close}` : ""}`, command);
    }
    const args = typeof leaf.cmd.args === "function" ? await leaf.cmd.args() : await leaf.cmd.args;
    checkCommandLine(args ?? {}, rest, command, { repeatable: leaf.meta.repeatable });
    const { result } = await runCommand(leaf.cmd, { rawArgs: rest });
    return typeof result === "number" ? result : EXIT.succeeded;
  } catch (error) {
    // citty's own parse errors (a missing positional, a value outside an enum) are CLIError.
    if (error instanceof UsageError || (error instanceof Error && error.name === "CLIError")) {
      const message = error.message.replace(/\u001b\[[0-9;]*m/g, "");
      const help = error instanceof UsageError ? (error.pointToHelp ? `See ${error.command} --help.\n` : "") : `See ${command} --help.\n`;
      if (named?.leaf.cmd.run && named.leaf.meta.onUsageError) {
        const args = (typeof named.leaf.cmd.args === "function" ? await named.leaf.cmd.args() : await named.leaf.cmd.args) ?? {};
        await named.leaf.meta.onUsageError({ message, tokens: named.rest, args });
      } else {
        // `--format json` prints one JSON document whatever was wrong, as a refusal by the server
        // does: `{error}` — a command of a group that names none too (`docket executions bogus
        // --format json` printed nothing on stdout: MCP/CLI tester, session 48).
        const formats = repeatedFlag(named?.leaf.cmd.run ? named.rest : rawArgs, "format");
        if (formats.length > 0 && formats.every((format) => format === "json")) {
          const edge = cliEdge(process.env);
          const failure = buildFailure({ error_code: "invalid_input", stage: "validate", message, suggestion: help.trim() || `See ${command} --help.`, context: { reason: "usage" }, request_id: edge.request_id, trace_id: edge.trace_id });
          await writeStdout(`${JSON.stringify({ error: failure }, null, 2)}\n`);
        }
      }
      writeStderr(`${message}\n${help}`);
      return EXIT.usage;
    }
    writeStderr(`docket: unexpected error in ${command}: ${(error as Error)?.stack ?? String(error)}\n`);
    return EXIT.failed;
  }
}

/**
 * The format the version is asked in, or null when the line asks something else: a version flag
 * alone, or with the `--format text|json` every command takes (main.ts moves it last, as
 * `--format=X`) — a script that passes `--format json` everywhere got "needs a command".
 */
function versionAsked(rawArgs: readonly string[]): "text" | "json" | null {
  const [flag, format, ...more] = rawArgs;
  if (flag === undefined || !VERSION_FLAGS.includes(flag)) return null;
  // `--version --format json --format text`: said as any command says it, not "needs a command".
  if (more.length > 0 && [format, ...more].every((arg) => arg === "--format" || arg!.startsWith("--format="))) {
    throw new UsageError("Option --format of docket is given more than once. Give it once.", "docket");
  }
  if (more.length > 0) return null;
  if (format === undefined || format === "--format=text") return "text";
  if (format === "--format=json") return "json";
  if (format === "--format" || format.startsWith("--format=")) {
    const given = format === "--format" ? "nothing" : JSON.stringify(format.slice("--format=".length));
    throw new UsageError(`--format must be text or json, got ${given}.`, "docket");
  }
  return null;
}
