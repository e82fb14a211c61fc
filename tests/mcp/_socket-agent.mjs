// Run by `node` (tests/mcp/stdio.test.ts): an agent as Node spawns one — its stdin a socket, not a
// pipe — that writes requests without reading their answers until docket mcp stops taking them
// for a while, ends stdin, and only then reads every answer. Prints what it saw as one JSON line.
// Arguments: the command to run docket mcp with, as JSON; the checkout to run it in.
import { spawn } from "node:child_process";

const [command, cwd] = [JSON.parse(process.argv[2]), process.argv[3]];
const child = spawn(command[0], [...command.slice(1), "mcp"], { cwd, stdio: ["pipe", "pipe", "ignore"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
child.stdout.pause();
const send = (message) => child.stdin.write(`${JSON.stringify(message)}\n`);
send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "socket-agent", version: "1" } } });
send({ jsonrpc: "2.0", method: "notifications/initialized" });
// For three seconds: long past the point where docket mcp's stdout is full and it holds stdin back.
let sent = 0;
const began = Date.now();
while (Date.now() - began < 3000) {
  sent++;
  // Pings: the cheapest answer. tools/list answers took docket mcp ~20 s to write for the ~22,000
  // requests that fill its backlog, past this agent's 30 s wait on a loaded machine.
  if (send({ jsonrpc: "2.0", id: sent, method: "ping" })) continue;
  await Promise.race([new Promise((resolve) => child.stdin.once("drain", resolve)), new Promise((resolve) => setTimeout(resolve, 100))]);
}
child.stdin.end();
let answered = 0;
let rest = "";
child.stdout.on("data", (chunk) => {
  rest += chunk;
  for (let end = rest.indexOf("\n"); end !== -1; end = rest.indexOf("\n")) {
    rest = rest.slice(end + 1);
    answered++;
  }
});
child.stdout.resume();
let timer;
const ended = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(() => resolve(null), 30_000)))]);
clearTimeout(timer);
if (ended === null) child.kill("SIGKILL");
process.stdout.write(`${JSON.stringify({ sent, answered, ended })}\n`, () => process.exit(0));
