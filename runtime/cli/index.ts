// The CLI layer's public exports (README.md). The binary's entry is main.ts; commands live in commands/.
export { main } from "./main.ts";
export { runLocally } from "./local-run.ts";
export { isCapabilityPath } from "./run-target.ts";
export { cliEdge } from "./cli-edge.ts";
export { outputText } from "./output-text.ts";
export type { LocalRunOptions, RunOutput } from "./local-run-options.ts";
export { EXIT, exitCodeOf, failureText } from "./exit-code.ts";
export type { RunEnd } from "./exit-code.ts";
export { createRunReporter, plainPrinters, clockTime, formatDuration, location } from "./run-reporter.ts";
export type { EventPrinter, EventPrinters, RunReporter, RunReporterOptions } from "./run-reporter.ts";
export { annotation, appendStepSummary, escapeData, escapeProperty, gitHubPrinters, isGitHubActions, stepSummary } from "./github-actions.ts";
export type { SummaryFacts } from "./github-actions.ts";
