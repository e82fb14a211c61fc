// A live-channel client in its own process, reading as fast as it can: prints `ready` once
// subscribed, then one JSON line per completed execution (`{id, last, in_order, state}`), or one
// `{lagged}` line if it ever fell behind. Used where a reader in the test's own thread would
// compete with the server for the event loop.
const [url, token] = process.argv.slice(2);
const socket = new WebSocket(`${url!.replace(/^http/, "ws")}/events${token ? `?token=${token}` : ""}`);
const SEQUENCE = /"execution_id":"([^"]+)","sequence":(\d+)/;
const next = new Map<string, number>();
const broken = new Set<string>();
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
socket.onmessage = (message) => {
  const text = String(message.data);
  if (text.startsWith('{"type":"stream.')) {
    if (text.includes('"stream.ready"')) process.stdout.write("ready\n");
    if (text.includes('"stream.lagged"')) say({ lagged: JSON.parse(text) });
    return;
  }
  const match = SEQUENCE.exec(text);
  if (!match) return;
  const id = match[1]!;
  const sequence = Number(match[2]);
  // Every sequence exactly once and in order: the next one seen must be the one after the last.
  if (sequence !== (next.get(id) ?? 1)) broken.add(id);
  next.set(id, sequence + 1);
  if (text.includes('"type":"execution.completed"')) say({ id, last: sequence, in_order: !broken.has(id), state: /"state":"(\w+)"/.exec(text)?.[1] });
};
socket.onclose = () => process.exit(0);
