// /events takes a cursor per execution: `after` repeated once per `execution` pairs them in order.
// It took one `after` for all, so a client that had a up to 10 and b up to 5 had to take repeats
// or a gap, while the docs promised a cursor per execution (live-channel tester).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { LiveChannel } from "../../runtime/server/live-channel.ts";
import { client } from "./_support/http.ts";
import { completedOf, openLive } from "./_support/live-client.ts";
import { rawUpgrade } from "./_support/raw-ws.ts";
import { startBun, type StartedServer } from "./_support/servers.ts";
import { FakeLiveClock, FakeSocket, queueBytesFor, settle, storeWith } from "./_support/fake-socket.ts";

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
const sequencesOf = (frames: any[], id: string) => frames.filter((f) => f.execution_id === id).map((f) => f.sequence as number);
const cursorsQuery = (cursors: Array<[string, number]>) => cursors.map(([id, after]) => `execution=${id}&after=${after}`).join("&");

/** Two executions on a server keeping 10 events of each: only what each one's own cursor asks for counts as truncated. */
async function truncatedByOwnCursors(retaining: StartedServer): Promise<void> {
  const { url } = retaining;
  const http = client(retaining);
  const long = await http.start("executions.demonstrate", { steps: 2, delay_ms: 0, events: 30 });
  const short = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
  const [doneLong, doneShort] = [await http.completed(long), await http.completed(short)];
  const kept = await openLive(url, cursorsQuery([[long, doneLong.sequence - 4], [short, 0]]));
  await kept.waitFor(completedOf(long));
  await kept.waitFor(completedOf(short));
  await kept.close();
  expect(kept.frames[0]).toMatchObject({ type: "stream.ready", replayed: 4 + doneShort.sequence, truncated: false, dropped: 0 });
  // From 2 for `long`: what is gone before its retained 10 is counted, `short` adds nothing.
  const gone = await openLive(url, cursorsQuery([[short, doneShort.sequence], [long, 2]]));
  await gone.waitFor(completedOf(long));
  await gone.close();
  expect(gone.frames[0]).toMatchObject({ type: "stream.ready", replayed: 10, truncated: true, dropped: doneLong.sequence - 10 - 2 });
  expect(sequencesOf(gone.frames, short)).toEqual([]);
  expect(sequencesOf(gone.frames, long)).toEqual(range(doneLong.sequence - 9, doneLong.sequence));
}

