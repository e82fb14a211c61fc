// The measured server (measured-server.ts) with `"docket"` and `"valibot"` served to the capability
// files of the checkout it serves, as the binary serves them: a test's own capability can run in it.
import { useDocketModules } from "../../_support/capability-fixtures.ts";

useDocketModules();
await import("./measured-server.ts");
