// Imported first by main.ts, so that it runs before any other module of the CLI is evaluated: a
// `docket run` stopped while its modules load still ends as a run stopped before it started, with
// its document (README.md), instead of dying on the spot. The signal waits for the run's own
// listener (adapter/stop-signals.ts, holdStopSignals).
import { holdStopSignals } from "../adapter/stop-signals.ts";

if (process.argv[2] === "run") holdStopSignals();
