import type { ParsedInput } from "./_input.ts";

/** Where a run writes; the CLI passes the process's streams, tests may pass buffers. */
export interface RunOutput {
  stdout(text: string): Promise<void>;
  stderr(text: string): void;
  /** Whether stderr is a terminal (colour). */
  stderrIsTTY: boolean;
}

/** Everything `docket run` decided from its command line, already checked for shape. */
export interface LocalRunOptions {
  cwd: string;
  env: Record<string, string | undefined>;
  /** A capability id, or a path to a capability file. */
  target: string;
  /** The parsed `--input` (undefined lets the capability's defaults apply), or why it could not be read. */
  input: ParsedInput;
  format: "text" | "json";
  runId?: string;
  /** The `--deadline-ms` value, or why it is not one (refused like bad input, so `--format json` still prints one document). */
  deadlineMs?: number | { problem: string };
  capabilityDirs: string[];
  /** `--result-file`: where the one JSON document is also written, whatever the format. */
  resultFile?: string;
  output: RunOutput;
}
