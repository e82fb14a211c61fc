import { connect } from "node:net";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { StartedServer } from "./servers.ts";
import { completedOf, openLive } from "./live-client.ts";

/** fetch against a test server, with its token when it has one. */
export function client(server: StartedServer) {
  const auth = (headers: Record<string, string> = {}): Record<string, string> => (server.token ? { Authorization: `Bearer ${server.token}`, ...headers } : headers);
  return {
    get: (path: string, headers?: Record<string, string>) => fetch(server.url + path, { headers: auth(headers) }),
    post: (path: string, body: unknown, headers?: Record<string, string>) =>
      fetch(server.url + path, { method: "POST", headers: auth({ "Content-Type": "application/json", ...headers }), body: typeof body === "string" ? body : JSON.stringify(body) }),
    send: (path: string, init: RequestInit & { headers?: Record<string, string> }) => fetch(server.url + path, { ...init, headers: auth(init.headers) }),
    /** Starts an execution; returns its id. */
    async start(capability: string, input: unknown, headers?: Record<string, string>): Promise<string> {
      const response = await this.post("/api/v1/executions/start", { capability, input }, headers);
      const body = (await response.json()) as any;
      if (response.status !== 200) throw new Error(`start ${capability} → ${response.status} ${JSON.stringify(body)}`);
      return body.execution.id as string;
    },
    /** Waits for an execution's `execution.completed` over the live channel (history then live: nothing to poll). */
    async completed(id: string): Promise<any> {
      const live = await openLive(server.url, `execution=${id}${server.token ? `&token=${server.token}` : ""}`);
      const frame = await live.waitFor(completedOf(id));
      await live.close();
      return frame;
    },
  };
}

/** One HTTP/1.1 request on a bare socket, so Host and Origin are exactly what the test says. */
export function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>, body = ""): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let data = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => (data = Buffer.concat([data, chunk])));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = data.toString("utf8");
      const end = text.indexOf("\r\n\r\n");
      const head = text.slice(0, end).split("\r\n");
      const hs: Record<string, string> = {};
      for (const line of head.slice(1)) hs[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
      resolve({ status: Number(head[0]!.split(" ")[1]), headers: hs, body: text.slice(end + 4) });
    });
    const lines = [`${method} ${path} HTTP/1.1`, ...Object.entries({ Host: url.host, Connection: "close", ...headers }).map(([k, v]) => `${k}: ${v}`)];
    if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
    socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
  });
}

/** Validates frames against the schemas `executions.protocol` serves (draft 2020-12). */
export function frameValidator(protocol: { event_schema: object; control_schema: object }) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const event = ajv.compile(protocol.event_schema);
  const control = ajv.compile(protocol.control_schema);
  return (frame: any): string | null => {
    const check = typeof frame.type === "string" && frame.type.startsWith("stream.") ? control : event;
    return check(frame) ? null : `${frame.type}: ${ajv.errorsText(check.errors)}`;
  };
}
