import { buildFailure } from "../execution/failure.ts";
import { cliEdge } from "./cli-edge.ts";
import { EXIT } from "./exit-code.ts";
import type { LocalRunOptions } from "./local-run-options.ts";
import { deliverDocument, writeSummary, type DocumentTargets } from "./_run-document.ts";

/** What `recordUsageRefusal` knows of a `docket run` whose command line was refused. */
export interface UsageRefusalOptions extends Pick<LocalRunOptions, "cwd" | "env" | "resultFile"> {
  /** The capability the command line names, when it could be read. */
  target?: string;
  /** The usage error's message. */
  message: string;
  stderr(text: string): void;
  /** Given when the command line asks for `--format json`: stdout gets the document too, as for any refusal. */
  stdout?: (text: string) => Promise<void>;
}

/**
 * A `docket run` refused for its command line (a flag unknown, repeated or out of its values; exit
 * 2) records that end where any refused run does: the JSON document in `--result-file` when that
 * flag could be read, and in GitHub Actions the step summary and the outputs with state `refused`
 * (docs/distribution.md). Otherwise a later step read an empty `state` for an exit 2, and a
 * missing or stale result file. With `--format json` the document is printed on stdout too. The
 * usage error itself is printed by the caller (stderr).
 */
export async function recordUsageRefusal(options: UsageRefusalOptions): Promise<void> {
  const edge = cliEdge(options.env);
  const failure = buildFailure({
    error_code: "invalid_input",
    stage: "validate",
    // A stray token may be a value (a secret passed unquoted, split by the shell): the summary and
    // the result file, which outlive the job's masked log, say where the mistake is, not what it held.
    message: options.message.replace(/"(?:[^"\\]|\\.)*"/g, '"…"'),
    suggestion: "Correct the command line as docket run's message in the log says (docket run --help) and run it again.",
    context: { reason: "usage" },
    request_id: edge.request_id,
    trace_id: edge.trace_id,
  });
  const targets: DocumentTargets = { ...options, output: { stdout: async () => {}, stderr: options.stderr, stderrIsTTY: false } };
  await writeSummary(targets, { capability: options.target ?? "(none named)", execution: null, failure });
  const document = `${JSON.stringify({ execution: null, failure }, null, 2)}\n`;
  // `--format json` prints exactly one document, whatever was wrong (README.md).
  await options.stdout?.(document);
  await deliverDocument(targets, document, null, EXIT.usage);
}
