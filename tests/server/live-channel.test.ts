import { afterAll, describe, expect, test } from "bun:test";
import { LiveChannel } from "../../runtime/server/live-channel.ts";
import fc from "fast-check";
import { FakeLiveClock, FakeSocket, FakeTopics, idOf, queueBytesFor, removeSqliteStores, settle, storeWith } from "./_support/fake-socket.ts";

afterAll(removeSqliteStores);
import { reconciled, unknownEnd } from "../store/_contract-reconcile.ts";
import { countStringify } from "../_support/count-stringify.ts";

const params = (query: string) => new URLSearchParams(query);

function setup(overrides: Parameters<typeof storeWith>[0] = {}, kind: Parameters<typeof storeWith>[1] = "memory") {
  const fixture = storeWith(overrides, kind);
  const clock = new FakeLiveClock();
  const live = new LiveChannel({ store: fixture.store, limits: fixture.limits, clock });
  return { ...fixture, clock, live };
}

/** Lets the writer run its turns until it has nothing left to write (at most `turns` of them). */
async function untilWritten(live: LiveChannel, turns = 1000): Promise<void> {
  for (let turn = 0; live.writing && turn < turns; turn++) await settle();
}

/**
 * A channel with `count` caught-up watchers of one execution, on a fake clock where each send
 * takes `sendMs`; `sending()` is the time spent in sends so far, `drain()` lets the writer finish
 * (sends free again) and checks every watcher got `events` events.
 */
async function watchedFlood(count: number, sendMs: number) {
  const fixture = setup();
  const id = fixture.create(1);
  const watchers = Array.from({ length: count }, () => new FakeSocket());
  for (const socket of watchers) fixture.live.open(socket, { executions: [id] });
  await settle();
  let sending = 0;
  for (const socket of watchers) {
    socket.onSend = () => {
      sending += sendMs;
      fixture.clock.advance(sendMs);
    };
  }
  return {
    ...fixture,
    id,
    watchers,
    sending: () => sending,
    async drain(events: number) {
      for (const socket of watchers) socket.onSend = null;
      await untilWritten(fixture.live);
      for (const socket of watchers) expect(socket.events()).toHaveLength(events);
    },
  };
}

describe("LiveChannel.check", () => {
  test("LiveChannel.check refuses wrong shapes with 400 before any look-up", () => {
    const { live } = setup();
    for (const query of ["execution=nope", "after=-1", "after=1.5", "after=1&after=2", `execution=${idOf(1)}&after=x`]) {
      const verdict = live.check(params(query), true);
      expect(verdict).toMatchObject({ ok: false, status: 400, error_code: "invalid_input" });
    }
  });

  test("LiveChannel.check answers 426 without an upgrade, naming the HTTP routes", () => {
    const { live } = setup();
    const verdict = live.check(params(`execution=${idOf(7)}&after=4`), false);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.status).toBe(426);
    expect(verdict.message).toContain(`/api/v1/executions/events?id=${idOf(7)}&after=4`);
    expect(verdict.message).toContain("/api/v1/executions");
  });

  test("LiveChannel.check dedupes named executions and refuses past live_connections with 503", () => {
    const { live, create } = setup({ live_connections: 1 });
    const id = create(1);
    const verdict = live.check(params(`execution=${id}&execution=${id}`), true);
    expect(verdict).toEqual({ ok: true, target: { executions: [id] } });
    live.open(new FakeSocket(), { executions: "all" });
    expect(live.check(params(""), true)).toMatchObject({ ok: false, status: 503 });
  });
});

