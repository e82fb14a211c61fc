// A plain GET of /events following several executions names the HTTP route of each one's events,
// each from its own cursor: `?execution=A&after=1&execution=B&after=2` was told to "read the same
// events from /api/v1/executions/events?id=A&after=1", B and its cursor unsaid (checking tester).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startBun, type StartedServer } from "./_support/servers.ts";

const idOf = (n: number) => `x-20260908T010203Z-${n.toString(16).padStart(8, "0")}`;
const route = (id: string, after?: number) => `/api/v1/executions/events?id=${id}${after === undefined ? "" : `&after=${after}`}`;

describe("/events without an upgrade", () => {
  let server: StartedServer;
  beforeAll(async () => {
    server = await startBun();
  }, 30_000);
  afterAll(() => server?.stop(), 15_000);

  async function refusal(query: string): Promise<{ message: string; context: Record<string, any> }> {
    const response = await fetch(`${server.url}/events?${query}`);
    expect(response.status).toBe(426);
    return ((await response.json()) as any).error;
  }

  test("/events without an upgrade names every followed execution's route, each with its own cursor", async () => {
    const [a, b] = [idOf(1), idOf(2)];
    const error = await refusal(`execution=${a}&after=1&execution=${b}&after=2`);
    expect(error.message).toContain(route(a, 1));
    expect(error.message).toContain(route(b, 2));
    expect(error.context.events).toBe(route(a, 1));
    expect(error.context.events_each).toEqual([route(a, 1), route(b, 2)]);
  });

  test("/events without an upgrade gives one after to every route it names", async () => {
    const [a, b] = [idOf(3), idOf(4)];
    const error = await refusal(`execution=${a}&execution=${b}&after=7`);
    expect(error.context.events_each).toEqual([route(a, 7), route(b, 7)]);
    expect(error.message).toContain(route(b, 7));
  });

  test("/events without an upgrade names the first routes of many and counts the rest, listing all in its context", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => idOf(100 + i));
    const error = await refusal(ids.map((id, i) => `execution=${id}&after=${i}`).join("&"));
    expect(error.context.events_each).toEqual(ids.map((id, i) => route(id, i)));
    expect(error.message).toContain(route(ids[0]!, 0));
    expect(error.message).toContain("37 more");
    expect(error.message).not.toContain(ids[39]!);
    expect(error.message.length).toBeLessThan(600);
  });

  test("/events without an upgrade keeps a single execution's route as it was", async () => {
    const error = await refusal(`execution=${idOf(5)}&after=3`);
    expect(error.message).toContain(`read the same events from ${route(idOf(5), 3)} and list`);
    expect(error.context.events_each).toBeUndefined();
  });
});