describe("/events: a cursor per execution", () => {
  let server: StartedServer;
  let http: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startBun();
    http = client(server);
  }, 30_000);
  afterAll(() => server?.stop(), 15_000);

  test("/events pairs the i-th after with the i-th execution: each one's history from its own cursor, counted in stream.ready", async () => {
    const a = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
    const b = await http.start("executions.demonstrate", { steps: 2, delay_ms: 0 });
    const [doneA, doneB] = [await http.completed(a), await http.completed(b)];
    // Parameters in any order: executions pair with afters by their own order.
    const live = await openLive(server.url, `execution=${a}&execution=${b}&after=${doneA.sequence - 2}&after=3`);
    await live.waitFor(completedOf(a));
    await live.waitFor(completedOf(b));
    await live.close();
    expect(live.frames[0]).toMatchObject({ type: "stream.ready", subscribed: [a, b], replayed: 2 + doneB.sequence - 3, truncated: false, dropped: 0 });
    expect(sequencesOf(live.frames, a)).toEqual(range(doneA.sequence - 1, doneA.sequence));
    expect(sequencesOf(live.frames, b)).toEqual(range(4, doneB.sequence));
  });

  test("/events says truncated only of the history its own cursors ask for", async () => {
    // 10 events retained per execution: `long` keeps its last 10, `short` all of its own.
    const retaining = await startBun({ limits: { events_retained: 10 } });
    try {
      await truncatedByOwnCursors(retaining);
    } finally {
      await retaining.stop();
    }
  });

  test("/events refuses any other count of after, and an execution named twice with different cursors, 400 naming the rule", async () => {
    const a = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
    const b = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
    await http.completed(a);
    await http.completed(b);
    const refusals: Array<[string, string]> = [
      [`execution=${a}&execution=${b}&after=1&after=2&after=3`, "got 2 execution and 3 after"],
      [`execution=${a}&execution=${b}&execution=${a}&after=1&after=2`, "got 3 execution and 2 after"],
      ["after=1&after=2", "after may be given once without execution"],
      [`execution=${a}&after=1&execution=${b}&after=2&execution=${a}&after=3`, `execution ${a} is named twice with different cursors (after=1 and after=3)`],
      [`execution=${a}&after=1&execution=${b}&after=x`, 'after must be'],
    ];
    for (const [query, words] of refusals) {
      const refused = await rawUpgrade(server.url, `/events?${query}`);
      expect(refused.status).toBe(400);
      const error = JSON.parse(refused.body).error;
      expect(error).toMatchObject({ error_code: "invalid_input", context: { parameter: "after" } });
      expect(error.message).toContain(words);
    }
    // The same cursor twice is one execution followed once.
    const twice = await openLive(server.url, `execution=${a}&after=1&execution=${b}&after=2&execution=${a}&after=1`);
    const ready = await twice.waitFor((f) => f.type === "stream.ready");
    await twice.waitFor(completedOf(a));
    await twice.waitFor(completedOf(b));
    await twice.close();
    expect(ready.subscribed).toEqual([a, b]);
    expect(sequencesOf(twice.frames, a)[0]).toBe(2);
    expect(sequencesOf(twice.frames, b)[0]).toBe(3);
    expect(new Set(sequencesOf(twice.frames, a)).size).toBe(sequencesOf(twice.frames, a).length);
  });

  test("/events without an upgrade names the first execution's own cursor in the HTTP route it points to", async () => {
    const a = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
    const b = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
    const response = await fetch(`${server.url}/events?execution=${b}&after=7&execution=${a}&after=2`);
    expect(response.status).toBe(426);
    const body = (await response.json()) as any;
    expect(body.error.message).toContain(`/api/v1/executions/events?id=${b}&after=7`);
  });

  test("/events reconnects with a cursor per execution at random points deliver every sequence of two executions exactly once, in order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 6 }), async (cuts) => {
        const ids = [await http.start("executions.demonstrate", { steps: 3, delay_ms: 5, events: 60 }), await http.start("executions.demonstrate", { steps: 2, delay_ms: 7, events: 40 })];
        const seen = new Map<string, number[]>(ids.map((id) => [id, []]));
        const done = new Set<string>();
        for (const take of [...cuts, Number.MAX_SAFE_INTEGER]) {
          // Each execution from the last sequence this client has of it.
          const query = cursorsQuery(ids.map((id) => [id, seen.get(id)!.at(-1) ?? 0]));
          let taken = 0;
          let finish!: () => void;
          const enough = new Promise<void>((resolve) => (finish = resolve));
          const live = await openLive(server.url, query, {
            onFrame(frame) {
              // Frames after the cut are what a vanished client never saw.
              if (taken >= take || !seen.has(frame.execution_id)) return;
              taken++;
              seen.get(frame.execution_id)!.push(frame.sequence);
              if (frame.type === "execution.completed") done.add(frame.execution_id);
              if (taken >= take || done.size === ids.length) finish();
            },
          });
          await enough;
          await live.close();
          if (done.size === ids.length) break;
        }
        expect(done.size).toBe(ids.length);
        for (const id of ids) expect(seen.get(id)).toEqual(range(1, seen.get(id)!.at(-1)!));
      }),
      { numRuns: 8 },
    );
  }, 60_000);
});

describe("LiveChannel: a cursor per execution, then a lag", () => {
  test("LiveChannel's stream.lagged names each execution's own cursor as what the connection got of it", async () => {
    const fixture = storeWith({ subscriber_queue_bytes: queueBytesFor(24) });
    const live = new LiveChannel({ store: fixture.store, limits: fixture.limits, clock: new FakeLiveClock() });
    const quiet = fixture.create(1);
    const flood = fixture.create(2);
    fixture.progress(quiet, 3);
    fixture.progress(flood, 5);
    // `quiet` at its last stored sequence, `flood` at an earlier one: its history is owed.
    const quietAt = fixture.store.get(quiet)!.last_sequence;
    const floodAt = 2;
    const socket = new FakeSocket();
    live.open(socket, { executions: [quiet, flood], cursors: { [quiet]: quietAt, [flood]: floodAt } });
    for (let turn = 0; live.writing && turn < 1000; turn++) await settle();
    const floodStored = fixture.store.get(flood)!.last_sequence;
    expect(socket.events().map((e) => [e.execution_id, e.sequence])).toEqual(range(floodAt + 1, floodStored).map((s) => [flood, s]));
    // It stops reading; both go on, past its bound.
    socket.mode = "backpressure";
    fixture.progress(flood, 100);
    fixture.progress(quiet, 3);
    for (let turn = 0; live.writing && turn < 1000; turn++) await settle();
    socket.mode = "ok";
    live.drain(socket);
    for (let turn = 0; live.writing && turn < 1000; turn++) await settle();
    const notice = socket.frames.find((f) => f.type === "stream.lagged");
    expect(notice.last_sequence[quiet]).toBe(quietAt);
    expect(notice.last_sequence[flood]).toBeGreaterThanOrEqual(floodStored);
    fixture.store.close();
  });
});