describe("LiveChannel delivery", () => {
  test("stream.ready is the first frame even though subscribe replays first; then history, then live", async () => {
    const { live, create, progress } = setup();
    const id = create(1);
    progress(id, 3);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    expect(socket.frames[0]).toMatchObject({ type: "stream.ready", subscribed: [id], replayed: 5, truncated: false, heartbeat_ms: 20_000 });
    progress(id, 2);
    await settle();
    expect(socket.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  test("after seeds every cursor; an execution named twice is followed once", () => {
    const { live, create, progress } = setup();
    const a = create(1);
    const b = create(2);
    progress(a, 3);
    progress(b, 1);
    const socket = new FakeSocket();
    const verdict = live.check(params(`execution=${a}&execution=${b}&execution=${a}&after=2`), true);
    if (!verdict.ok) throw new Error("refused");
    live.open(socket, verdict.target);
    expect(socket.frames[0]).toMatchObject({ replayed: 4, subscribed: [a, b] });
    expect(socket.events().map((e) => `${e.execution_id === a ? "a" : "b"}${e.sequence}`)).toEqual(["a3", "a4", "a5", "b3"]);
  });

  test("live events of one append are written in one corked batch", async () => {
    const { live, create, progress } = setup();
    const socket = new FakeSocket();
    live.open(socket, { executions: "all" });
    const corksBefore = socket.corks;
    const id = create(1);
    progress(id, 50);
    await settle();
    expect(socket.corks - corksBefore).toBe(1);
    expect(socket.events()).toHaveLength(52);
  });

  test("a quiet watcher is written each event within the same turn, without waiting for the next one", async () => {
    const { live, create, progress, clock } = setup();
    const socket = new FakeSocket();
    live.open(socket, { executions: "all" });
    const id = create(1);
    await settle();
    clock.advance(1_000);
    progress(id, 1);
    // A microtask later, no turn of the event loop in between.
    await Promise.resolve();
    await Promise.resolve();
    expect(socket.events().map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  test("single events arriving steadily (many executions at once) are gathered into one corked write per turn", async () => {
    const { live, create, progress } = setup();
    const socket = new FakeSocket();
    live.open(socket, { executions: "all" });
    const ids = [create(1), create(2), create(3)];
    await settle();
    // The clock stands still: the writer just ran, so the next appends are a steady stream.
    const [corks, sent] = [socket.corks, socket.sent];
    for (const id of ids) {
      progress(id, 1);
      await Promise.resolve();
    }
    await settle();
    expect(socket.corks - corks).toBe(1);
    expect(socket.sent - sent).toBe(3);
    expect(socket.events().filter((e) => e.type === "execution.progress").map((e) => e.execution_id)).toEqual(ids);
  });

  test("a slow client queues up to subscriber_queue_bytes, loses the rest alone, and gets one stream.lagged on drain", async () => {
    const { live, create, progress } = setup({ subscriber_queue_bytes: queueBytesFor(4) });
    const id = create(1);
    const slow = new FakeSocket();
    const fast = new FakeSocket();
    live.open(slow, { executions: [id] });
    live.open(fast, { executions: [id] });
    slow.mode = "backpressure";
    progress(id, 1); // accepted by the socket, which now reports backpressure
    await settle();
    // 4 queued, 16 dropped for the slow client only. In batches the writer catches up between: a
    // healthy client's waiting frames count against the bound too, until the writer reaches it.
    for (let i = 0; i < 5; i++) {
      progress(id, 4);
      await settle();
    }
    expect(slow.events().map((e) => e.sequence)).toEqual([1, 2, 3]);
    slow.mode = "ok";
    live.drain(slow);
    expect(slow.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const lagged = slow.frames.filter((f) => f.type === "stream.lagged");
    expect(lagged).toEqual([{ type: "stream.lagged", dropped: 16, last_sequence: { [id]: 7 }, message: expect.any(String) }]);
    expect(slow.frames.at(-1).type).toBe("stream.lagged");
    progress(id, 1);
    await settle();
    expect(slow.events().at(-1).sequence).toBe(24);
    expect(fast.events().map((e) => e.sequence)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(slow.frames.filter((f) => f.type === "stream.lagged")).toHaveLength(1);
  });

  test("a stream.lagged naming more executions than one frame holds comes as consecutive notices, each within frame_bytes, together naming every one (tester T1)", async () => {
    const { live, create, progress, limits } = setup({ frame_bytes: 1024, subscriber_queue_bytes: queueBytesFor(4) });
    const slow = new FakeSocket();
    live.open(slow, { executions: "all" });
    await settle();
    slow.mode = "backpressure";
    const ids = Array.from({ length: 120 }, (_, i) => create(i + 1));
    for (const id of ids) progress(id, 2);
    await settle();
    slow.mode = "ok";
    live.drain(slow);
    const raw = slow.texts.filter((text) => text.includes('"stream.lagged"'));
    expect(raw.length).toBeGreaterThan(1);
    for (const text of raw) expect(Buffer.byteLength(text)).toBeLessThanOrEqual(limits.frame_bytes);
    const notices = raw.map((text) => JSON.parse(text) as { dropped: number; last_sequence: Record<string, number> });
    // The count once, in the first; then only names. Every execution it lost events of is named once.
    expect(notices.slice(1).every((notice) => notice.dropped === 0)).toBe(true);
    const named = notices.flatMap((notice) => Object.keys(notice.last_sequence));
    expect(new Set(named).size).toBe(named.length);
    const got = new Set(slow.events().map((event) => `${event.execution_id}#${event.sequence}`));
    const total = ids.length * 4; // created, started and two progress events each
    expect(notices[0]!.dropped).toBe(total - got.size);
    for (const id of ids) {
      const lost = [1, 2, 3, 4].some((sequence) => !got.has(`${id}#${sequence}`));
      expect(named.includes(id)).toBe(lost);
    }
    // Nothing but notices after them: the lag is told where it happened.
    expect(slow.frames.slice(-raw.length).every((frame) => frame.type === "stream.lagged")).toBe(true);
  });

  test("an append writes to no socket: the channel's writer sends on its own turn, to every watcher", async () => {
    const { live, create, progress } = setup();
    const id = create(1);
    const watchers = Array.from({ length: 250 }, () => new FakeSocket());
    for (const socket of watchers) live.open(socket, { executions: [id] });
    const before = watchers.map((socket) => socket.frames.length);
    progress(id, 100);
    expect(watchers.map((socket) => socket.frames.length)).toEqual(before);
    await untilWritten(live, 10_000);
    for (const socket of watchers) expect(socket.events().map((e) => e.sequence)).toEqual(Array.from({ length: 102 }, (_, i) => i + 1));
  });

  test("a blocked client costs the append path no sends: its events are queued or counted", async () => {
    const { live, create, progress } = setup({ subscriber_queue_bytes: queueBytesFor(8) });
    const id = create(1);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    socket.mode = "backpressure";
    progress(id, 1);
    await settle();
    const sent = socket.frames.length;
    progress(id, 10_000);
    await settle();
    expect(socket.frames.length).toBe(sent);
  });

  test("storing an event costs its watchers no serialization: its frame is made on the writer's turn, once for all of them", async () => {
    const { live, create, progress } = setup();
    const id = create(1);
    const watchers = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
    for (const socket of watchers) live.open(socket, { executions: [id] });
    await settle();
    expect(await countStringify(() => progress(id, 100))).toBe(0);
    const made = await countStringify(async () => {
      await untilWritten(live);
    });
    expect(made).toBe(100);
    for (const socket of watchers) expect(socket.events().map((e) => e.sequence)).toEqual(Array.from({ length: 102 }, (_, i) => i + 1));
  });

  test("the frame of an event a stalled watcher loses is never made", async () => {
    const { live, create, progress } = setup({ subscriber_queue_bytes: queueBytesFor(8) });
    const id = create(1);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    await settle();
    socket.mode = "backpressure";
    progress(id, 1);
    await settle();
    const made = await countStringify(async () => {
      for (let i = 0; i < 100; i++) {
        progress(id, 100);
        await settle();
      }
      socket.mode = "ok";
      live.drain(socket);
      await untilWritten(live);
    });
    // What it kept (at most 8 frames) and its notice, of 10,000 events stored.
    expect(made).toBeLessThanOrEqual(10);
    const lagged = socket.frames.filter((f) => f.type === "stream.lagged");
    expect(lagged).toHaveLength(1);
    expect(socket.events().length + lagged[0].dropped).toBe(10_003);
  });

  test("replayed history is never dropped by the queue bound", () => {
    const { live, create, progress } = setup({ subscriber_queue_bytes: queueBytesFor(2) });
    const id = create(1);
    progress(id, 30);
    const socket = new FakeSocket();
    socket.mode = "backpressure";
    live.open(socket, { executions: [id] });
    socket.mode = "ok";
    for (let i = 0; i < 40; i++) live.drain(socket);
    expect(socket.events().map((e) => e.sequence)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    expect(socket.types()).not.toContain("stream.lagged");
  });

  test("a socket that takes many pages of history before it fills keeps at most one page queued, not every frame it sent (server-exhaustion check)", async () => {
    const { live, create, progress } = setup();
    const id = create(1);
    progress(id, 3000);
    const socket = new FakeSocket();
    // The kernel's buffer takes about 2,000 frames before the socket pushes back.
    socket.onSend = () => {
      if (socket.sent >= 2000) socket.mode = "backpressure";
    };
    live.open(socket, { executions: [id] });
    await untilWritten(live);
    expect(socket.sent).toBe(2000);
    expect(live.framesKept(socket)).toBeLessThanOrEqual(256);
    socket.onSend = null;
    socket.mode = "ok";
    for (let i = 0; i < 40; i++) live.drain(socket);
    expect(socket.events().map((e) => e.sequence)).toEqual(Array.from({ length: 3002 }, (_, i) => i + 1));
  });

  test("an event larger than frame_bytes is withheld, the connection stays open", async () => {
    const { live, create, store, limits } = setup({ frame_bytes: 1024 });
    const id = create(1);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    const output = { text: "é".repeat(2000) };
    store.append(id, [{ type: "execution.completed", data: { state: "succeeded", output, duration_ms: 1 } }]);
    await settle();
    const completed = socket.frames.at(-1);
    expect(completed.data.output).toEqual({ withheld: "too_large", bytes: Buffer.byteLength(JSON.stringify(output)), limit: limits.frame_bytes, self: `/api/v1/executions/get?id=${id}` });
    expect(completed.data.state).toBe("succeeded");
    expect(socket.closed).toBeNull();
    expect(store.get(id)!.output).toEqual(output);
  });

  test("a socket whose send is dropped is forgotten and unsubscribed", async () => {
    const { live, create, progress } = setup();
    const id = create(1);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    socket.mode = "dropped";
    progress(id, 1);
    await settle();
    expect(live.connections).toBe(0);
    expect(socket.closed).not.toBeNull();
  });
});

describe("LiveChannel heartbeat and closing", () => {
  test("a connection quiet for heartbeat_ms gets a ping and a stream.heartbeat; a busy one does not", async () => {
    const { live, clock, create, progress } = setup({ heartbeat_ms: 100 });
    const quiet = new FakeSocket();
    const busy = new FakeSocket();
    const id = create(1);
    const other = create(2);
    const opened = clock.now();
    live.open(quiet, { executions: [other] });
    live.open(busy, { executions: [id] });
    clock.advance(100);
    expect(quiet.types()).not.toContain("stream.heartbeat");
    for (let i = 0; i < 5; i++) {
      progress(id, 1);
      await settle();
      clock.advance(25);
    }
    expect(quiet.types()).toContain("stream.heartbeat");
    expect(quiet.pings).toBe(1);
    expect(busy.types()).not.toContain("stream.heartbeat");
    // Ticks are a quarter of heartbeat_ms: the first tick past 100 ms of quiet is at 125 ms.
    expect(quiet.frames.find((f) => f.type === "stream.heartbeat").timestamp).toBe(new Date(opened + 125).toISOString());
  });

  test("the heartbeat notices a drained socket whose drain signal was missed", () => {
    const { live, clock, create, progress } = setup({ heartbeat_ms: 100 });
    const id = create(1);
    const socket = new FakeSocket();
    socket.mode = "backpressure";
    live.open(socket, { executions: [id] });
    progress(id, 3);
    socket.mode = "ok";
    clock.advance(25);
    expect(socket.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
  });

  test("closeAll sends stream.closing with the reason, closes every socket and stops the timer", async () => {
    const { live, clock } = setup();
    const sockets = [new FakeSocket(), new FakeSocket()];
    for (const s of sockets) live.open(s, { executions: "all" });
    expect(clock.pending).toBe(1);
    await live.closeAll("server stopping");
    for (const s of sockets) {
      expect(s.frames.at(-1)).toEqual({ type: "stream.closing", reason: "server stopping" });
      expect(s.closed).toEqual({ code: 1001, reason: "server stopping" });
    }
    expect(live.connections).toBe(0);
    expect(clock.pending).toBe(0);
    expect(live.check(params(""), true)).toMatchObject({ ok: false, status: 503 });
  });

  test("closeAll closes a socket that still holds frames once it sent them, and one that never does after a second", async () => {
    const { live, clock } = setup();
    const [idle, behind, stuck] = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
    for (const s of [idle, behind, stuck]) live.open(s, { executions: "all" });
    behind.buffered = 5000;
    stuck.buffered = 5000;
    let done = false;
    const closing = live.closeAll("server stopping").then(() => (done = true));
    // The notice is queued behind what each holds; only the drained one is closed at once.
    for (const s of [idle, behind, stuck]) expect(s.frames.at(-1)).toEqual({ type: "stream.closing", reason: "server stopping" });
    expect([idle.closed !== null, behind.closed !== null, stuck.closed !== null]).toEqual([true, false, false]);
    clock.advance(100);
    expect(behind.closed).toBeNull();
    behind.buffered = 0;
    clock.advance(10);
    expect(behind.closed).toEqual({ code: 1001, reason: "server stopping" });
    expect(stuck.closed).toBeNull();
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(1000);
    expect(stuck.closed).toEqual({ code: 1001, reason: "server stopping" });
    await closing;
    expect(done).toBe(true);
  });
});

/** One step of the random interleavings below: an append, backpressure on or off, a drain, or turns of the loop. */
type Op =
  | { op: "append"; n: number; which?: number }
  | { op: "pressure"; who: number; full: boolean }
  | { op: "drain"; who: number }
  | { op: "settle" }
  | { op: "turn" };

/** Random interleavings: appends of up to `most` events to one of `executions`, pressure and drains on one of `sockets`, turns of the loop. */
/**
 * Checks what one connection was sent against the store: of each execution it follows, the events
 * after `from` (what it had when it opened) in order and once, every gap announced by a notice
 * naming only what it follows and the last sequence it got (0: none since it opened), and what it
 * never got exactly what the notices counted.
 */
function expectFollowed(socket: FakeSocket, follows: ReadonlySet<string>, from: ReadonlyMap<string, number>, store: { get(id: string): { last_sequence: number } | null }): void {
  const got = new Map(from);
  const announced = new Set<string>();
  let dropped = 0;
  let received = 0;
  for (const frame of socket.frames) {
    if (frame.type === "stream.lagged") {
      for (const [id, sequence] of Object.entries(frame.last_sequence)) {
        expect(follows.has(id)).toBe(true);
        expect(sequence).toBe(got.get(id) === from.get(id) ? 0 : got.get(id));
        announced.add(id);
      }
      expect(frame.dropped).toBeGreaterThan(0);
      dropped += frame.dropped;
    }
    if (typeof frame.sequence !== "number") continue;
    const id = frame.execution_id as string;
    expect(follows.has(id)).toBe(true);
    received++;
    if (announced.delete(id)) expect(frame.sequence).toBeGreaterThan(got.get(id)!);
    else expect(frame.sequence).toBe(got.get(id)! + 1);
    got.set(id, frame.sequence);
  }
  const stored = [...follows].reduce((sum, id) => sum + store.get(id)!.last_sequence - from.get(id)!, 0);
  expect(received + dropped).toBe(stored);
  for (const id of follows) if (got.get(id) !== store.get(id)!.last_sequence) expect(announced.has(id)).toBe(true);
}

/**
 * What lagging members may keep, all together: nothing, less than one member's queue, a few
 * queues, or the default (never reached here) — views given up at every moment of a lag.
 */
const keptBounds = fc.constantFrom(0, queueBytesFor(6), queueBytesFor(40), 128 * 1024 * 1024);

function opsOf(shape: { executions: number; sockets: number; most: number }): fc.Arbitrary<Op[]> {
  return fc.array(
    fc.oneof(
      fc.record({ op: fc.constant("append" as const), which: fc.integer({ min: 0, max: shape.executions - 1 }), n: fc.integer({ min: 1, max: shape.most }) }),
      fc.record({ op: fc.constant("pressure" as const), who: fc.integer({ min: 0, max: shape.sockets - 1 }), full: fc.boolean() }),
      fc.record({ op: fc.constant("drain" as const), who: fc.integer({ min: 0, max: shape.sockets - 1 }) }),
      fc.record({ op: fc.constant("settle" as const) }),
      // One turn of the loop: a store's commit and the channel's writer may then be due in either order.
      fc.record({ op: fc.constant("turn" as const) }),
    ),
    { maxLength: 30 },
  );
}

/** Plays `ops` against the channel, then lets every socket read again and everything be written. */
async function play(ops: Op[], world: { live: LiveChannel; store: { durable(): Promise<void> }; sockets: FakeSocket[]; append: (op: Op & { op: "append" }) => void }): Promise<void> {
  const { live, store, sockets } = world;
  for (const op of ops) {
    if (op.op === "append") world.append(op);
    else if (op.op === "settle") await settle();
    else if (op.op === "turn") await new Promise((resolve) => setImmediate(resolve));
    else if (op.op === "drain") {
      sockets[op.who]!.mode = "ok";
      sockets[op.who]!.buffered = 0;
      live.drain(sockets[op.who]!);
    } else {
      sockets[op.who]!.mode = op.full ? "backpressure" : "ok";
      sockets[op.who]!.buffered = op.full ? 1 << 30 : 0;
    }
  }
  for (const s of sockets) {
    s.mode = "ok";
    s.buffered = 0;
    live.drain(s);
  }
  await settle();
  await store.durable();
  await settle();
}

describe("LiveChannel topics (Bun's native fan-out)", () => {
  function withTopics(overrides: Parameters<typeof storeWith>[0] = {}, kind: Parameters<typeof storeWith>[1] = "memory") {
    const fixture = setup(overrides, kind);
    const hub = new FakeTopics();
    fixture.live.useTopics(hub);
    return { ...fixture, hub };
  }

  /**
   * The property tests' world: three executions stored, members allowed 24 frames behind and
   * `kept` for all that lag, and what each execution had stored before any connection opened.
   */
  async function threeFlooding(kept: number, kind: Parameters<typeof storeWith>[1]) {
    const fixture = withTopics({ subscriber_queue_bytes: queueBytesFor(24), lagging_kept_bytes: kept }, kind);
    const ids = [fixture.create(1), fixture.create(2), fixture.create(3)];
    await fixture.store.durable();
    const before = new Map(ids.map((id) => [id, fixture.store.get(id)!.last_sequence]));
    return { ...fixture, ids, before };
  }

  /** `count` connections following one execution, caught up and sharing its topic. */
  async function onTopic(count: number, overrides: Parameters<typeof storeWith>[0] = {}, kind: Parameters<typeof storeWith>[1] = "memory") {
    const fixture = withTopics(overrides, kind);
    const id = fixture.create(1);
    const sockets = Array.from({ length: count }, () => new FakeSocket(fixture.hub));
    for (const s of sockets) fixture.live.open(s, { executions: [id] });
    fixture.progress(id, 1);
    await settle();
    expect(sockets.map((s) => s.topics.size)).toEqual(sockets.map(() => 1));
    return { ...fixture, id, sockets };
  }

  test("caught-up connections following the same thing share one publish per event", async () => {
    const { live, create, progress, hub } = withTopics();
    const id = create(1);
    const sockets = [new FakeSocket(hub), new FakeSocket(hub), new FakeSocket(hub)];
    for (const s of sockets) live.open(s, { executions: [id] });
    // The first joined alone would gain nothing: it joins at its next write, once it has company.
    expect(sockets.map((s) => s.topics.size)).toEqual([0, 1, 1]);
    progress(id, 1);
    await settle();
    expect(sockets.map((s) => s.topics.size)).toEqual([1, 1, 1]);
    const sendsBefore = sockets.map((s) => s.sent);
    // A trickle: a few events at a time.
    for (let i = 0; i < 5; i++) {
      progress(id, 2);
      await settle();
    }
    expect(hub.published).toBe(11);
    for (const [i, s] of sockets.entries()) {
      expect(s.events().map((e) => e.sequence)).toEqual(Array.from({ length: 13 }, (_, k) => k + 1));
      expect(s.sent).toBe(sendsBefore[i]!);
    }
  });

  test("a flood is written to each member in corked batches off the topic (a publish is a write per member per frame); caught up, they share the topic again", async () => {
    const { progress, hub, id, sockets } = await onTopic(3);
    const published = hub.published;
    const corks = sockets.map((s) => s.corks);
    progress(id, 500);
    await settle();
    // No frame of the flood went by publish; each member got it in a few corked writes of its own.
    expect(hub.published).toBe(published);
    for (const [i, s] of sockets.entries()) {
      expect(s.events().map((e) => e.sequence)).toEqual(Array.from({ length: 503 }, (_, k) => k + 1));
      expect(s.corks - corks[i]!).toBeLessThanOrEqual(4);
      expect(s.topics.size).toBe(1);
    }
    progress(id, 1);
    await settle();
    expect(hub.published).toBe(published + 1);
  });

  test("a cursor ahead of what is stored joins no topic until it is passed: nothing at or below it is written", async () => {
    const { live, create, progress, hub } = withTopics();
    const id = create(1);
    progress(id, 2);
    await settle();
    // Stored: sequences 1..4. Two watchers from the start, one whose cursor is 6 (it claims more).
    const sockets = [new FakeSocket(hub), new FakeSocket(hub), new FakeSocket(hub)];
    live.open(sockets[0]!, { executions: [id] });
    live.open(sockets[1]!, { executions: [id] });
    live.open(sockets[2]!, { executions: [id], after: 6 });
    for (let i = 0; i < 6; i++) {
      progress(id, 1);
      await settle();
    }
    expect(sockets[0]!.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(sockets[2]!.events().map((e) => e.sequence)).toEqual([7, 8, 9, 10]);
    // Past its cursor, it shares the topic like the others.
    expect(sockets.map((s) => s.topics.size)).toEqual([1, 1, 1]);
  });

  test("a member that leaves its topic while the sqlite store holds a write not yet committed gets that write too", async () => {
    const { live, progress, store, id, sockets } = await onTopic(3, {}, "sqlite");
    // A batch the writer will publish on its next turn, then a write the store has not committed.
    progress(id, 300);
    await new Promise((resolve) => setImmediate(resolve));
    progress(id, 5);
    // The third member's buffer is full: it leaves the topic at the writer's next look.
    sockets[2]!.buffered = 1 << 30;
    sockets[2]!.mode = "backpressure";
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    sockets[2]!.buffered = 0;
    sockets[2]!.mode = "ok";
    live.drain(sockets[2]!);
    await store.durable();
    await settle();
    const all = Array.from({ length: store.get(id)!.last_sequence }, (_, i) => i + 1);
    // Subscribing again once wrote the pending batch first and handed it to nobody: 5 events lost.
    for (const s of sockets) expect(s.events().map((e) => e.sequence)).toEqual(all);
    store.close();
  });

  test("events the store let go before handing them out (retention during a storage fault) are announced where the gap is, by stream.lagged, to every follower", async () => {
    const fixture = storeWith();
    // A store that hands out no event of sequences 5 to 8: what a sqlite store on a full disk lets go.
    const gapped = { ...fixture.store, subscribe: (options: any, listener: any) => fixture.store.subscribe(options, (e: any, j: any) => (e.sequence >= 5 && e.sequence <= 8 ? undefined : listener(e, j))) };
    const live = new LiveChannel({ store: gapped, limits: fixture.limits, clock: new FakeLiveClock() });
    const id = fixture.create(1);
    const [named, all] = [new FakeSocket(), new FakeSocket()];
    live.open(named, { executions: [id] });
    live.open(all, { executions: "all" });
    await settle();
    fixture.progress(id, 10);
    await untilWritten(live);
    for (const socket of [named, all]) {
      const frames = socket.frames.filter((f: any) => f.type !== "stream.ready");
      const gap = frames.findIndex((f: any) => f.type === "stream.lagged");
      expect(frames.slice(0, gap).map((f: any) => f.sequence).slice(-2)).toEqual([3, 4]);
      expect(frames[gap]).toMatchObject({ type: "stream.lagged", dropped: 4, last_sequence: { [id]: 4 } });
      expect(frames[gap].message).toContain(`Events 5 to 8 of ${id} were dropped by its retention`);
      expect(frames.slice(gap + 1).map((f: any) => f.sequence)).toEqual([9, 10, 11, 12]);
    }
  });

  test("a connection opened after every other closed, while its execution went on, gets each event once and no stream.lagged: events handed out to nobody are no gap (live-channel tester, session 41)", async () => {
    const fixture = storeWith();
    const live = new LiveChannel({ store: fixture.store, limits: fixture.limits, clock: new FakeLiveClock() });
    const id = fixture.create(1);
    const first = new FakeSocket();
    live.open(first, { executions: [id] });
    await settle();
    fixture.progress(id, 3);
    await untilWritten(live);
    live.close(first);
    // Nobody connected: the channel holds no subscription while these are handed out.
    fixture.progress(id, 5);
    for (const target of [{ executions: [id], after: 0 }, { executions: "all" as const }]) {
      const next = new FakeSocket();
      live.open(next, target);
      await settle();
      fixture.progress(id, 2);
      await untilWritten(live);
      expect(next.frames.filter((f: any) => f.type === "stream.lagged")).toEqual([]);
      const sequences = next.events().map((e) => e.sequence);
      expect(sequences).toEqual([...new Set(sequences)].sort((a, b) => a - b));
      if ("after" in target) expect(sequences).toEqual(Array.from({ length: fixture.store.get(id)!.last_sequence }, (_, i) => i + 1));
      live.close(next);
      fixture.progress(id, 1);
    }
  });

  test("events the store let go are announced to a connection opened while no other was open, once it had its history (checking tester, session 41)", async () => {
    const fixture = storeWith();
    // A store that hands out no event of sequences 5 to 8: what a sqlite store on a full disk lets go.
    const gapped = { ...fixture.store, subscribe: (options: any, listener: any) => fixture.store.subscribe(options, (e: any, j: any) => (e.sequence >= 5 && e.sequence <= 8 ? undefined : listener(e, j))) };
    const live = new LiveChannel({ store: gapped, limits: fixture.limits, clock: new FakeLiveClock() });
    const id = fixture.create(1);
    // Handed out while nobody is connected.
    fixture.progress(id, 2);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id], after: 0 });
    await settle();
    fixture.progress(id, 8);
    await untilWritten(live);
    const frames = socket.frames.filter((f: any) => f.type !== "stream.ready");
    const gap = frames.findIndex((f: any) => f.type === "stream.lagged");
    expect(frames.slice(0, gap).map((f: any) => f.sequence)).toEqual([1, 2, 3, 4]);
    expect(frames[gap]).toMatchObject({ type: "stream.lagged", dropped: 4, last_sequence: { [id]: 4 } });
    expect(frames.slice(gap + 1).map((f: any) => f.sequence)).toEqual([9, 10, 11, 12]);
  });

  test("a topic's fast members cost the append path one listener for the whole group, not one each", async () => {
    const fixture = storeWith();
    // The channel sees a store whose listeners are counted.
    let calls = 0;
    const counted = { ...fixture.store, subscribe: (options: any, listener: any) => fixture.store.subscribe(options, (e: any, j: any) => (calls++, listener(e, j))) };
    const live = new LiveChannel({ store: counted, limits: fixture.limits, clock: new FakeLiveClock() });
    const hub = new FakeTopics();
    live.useTopics(hub);
    const id = fixture.create(1);
    const sockets = Array.from({ length: 50 }, () => new FakeSocket(hub));
    for (const s of sockets) live.open(s, { executions: [id] });
    fixture.progress(id, 1);
    await settle();
    expect(sockets.every((s) => s.topics.size === 1)).toBe(true);
    calls = 0;
    fixture.progress(id, 10);
    expect(calls).toBe(10);
    await settle();
    for (const socket of sockets) expect(socket.events().at(-1)!.sequence).toBe(13);
  });

  test("watchers of many different targets sharing one execution cost the append path one listener, not one per target", async () => {
    const fixture = storeWith();
    let calls = 0;
    const counted = { ...fixture.store, subscribe: (options: any, listener: any) => fixture.store.subscribe(options, (e: any, j: any) => (calls++, listener(e, j))) };
    const live = new LiveChannel({ store: counted, limits: fixture.limits, clock: new FakeLiveClock() });
    const flood = fixture.create(1);
    // Each watcher follows the flood and one execution of its own: 40 different targets (groups).
    const own = Array.from({ length: 40 }, (_, i) => fixture.create(2 + i));
    const sockets = own.map(() => new FakeSocket());
    own.forEach((id, i) => live.open(sockets[i]!, { executions: [flood, id] }));
    const quiet = new FakeSocket();
    live.open(quiet, { executions: [own[0]!] });
    await untilWritten(live);
    calls = 0;
    fixture.progress(flood, 50);
    expect(calls).toBe(50);
    fixture.progress(own[3]!, 2);
    await untilWritten(live);
    const stored = (id: string) => fixture.store.events(id, 0, 1000)!.events.map((e) => e.sequence);
    for (const [i, socket] of sockets.entries()) {
      const events = socket.events();
      // Every event of the flood and of its own execution, each once, in order: nothing of the others.
      expect(events.filter((e) => e.execution_id === flood).map((e) => e.sequence)).toEqual(stored(flood));
      expect(events.filter((e) => e.execution_id === own[i]).map((e) => e.sequence)).toEqual(stored(own[i]!));
      expect(events.every((e) => e.execution_id === flood || e.execution_id === own[i])).toBe(true);
    }
    expect(stored(flood).length).toBe(52);
    // A watcher of a quiet execution is written nothing of the flood.
    expect(quiet.events().every((e) => e.execution_id === own[0])).toBe(true);
  });

  test("a drain whose history read commits pending writes (sqlite) writes that client once, in order: no slice starts inside it", async () => {
    const { live, create, progress, store, clock } = setup({}, "sqlite");
    // The sqlite store's own commit, at once (it commits on a turn of its own otherwise).
    const commit = () => (store as unknown as { flush(): void }).flush();
    const early = create(1);
    progress(early, 100);
    const busy = create(2);
    progress(busy, 400);
    commit();
    await settle();
    const socket = new FakeSocket();
    socket.mode = "backpressure";
    live.open(socket, { executions: [early, busy] });
    // A live event committed (the writer waits for its turn), then writes not committed yet, and
    // time passes: the history read commits them, and their delivery would start a slice of its own.
    progress(busy, 1);
    commit();
    progress(busy, 200);
    clock.advance(10);
    socket.mode = "ok";
    live.drain(socket);
    for (let i = 0; i < 10 && live.writing; i++) await settle();
    await store.durable();
    await settle();
    for (const id of [early, busy]) {
      const sequences = socket.events().filter((e) => e.execution_id === id).map((e) => e.sequence);
      expect(sequences).toEqual(Array.from({ length: store.get(id)!.last_sequence }, (_, i) => i + 1));
    }
    expect(socket.types()).not.toContain("stream.lagged");
    store.close();
  });

  test("a cursor past what is stored, then a lag: what it lost at or below its cursor is neither counted nor announced", async () => {
    const { live, create, progress, store } = setup({ subscriber_queue_bytes: queueBytesFor(16) });
    const id = create(1);
    const after = store.get(id)!.last_sequence + 50;
    const socket = new FakeSocket();
    live.open(socket, { executions: [id], after });
    socket.mode = "backpressure";
    // 40 events at or below its cursor and 60 above, while it does not read.
    progress(id, 1);
    await settle();
    progress(id, 99);
    await settle();
    socket.mode = "ok";
    live.drain(socket);
    await settle();
    progress(id, 1);
    await settle();
    const events = socket.events().map((e) => e.sequence);
    expect(events.every((sequence) => sequence > after)).toBe(true);
    const notices = socket.frames.filter((f) => f.type === "stream.lagged");
    expect(notices).toHaveLength(1);
    const last = store.get(id)!.last_sequence;
    expect(events.length + notices[0].dropped).toBe(last - after);
    expect(notices[0].last_sequence).toEqual({ [id]: after });
  });

  test("a reconciliation lost in a lag is announced from the completion the client got", async () => {
    const { live, create, progress, store } = setup({ subscriber_queue_bytes: queueBytesFor(16) });
    const settled = create(1);
    const busy = create(2);
    const socket = new FakeSocket();
    live.open(socket, { executions: [settled, busy] });
    store.append(settled, [unknownEnd]);
    await settle();
    const completed = store.get(settled)!.last_sequence;
    expect(socket.events().at(-1)).toMatchObject({ execution_id: settled, sequence: completed });
    socket.mode = "backpressure";
    progress(busy, 1);
    await settle();
    progress(busy, 100);
    store.append(settled, [reconciled()]);
    await settle();
    socket.mode = "ok";
    live.drain(socket);
    await settle();
    const notice = socket.frames.find((f) => f.type === "stream.lagged");
    expect(notice.last_sequence[settled]).toBe(completed);
  });

  test("following all from a cursor: a finished execution whose outcome is unknown is held to the cursor too", async () => {
    const { live, create, store } = setup();
    const id = create(1);
    store.append(id, [unknownEnd]);
    const socket = new FakeSocket();
    live.open(socket, { executions: "all", after: 10 });
    store.append(id, [reconciled()]);
    await settle();
    expect(store.get(id)!.last_sequence).toBeLessThanOrEqual(10);
    expect(socket.events()).toEqual([]);
  });

  test("history already dropped is said once, by stream.ready's truncated and how many, not again by a notice", async () => {
    const { live, create, progress, store } = setup({ events_retained: 20 });
    const id = create(1);
    progress(id, 100);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    await settle();
    expect(socket.frames[0]).toMatchObject({ type: "stream.ready", truncated: true, dropped: store.get(id)!.last_sequence - 20, replayed: 20 });
    expect(socket.types()).not.toContain("stream.lagged");
    expect(socket.events()).toHaveLength(20);
  });

  test.each(["memory", "sqlite"] as const)("following all from a cursor with many executions held: they are looked at over several turns, then stream.ready, then every one's history once (%s store)", async (kind) => {
    const { live, create, progress, store } = setup({}, kind);
    // More than one page of heads (500): several turns.
    const ids = Array.from({ length: 1200 }, (_, i) => create(i + 1));
    for (const id of ids.slice(0, 10)) progress(id, 3);
    await store.durable();
    const socket = new FakeSocket();
    live.open(socket, { executions: "all", after: 0 });
    // Not all in one go: nothing is written before every execution was looked at.
    expect(socket.frames).toEqual([]);
    // Appends while it looks: each arrives once, after that execution's history.
    progress(ids[0]!, 2);
    progress(ids[1199]!, 2);
    for (let i = 0; i < 20 && live.writing; i++) await settle();
    await store.durable();
    await settle();
    expect(socket.frames[0]).toMatchObject({ type: "stream.ready" });
    for (const id of ids) {
      const sequences = socket.events().filter((e) => e.execution_id === id).map((e) => e.sequence);
      expect(sequences).toEqual(Array.from({ length: store.get(id)!.last_sequence }, (_, i) => i + 1));
    }
    store.close();
  });

  /** Each execution's sequences a socket got, in the order it got them. */
  const sequencesOf = (socket: FakeSocket, id: string) => socket.events().filter((e) => e.execution_id === id).map((e) => e.sequence);
  /**
   * More executions than a page of heads (500), from 10,000 on: with that many held, connections to
   * all of them from a cursor take turns (with fewer, each is planned at once).
   */
  const holdMany = (create: (n: number) => string) => {
    for (let i = 0; i < 501; i++) create(10_000 + i);
  };
  /** Events the store holds, all executions together: what a replay of everything from 0 sends. */
  const heldEvents = (store: { heads(cursor: undefined, limit: number): { items: Array<{ last_sequence: number }> } }) => store.heads(undefined, 1000).items.reduce((n, h) => n + h.last_sequence, 0);

  test("connections to every execution from a cursor take turns at their history, two at once: the others wait unplanned, then get all of it once", async () => {
    const { live, create, progress, store } = setup();
    holdMany(create);
    const ids = Array.from({ length: 30 }, (_, i) => create(i + 1));
    for (const id of ids) progress(id, 3);
    const [first, second, third, leaving] = [new FakeSocket(), new FakeSocket(), new FakeSocket(), new FakeSocket()];
    // The first two hold their turns: their sockets are full after one frame.
    first.mode = second.mode = "backpressure";
    for (const socket of [first, second, third, leaving]) live.open(socket, { executions: "all", after: 0 });
    await untilWritten(live);
    expect(first.frames).toHaveLength(1);
    expect(second.frames).toHaveLength(1);
    // Not planned, not in the log: nothing at all, not even stream.ready, and nothing kept for them.
    expect(third.frames).toEqual([]);
    expect(leaving.frames).toEqual([]);
    expect(live.connections).toBe(4);
    live.close(leaving);
    // What is stored while they wait is history to them once they are planned: each event once.
    progress(ids[0]!, 2);
    await untilWritten(live);
    expect(third.frames).toEqual([]);
    first.mode = "ok";
    live.drain(first);
    await untilWritten(live);
    expect(third.frames[0]).toMatchObject({ type: "stream.ready", replayed: heldEvents(store) });
    for (const socket of [first, third]) for (const id of ids) expect(sequencesOf(socket, id)).toEqual(Array.from({ length: store.get(id)!.last_sequence }, (_, k) => k + 1));
    expect(leaving.frames).toEqual([]);
    // Live events reach a connection once its history is sent, as any other.
    progress(ids[1]!, 1);
    await untilWritten(live);
    expect(sequencesOf(third, ids[1]!)).toEqual([1, 2, 3, 4, 5, 6]);
    second.mode = "ok";
    live.drain(second);
    await untilWritten(live);
    for (const id of ids) expect(sequencesOf(second, id)).toEqual(Array.from({ length: store.get(id)!.last_sequence }, (_, k) => k + 1));
  });

  test("an execution forgotten by the store before its history was sent is announced as gone, not as something to reload (tester T)", async () => {
    const { live, create, progress, store } = setup({ executions_retained: 3 });
    const ids = [1, 2, 3].map((n) => create(n));
    for (const id of ids) {
      progress(id, 300);
      store.append(id, [{ type: "execution.completed", data: { state: "succeeded", output: {}, duration_ms: 1 } }]);
    }
    const slow = new FakeSocket();
    slow.mode = "backpressure";
    live.open(slow, { executions: "all", after: 0 });
    await untilWritten(live);
    // While it cannot read, new executions push the oldest finished ones out of the store.
    create(4);
    create(5);
    expect(store.get(ids[0]!)).toBeNull();
    slow.mode = "ok";
    live.drain(slow);
    await untilWritten(live);
    const lagged = slow.frames.filter((f: any) => f.type === "stream.lagged" && Object.hasOwn(f.last_sequence, ids[0]!));
    expect(lagged.length).toBeGreaterThan(0);
    expect(lagged[0].message).toContain(`Execution ${ids[0]} was forgotten by the store`);
    expect(lagged[0].message).not.toContain("reload the snapshot");
  });

  test("with no more executions held than a page of heads, connections to every execution from a cursor never wait: each is planned at once", async () => {
    const { live, create, progress, store } = setup();
    const ids = Array.from({ length: 500 }, (_, i) => create(i + 1));
    progress(ids[0]!, 3);
    const sockets = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
    for (const socket of sockets) {
      socket.mode = "backpressure";
      live.open(socket, { executions: "all", after: 0 });
    }
    for (const socket of sockets) expect(socket.frames[0]).toMatchObject({ type: "stream.ready", replayed: heldEvents(store) });
  });

  test("a connection whose socket stays full 250 ms without draining gives its turn up, and is closed once it read none of its history for heartbeat_ms", async () => {
    const { live, create, progress, clock, store } = setup({ heartbeat_ms: 10_000 });
    holdMany(create);
    const ids = Array.from({ length: 5 }, (_, i) => create(i + 1));
    for (const id of ids) progress(id, 3);
    const stalled = [new FakeSocket(), new FakeSocket()];
    for (const socket of stalled) {
      socket.mode = "backpressure";
      socket.buffered = 64 * 1024;
      live.open(socket, { executions: "all", after: 0 });
    }
    const waiting = new FakeSocket();
    live.open(waiting, { executions: "all", after: 0 });
    await untilWritten(live);
    clock.advance(249);
    await untilWritten(live);
    expect(waiting.frames).toEqual([]);
    clock.advance(1);
    await untilWritten(live);
    expect(waiting.frames[0]).toMatchObject({ type: "stream.ready", replayed: heldEvents(store) });
    for (const id of ids) expect(sequencesOf(waiting, id)).toEqual([1, 2, 3, 4, 5]);
    // One of them reads again before heartbeat_ms: it gets all of its history, turn or not.
    stalled[0]!.mode = "ok";
    stalled[0]!.buffered = 0;
    live.drain(stalled[0]!);
    await untilWritten(live);
    for (const id of ids) expect(sequencesOf(stalled[0]!, id)).toEqual(Array.from({ length: store.get(id)!.last_sequence }, (_, k) => k + 1));
    // The other reads nothing for a heartbeat: closed, its place and plan given up.
    clock.advance(10_000);
    expect(stalled[1]!.closed).toEqual({ code: 1013, reason: "not reading its history" });
    expect(live.connections).toBe(2);
    // A caught-up connection that stops reading is kept, as ever (it lags instead).
    const live1 = new FakeSocket();
    live.open(live1, { executions: [ids[0]!] });
    live1.mode = "backpressure";
    live1.buffered = 64 * 1024;
    progress(ids[0]!, 2);
    await untilWritten(live);
    clock.advance(30_000);
    expect(live1.closed).toBeNull();
  });

  test("a holder whose socket fills in the middle of its history, while another waits, gives its turn up 250 ms later", async () => {
    const { live, create, progress, clock, store } = setup({ heartbeat_ms: 60_000 });
    holdMany(create);
    const ids = Array.from({ length: 100 }, (_, i) => create(i + 1));
    for (const id of ids) progress(id, 3);
    const holders = [new FakeSocket(), new FakeSocket()];
    for (const socket of holders) live.open(socket, { executions: "all", after: 0 });
    const waiting = new FakeSocket();
    live.open(waiting, { executions: "all", after: 0 });
    // Mid-history (a batch each so far), their readers stop.
    expect(holders[0]!.frames.length).toBeLessThan(heldEvents(store));
    for (const socket of holders) {
      socket.mode = "backpressure";
      socket.buffered = 64 * 1024;
    }
    // The writer's next turn meets the full sockets; no turn comes after it.
    await untilWritten(live);
    expect(waiting.frames).toEqual([]);
    clock.advance(249);
    expect(waiting.frames).toEqual([]);
    clock.advance(1);
    await untilWritten(live);
    expect(waiting.frames[0]).toMatchObject({ type: "stream.ready", replayed: heldEvents(store) });
    expect(waiting.events()).toHaveLength(heldEvents(store));
  });

  test("a connection waiting for its turn is pinged each heartbeat (no frame before stream.ready), and closed once a ping goes unanswered", async () => {
    const { live, create, progress, clock } = setup({ heartbeat_ms: 100 });
    holdMany(create);
    const id = create(1);
    // More history than the holders take in the test (a frame per drain).
    progress(id, 300);
    const holders = [new FakeSocket(), new FakeSocket()];
    for (const socket of holders) {
      socket.mode = "backpressure";
      socket.buffered = 1024;
      live.open(socket, { executions: "all", after: 0 });
    }
    const [answering, gone] = [new FakeSocket(), new FakeSocket()];
    // As a runtime's socket that answers pings itself says (adapter-bun.ts).
    Object.assign(answering, { answersPings: true });
    Object.assign(gone, { answersPings: true });
    live.open(answering, { executions: "all", after: 0 });
    live.open(gone, { executions: "all", after: 0 });
    // Turns move on after 250 ms; keep the holders' sockets draining a little so they hold them.
    // Pinged once quiet past heartbeat_ms (5 ticks of 25 ms), closed 5 ticks after an unanswered one.
    for (let t = 0; t < 16; t++) {
      for (const socket of holders) live.drain(socket);
      clock.advance(25);
      if (answering.pings > 0) live.pong(answering);
    }
    expect(answering.pings).toBeGreaterThan(0);
    expect(answering.frames).toEqual([]);
    expect(gone.pings).toBeGreaterThan(0);
    expect(gone.closed).toEqual({ code: 1001, reason: "no answer to ping" });
    expect(answering.closed).toBeNull();
  });

  test("a connection from a cursor that waited for its turn gets the executions created meanwhile from their first event, the others from its cursor", async () => {
    const { live, create, progress, store } = setup();
    holdMany(create);
    const before = Array.from({ length: 3 }, (_, i) => create(i + 1));
    for (const id of before) progress(id, 5);
    const holders = [new FakeSocket(), new FakeSocket()];
    for (const socket of holders) {
      socket.mode = "backpressure";
      live.open(socket, { executions: "all", after: 0 });
    }
    const waiting = new FakeSocket();
    live.open(waiting, { executions: "all", after: 3 });
    // Created, and grown, while it waits.
    const meanwhile = [create(10), create(11)];
    for (const id of meanwhile) progress(id, 4);
    progress(before[0]!, 1);
    await untilWritten(live);
    expect(waiting.frames).toEqual([]);
    for (const socket of holders) {
      socket.mode = "ok";
      live.drain(socket);
    }
    await untilWritten(live);
    expect(waiting.frames[0]).toMatchObject({ type: "stream.ready" });
    for (const id of before) expect(sequencesOf(waiting, id)).toEqual(Array.from({ length: store.get(id)!.last_sequence - 3 }, (_, k) => k + 4));
    for (const id of meanwhile) expect(sequencesOf(waiting, id)).toEqual(Array.from({ length: store.get(id)!.last_sequence }, (_, k) => k + 1));
    expect(waiting.types()).not.toContain("stream.lagged");
    // Later ones live, from their first event too.
    const later = create(20);
    progress(later, 1);
    await untilWritten(live);
    expect(sequencesOf(waiting, later)).toEqual(Array.from({ length: store.get(later)!.last_sequence }, (_, k) => k + 1));
  });

  test("a flood that keeps the loop from turning still gets the writer a bounded share on the append path", async () => {
    const { live, create, progress, clock } = setup();
    const id = create(1);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    const before = socket.events().length;
    // Appends with time passing and no turn of the loop in between (a worker's batches).
    for (let i = 0; i < 20; i++) {
      progress(id, 64);
      clock.advance(1);
    }
    // The writer got slices on the append path: most of the flood is out before any turn.
    const written = socket.events().length - before;
    expect(written).toBeGreaterThan(0);
    await settle();
    expect(socket.events().map((e) => e.sequence)).toEqual(Array.from({ length: 1282 }, (_, k) => k + 1));
    expect(socket.types()).not.toContain("stream.lagged");
  });

  test("under a flood the writer's share holds even when each of its batches takes longer than its slice: the overrun is paid back", async () => {
    // A send costs 20 µs: one batch of 256 frames to one watcher is 5 ms, five slices' worth.
    const { id, progress, clock, sending, drain } = await watchedFlood(4, 0.02);
    // 200 ms of the producer's own work, 64 events each millisecond, the loop never turning.
    for (let i = 0; i < 200; i++) {
      progress(id, 64);
      clock.advance(1);
    }
    // About SHARE (0.15) of the producer's 200 ms, give or take one batch; not the 30 % and more a
    // batch per gap would take.
    expect(sending()).toBeGreaterThan(0);
    expect(sending()).toBeLessThanOrEqual(0.15 * 200 + 5);
    // The rest goes out once the loop turns, all of it.
    await drain(2 + 200 * 64);
  });

  test("a flood that arrives a few events a turn is held to the writer's share too: every slice is charged", async () => {
    const { id, progress, clock, sending, drain } = await watchedFlood(4, 0.02);
    // 100 ms of the producer's own work, 10 events every 0.1 ms, the loop turning in between:
    // each turn sees a trickle, the whole is a flood (feeding it all would take 80 % of the time).
    let producing = 0;
    for (let i = 0; i < 1000; i++) {
      progress(id, 10);
      clock.advance(0.1);
      producing += 0.1;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    expect(sending()).toBeGreaterThan(0);
    expect(sending()).toBeLessThanOrEqual(0.15 * producing + 2);
    await drain(2 + 10_000);
  });

  test("several healthy watchers of a flood each keep up as one alone does: none is held back for the others", async () => {
    // 12,800 events; each watcher may fall 6,000 frames behind. Sends cost no time: a watcher is
    // behind only if the writer holds it back.
    const fixture = setup({ subscriber_queue_bytes: queueBytesFor(6_000) });
    const id = fixture.create(1);
    const watchers = Array.from({ length: 3 }, () => new FakeSocket());
    for (const socket of watchers) fixture.live.open(socket, { executions: [id] });
    await settle();
    for (let i = 0; i < 200; i++) {
      fixture.progress(id, 64);
      fixture.clock.advance(1);
    }
    await untilWritten(fixture.live);
    for (const socket of watchers) {
      expect(socket.types()).not.toContain("stream.lagged");
      expect(socket.events()).toHaveLength(2 + 200 * 64);
    }
  });

  test("without time passing, appends write nothing: the share is taken only from a flood that holds the loop", () => {
    const { live, create, progress } = setup();
    const id = create(1);
    const socket = new FakeSocket();
    live.open(socket, { executions: [id] });
    const before = socket.frames.length;
    for (let i = 0; i < 20; i++) progress(id, 64);
    expect(socket.frames.length).toBe(before);
  });

  test("a frame larger than subscriber_queue_bytes reaches a topic's caught-up members: nothing was waiting for them (live-channel tester)", async () => {
    const { progress, store, id, sockets } = await onTopic(2, { subscriber_queue_bytes: 512 });
    store.append(id, [{ type: "execution.log", data: { level: "info", message: "x".repeat(600) } }]);
    await settle();
    for (const s of sockets) {
      expect(s.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      expect(s.types()).not.toContain("stream.lagged");
      expect(s.topics.size).toBe(1);
    }
    progress(id, 2);
    await settle();
    for (const s of sockets) expect(s.events().slice(-2).map((e) => e.sequence)).toEqual([5, 6]);
  });

  test("a frame larger than subscriber_queue_bytes makes a topic's members with a frame waiting lag alone, resuming after what was published", async () => {
    const { progress, store, id, sockets } = await onTopic(2, { subscriber_queue_bytes: 512 });
    // Event 4 waits for the writer: the members are behind, and 4 and the large one do not fit the bound.
    progress(id, 1);
    store.append(id, [{ type: "execution.log", data: { level: "info", message: "x".repeat(600) } }]);
    for (const s of sockets) expect(s.topics.size).toBe(0);
    await settle();
    for (const s of sockets) {
      expect(s.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      expect(s.frames.at(-1)).toMatchObject({ type: "stream.lagged", dropped: 1, last_sequence: { [id]: 4 } });
    }
    // Each goes on alone from there, and rejoins the topic once caught up.
    progress(id, 2);
    await settle();
    for (const s of sockets) expect(s.events().slice(-2).map((e) => e.sequence)).toEqual([6, 7]);
  });

  test("a topic member whose buffer fills leaves the topic and lags alone; the others keep everything", async () => {
    const {
      live,
      progress,
      id,
      sockets: [slow, fast],
    } = await onTopic(2, { subscriber_queue_bytes: queueBytesFor(4) });
    slow.buffered = 10 * 1024 * 1024;
    // The writer looks at the members' buffers before it publishes: slow is taken off the topic
    // first, and this event waits in its own queue (a stalled member takes in nothing more).
    progress(id, 1);
    await settle();
    expect(slow.topics.size).toBe(0);
    for (let i = 0; i < 5; i++) {
      progress(id, 4);
      await settle();
    }
    slow.buffered = 0;
    live.drain(slow);
    expect(slow.events().map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(slow.frames.at(-1)).toMatchObject({ type: "stream.lagged", dropped: 17, last_sequence: { [id]: 7 } });
    expect(slow.topics.size).toBe(1);
    expect(fast.events().map((e) => e.sequence)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
  });

  test("a topic member that stopped reading takes in nothing more, from a trickle published or a flood sent", async () => {
    const {
      live,
      progress,
      id,
      sockets: [stalled, healthy],
    } = await onTopic(2, { subscriber_queue_bytes: queueBytesFor(400) });
    const before = stalled.frames.length;
    stalled.buffered = 10 * 1024 * 1024;
    stalled.mode = "backpressure";
    // A trickle is published, but the members' buffers are looked at first: the stalled one is
    // taken off the topic and takes in nothing of it.
    progress(id, 2);
    await settle();
    expect(stalled.topics.size).toBe(0);
    expect(stalled.frames.length).toBe(before);
    // A flood goes out by each member's own sends: the stalled one is blocked, the healthy one gets it all.
    progress(id, 300);
    await settle();
    expect(stalled.frames.length).toBe(before);
    expect(healthy.events().map((e) => e.sequence)).toEqual(Array.from({ length: 305 }, (_, i) => i + 1));
    expect(healthy.types()).not.toContain("stream.lagged");
    stalled.buffered = 0;
    stalled.mode = "ok";
    live.drain(stalled);
    await settle();
    expect(stalled.events().map((e) => e.sequence)).toEqual(Array.from({ length: 305 }, (_, i) => i + 1));
  });

  test.each(["memory", "sqlite"] as const)("following all of several executions, random floods and stalls: per execution in order and once, every gap announced by a notice that names what the client got, and dropped counts that add up (%s store)", async (kind) => {
    await fc.assert(
      fc.asyncProperty(
        opsOf({ executions: 3, sockets: 3, most: 200 }),
        keptBounds,
        async (ops, kept) => {
          const { live, progress, hub, store, ids, before } = await threeFlooding(kept, kind);
          const sockets = [new FakeSocket(hub), new FakeSocket(hub), new FakeSocket()];
          for (const s of sockets) live.open(s, { executions: "all" });
          await play(ops, { live, store, sockets, append: (op) => progress(ids[op.which ?? 0]!, op.n) });
          // What each execution had stored before the client opened is not sent (no cursor, no replay).
          for (const s of sockets) expectFollowed(s, new Set(ids), before, store);
          store.close();
        },
      ),
      { numRuns: 150 },
    );
  }, 30_000);

  test("a cursor at an execution's last stored sequence, then a lag: the notice names the cursor as what it got", async () => {
    const { live, create, progress, store } = setup({ subscriber_queue_bytes: queueBytesFor(24) });
    const quiet = create(1);
    const flood = create(2);
    progress(quiet, 1);
    const cursor = store.get(quiet)!.last_sequence;
    const socket = new FakeSocket();
    live.open(socket, { executions: [quiet, flood], after: cursor });
    await untilWritten(live);
    socket.mode = "backpressure";
    progress(flood, 100);
    progress(quiet, 3);
    await untilWritten(live);
    socket.mode = "ok";
    live.drain(socket);
    await untilWritten(live);
    const notice = socket.frames.find((f) => f.type === "stream.lagged");
    expect(notice.last_sequence[quiet]).toBe(cursor);
    store.close();
  });

  test("more lags held at once than the log keeps epochs for: each member of named executions is told exactly what it lost", async () => {
    const { live, create, progress, hub, store } = withTopics({ subscriber_queue_bytes: queueBytesFor(24) });
    const flood = create(1);
    const other = create(2);
    // 40 members, each stalling at its own moment of the flood and staying stalled: 40 lags held, past the 32 epochs kept.
    const sockets = Array.from({ length: 40 }, () => new FakeSocket(hub));
    for (const socket of sockets) live.open(socket, { executions: [flood, other] });
    await untilWritten(live);
    for (const socket of sockets) {
      socket.mode = "backpressure";
      socket.buffered = 1 << 30;
      progress(flood, 30);
      progress(other, 3);
      await untilWritten(live);
    }
    for (const socket of sockets) {
      socket.mode = "ok";
      socket.buffered = 0;
      live.drain(socket);
    }
    await untilWritten(live);
    const stored = store.get(flood)!.last_sequence + store.get(other)!.last_sequence;
    for (const socket of sockets) {
      const dropped = socket.frames.filter((f) => f.type === "stream.lagged").reduce((sum, f) => sum + f.dropped, 0);
      expect(socket.events().length + dropped).toBe(stored);
    }
    store.close();
  });

  test("history the store drops while it is sent, and a lag that began before its execution's next event: the second notice does not count again what the first announced", async () => {
    const { live, create, progress, store } = withTopics({ subscriber_queue_bytes: queueBytesFor(24), events_retained: 50 });
    const flood = create(1);
    const followed = create(2);
    progress(followed, 30);
    await store.durable();
    // It asks for the history of `followed` and reads nothing yet. Another execution's flood puts
    // it past its queue before `followed` stores anything more; then `followed` stores enough for
    // the store to drop the history it has not been sent.
    const socket = new FakeSocket();
    socket.mode = "backpressure";
    socket.buffered = 1 << 30;
    live.open(socket, { executions: [followed] });
    // Someone else follows the flood: the channel's one log holds it.
    live.open(new FakeSocket(), { executions: [flood] });
    await untilWritten(live);
    for (let i = 0; i < 4; i++) {
      progress(flood, 10);
      await untilWritten(live);
    }
    for (let i = 0; i < 10; i++) {
      progress(followed, 10);
      await untilWritten(live);
    }
    socket.mode = "ok";
    socket.buffered = 0;
    live.drain(socket);
    progress(followed, 1);
    await untilWritten(live);
    expect(socket.frames.filter((f) => f.type === "stream.lagged").length).toBeGreaterThanOrEqual(2);
    expectFollowed(socket, new Set([followed]), new Map([[followed, 0]]), store);
    store.close();
  });

  /** Which of `sockets` still keep a view of the log they were not written. */
  const keepingViews = (live: unknown, sockets: FakeSocket[]) => sockets.map((s) => (live as any).clients.get(s).view?.end > (live as any).clients.get(s).cursor);

  /** Stalled sockets read again: each is written what waits for it. */
  const resumeReading = (live: { drain(socket: FakeSocket): void }, sockets: FakeSocket[]) => {
    for (const socket of sockets) {
      socket.mode = "ok";
      socket.buffered = 0;
      live.drain(socket);
    }
  };

  test("what stalled members keep is bounded all together: the longest-kept stretch goes first, and its member is told exactly what it lost", async () => {
    // Each member may fall 24 frames behind; all of them together keep at most about 60 frames.
    const { live, create, progress, hub, store } = withTopics({ subscriber_queue_bytes: queueBytesFor(24), lagging_kept_bytes: queueBytesFor(60) });
    const flood = create(1);
    const other = create(2);
    await store.durable();
    const before = new Map([flood, other].map((id) => [id, store.get(id)!.last_sequence]));
    const everything = Array.from({ length: 3 }, () => new FakeSocket(hub));
    const named = Array.from({ length: 3 }, () => new FakeSocket(hub));
    const stallers = [everything[0]!, named[0]!, everything[1]!, named[1]!, everything[2]!, named[2]!];
    for (const socket of everything) live.open(socket, { executions: "all" });
    for (const socket of named) live.open(socket, { executions: [flood, other] });
    const healthy = new FakeSocket();
    live.open(healthy, { executions: "all" });
    await untilWritten(live);
    const held = () => keepingViews(live, stallers);
    // Six members stall one after the other, each past its queue: each keeps about 24 frames,
    // the newest views are kept while the total allows and the oldest are given up.
    const framesAtStall: number[] = [];
    for (const socket of stallers) {
      framesAtStall.push(socket.frames.length);
      socket.mode = "backpressure";
      socket.buffered = 1 << 30;
      // In steps the writer keeps up with: only the stalled member falls behind.
      for (let step = 0; step < 4; step++) {
        progress(flood, 10);
        await untilWritten(live);
      }
      progress(other, 2);
      await untilWritten(live);
    }
    expect(held()).toEqual([false, false, false, false, true, true]);
    resumeReading(live, stallers);
    progress(other, 1);
    await untilWritten(live);
    // Following named executions replays their history; following all begins at what is stored then.
    for (const socket of [...named]) expectFollowed(socket, new Set([flood, other]), new Map([[flood, 0], [other, 0]]), store);
    for (const socket of [...everything, healthy]) expectFollowed(socket, new Set([flood, other]), before, store);
    expect(healthy.frames.some((f) => f.type === "stream.lagged")).toBe(false);
    for (const socket of stallers) expect(socket.frames.filter((f) => f.type === "stream.lagged")).toHaveLength(1);
    // The two that kept their stretch were written it before the notice; the others lost theirs
    // (but the one frame their socket took as it filled).
    const keptThenNotice = stallers.map((socket, i) => socket.frames.findIndex((f) => f.type === "stream.lagged") - framesAtStall[i]!);
    expect(keptThenNotice.map((n) => n > 20)).toEqual([false, false, false, false, true, true]);
    expect(keptThenNotice.slice(0, 4).every((n) => n <= 1)).toBe(true);
    store.close();
  });

  test("members that stall at the same moment hold the same stretch of the log, counted once against what stalled members keep: none is given up early (cockpit tester)", async () => {
    // Each may fall 24 frames behind; all together keep about 40 frames: less than three stretches, more than one.
    const { live, create, progress, hub, store } = withTopics({ subscriber_queue_bytes: queueBytesFor(24), lagging_kept_bytes: queueBytesFor(40) });
    const flood = create(1);
    await store.durable();
    const stallers = Array.from({ length: 3 }, () => new FakeSocket(hub));
    for (const socket of stallers) live.open(socket, { executions: "all" });
    await untilWritten(live);
    const framesAtStall = stallers.map((socket) => socket.frames.length);
    for (const socket of stallers) {
      socket.mode = "backpressure";
      socket.buffered = 1 << 30;
    }
    for (let step = 0; step < 4; step++) {
      progress(flood, 10);
      await untilWritten(live);
    }
    const held = () => keepingViews(live, stallers);
    // Before, each was counted for its whole stretch: the first two were given up at once.
    expect(held()).toEqual([true, true, true]);
    resumeReading(live, stallers);
    progress(flood, 1);
    await untilWritten(live);
    for (const [i, socket] of stallers.entries()) {
      const notice = socket.frames.findIndex((f) => f.type === "stream.lagged");
      expect(notice - framesAtStall[i]!).toBeGreaterThan(20);
      expect(socket.frames.filter((f) => f.type === "stream.lagged")).toHaveLength(1);
    }
    store.close();
  });

  test.each(["memory", "sqlite"] as const)("following different sets of executions, random floods and stalls: each gets only what it follows, per execution in order and once, every gap announced, dropped counts that add up (%s store)", async (kind) => {
    await fc.assert(
      fc.asyncProperty(
        opsOf({ executions: 3, sockets: 4, most: 200 }),
        keptBounds,
        async (ops, kept) => {
          const { live, progress, hub, store, ids, before } = await threeFlooding(kept, kind);
          // Two different targets sharing an execution, one execution alone off any topic, and everything.
          const targets = [[ids[0]!, ids[1]!], [ids[1]!, ids[2]!], [ids[0]!], ids];
          const sockets = [new FakeSocket(hub), new FakeSocket(hub), new FakeSocket(), new FakeSocket(hub)];
          sockets.forEach((socket, i) => live.open(socket, { executions: i === 3 ? "all" : targets[i]! }));
          await play(ops, { live, store, sockets, append: (op) => progress(ids[op.which ?? 0]!, op.n) });
          // Following named executions without a cursor replays their history first; following all does not.
          sockets.forEach((s, i) => expectFollowed(s, new Set(targets[i]!), new Map(ids.map((id) => [id, i === 3 ? before.get(id)! : 0])), store));
          store.close();
        },
      ),
      { numRuns: 60 },
    );
  }, 30_000);

  test.each(["memory", "sqlite"] as const)("connections opened mid-flood with a cursor get their history a page at a time, then live: in order, once, every gap announced (%s store)", async (kind) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant("append" as const), n: fc.integer({ min: 1, max: 600 }) }),
            fc.record({ op: fc.constant("open" as const), after: fc.integer({ min: 0, max: 2000 }), full: fc.boolean() }),
            fc.record({ op: fc.constant("drain" as const), who: fc.integer({ min: 0, max: 5 }) }),
            fc.record({ op: fc.constant("turn" as const) }),
          ),
          { maxLength: 25 },
        ),
        fc.constantFrom(0, queueBytesFor(300), queueBytesFor(1000), 128 * 1024 * 1024),
        async (ops, kept) => {
          // Few events retained: history can be dropped while a connection is still being sent it.
          const { live, create, progress, hub, store } = withTopics({ subscriber_queue_bytes: queueBytesFor(400), events_retained: 700, lagging_kept_bytes: kept }, kind);
          const id = create(1);
          const opened: Array<{ socket: FakeSocket; after: number }> = [];
          for (const op of ops) {
            if (op.op === "append") progress(id, op.n);
            else if (op.op === "turn") await new Promise((resolve) => setImmediate(resolve));
            else if (op.op === "open") {
              const socket = new FakeSocket(hub);
              if (op.full) socket.mode = "backpressure";
              live.open(socket, { executions: [id], after: op.after });
              opened.push({ socket, after: op.after });
            } else if (opened[op.who]) {
              opened[op.who]!.socket.mode = "ok";
              live.drain(opened[op.who]!.socket);
            }
          }
          for (const { socket } of opened) {
            socket.mode = "ok";
            live.drain(socket);
          }
          for (let i = 0; i < 20 && live.writing; i++) await settle();
          await store.durable();
          await settle();
          const last = store.get(id)!.last_sequence;
          for (const { socket, after } of opened) {
            // Every event after its cursor was received or counted lost, by stream.ready or a notice.
            const lost = socket.frames.reduce((sum, f) => sum + (f.type === "stream.lagged" || f.type === "stream.ready" ? f.dropped : 0), 0);
            expect(socket.events().length + lost).toBe(Math.max(0, last - after));
            let got = after;
            // History dropped before it opened is announced by stream.ready's truncated.
            let lagged = socket.frames[0].truncated === true;
            for (const frame of socket.frames) {
              if (frame.type === "stream.lagged") {
                // What it got, counting its cursor as got.
                expect(frame.last_sequence[id]).toBe(got);
                lagged = true;
              }
              if (typeof frame.sequence !== "number") continue;
              if (lagged) expect(frame.sequence).toBeGreaterThan(got);
              else expect(frame.sequence).toBe(got + 1);
              lagged = false;
              got = frame.sequence;
            }
            // Everything up to the last event, unless the connection was told it lost the end.
            if (!lagged && after < last) expect(got).toBe(last);
          }
          store.close();
        },
      ),
      { numRuns: 100 },
    );
  }, 30_000);

  test.each(["memory", "sqlite"] as const)("random interleavings of appends, backpressure and drains never deliver an event twice or out of order, nor lose one unannounced (%s store)", async (kind) => {
    await fc.assert(
      fc.asyncProperty(
        opsOf({ executions: 1, sockets: 4, most: 300 }),
        keptBounds,
        async (ops, kept) => {
          const { live, create, progress, hub, store } = withTopics({ subscriber_queue_bytes: queueBytesFor(16), lagging_kept_bytes: kept }, kind);
          const id = create(1);
          const sockets = [new FakeSocket(hub), new FakeSocket(hub), new FakeSocket(hub), new FakeSocket()];
          for (const s of sockets) live.open(s, { executions: [id] });
          await play(ops, { live, store, sockets, append: (op) => progress(id, op.n) });
          const last = store.get(id)!.last_sequence;
          for (const s of sockets) {
            let expected = 1;
            // In order, each event once; a gap only right after a stream.lagged that names where it
            // begins; and, unless the last frame is such a notice, everything up to the last event.
            let got = 0;
            for (const frame of s.frames) {
              if (frame.type === "stream.lagged") {
                expected = -1;
                // It names the last sequence this client got, never one it did not.
                expect(frame.last_sequence[id]).toBe(got);
              }
              if (typeof frame.sequence !== "number") continue;
              got = frame.sequence;
              if (expected !== -1) expect(frame.sequence).toBe(expected);
              expected = frame.sequence + 1;
            }
            if (expected !== -1) expect(expected - 1).toBe(last);
          }
          store.close();
        },
      ),
      { numRuns: 200 },
    );
  }, 20_000);
});
