// Imported by main.ts before any capability file can be: DOCKET_TOKEN is the token of a server
// (`docket serve` reads it, then takes it out of its environment). Any other command — `docket run`,
// `docket mcp`, `docket run capabilities.verify` — runs handlers with this process's environment, and a
// shell that exported the token to start its server would hand it to every handler and every child
// of one: it is taken out here, where no command reads it (docs/security.md).
const command = process.argv.slice(2).find((arg) => !arg.startsWith("-"));
if (command !== "serve") delete process.env.DOCKET_TOKEN;
