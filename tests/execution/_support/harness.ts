import * as v from "valibot";
import { capability } from "../../../runtime/capability/declaration.ts";
import { CapabilityError } from "../../../runtime/capability/capability-error.ts";
import { sensitive } from "../../../runtime/capability/sensitive.ts";
import { planeOf } from "../../../runtime/capability/plane-of.ts";
import { createEngine, type Engine, type EngineOptions } from "../../../runtime/execution/engine.ts";
import { resolveLimits, type Limits } from "../../../runtime/execution/limits.ts";
import type { EdgeInfo } from "../../../runtime/execution/plane.ts";
import { createMemoryStore } from "../../../runtime/store/memory-store.ts";
import type { ExecutionStore } from "../../../runtime/store/store.ts";
import { ManualClock } from "../../_support/manual-clock.ts";
import { catalog, registered } from "../../_support/registered.ts";
import { FakePool } from "./fake-pool.ts";

/** The caller every engine test acts as. */
export const EDGE: EdgeInfo = { actor: { kind: "http" }, request_id: "req-1", trace_id: "0af7651916cd43dd8448eb211c80319c" };

const noop = async () => {
  throw new Error("test capabilities run on the fake pool, never here");
};

/** How many defaults demo.stamped computed: each start's differs. */
let stamps = 0;

/** Capabilities whose handlers the fake pool plays; only their declarations matter. */
export const TEST_CAPABILITIES = {
  read: registered(
    capability({
      id: "demo.read",
      title: "Read",
      description: "A cancellable read.",
      effect: "read",
      cancellable: true,
      input: v.object({ n: v.optional(v.number(), 1) }),
      output: v.object({ n: v.number() }),
      handler: noop,
    }),
  ),
  write: registered(
    capability({
      id: "demo.write",
      title: "Write",
      description: "A write that does not check cancellation.",
      effect: "write",
      input: v.object({}),
      output: v.object({ ok: v.boolean() }),
      handler: noop,
    }),
  ),
  timed: registered(
    capability({
      id: "demo.timed",
      title: "Timed",
      description: "A cancellable write with a deadline.",
      effect: "write",
      cancellable: true,
      timeout_ms: 1000,
      input: v.object({}),
      output: v.object({ ok: v.boolean() }),
      handler: noop,
    }),
  ),
  numeric: registered(
    capability({
      id: "demo.numeric",
      title: "Numeric",
      description: "Reads a number from a text, unchecked.",
      effect: "read",
      input: v.object({ n: v.pipe(v.string(), v.transform(Number)) }),
      output: v.object({}),
      handler: noop,
    }),
  ),
  keyed: registered(
    capability({
      id: "demo.keyed",
      title: "Keyed",
      description: "A transform that makes a key of a secret.",
      effect: "read",
      input: v.object({ pin: sensitive(v.pipe(v.string(), v.transform((pin) => ({ [pin]: Number.NaN })))) }),
      output: v.object({}),
      handler: noop,
    }),
  ),
  stamped: registered(
    capability({
      id: "demo.stamped",
      title: "Stamped",
      description: "A default computed at each start, as a timestamp is.",
      effect: "write",
      input: v.object({ label: v.string(), at: v.optional(v.string(), () => `t${++stamps}`) }),
      output: v.object({}),
      handler: noop,
    }),
  ),
  secret: registered(
    capability({
      id: "demo.secret",
      title: "Secret",
      description: "Input with secrets at several depths.",
      effect: "read",
      errors: ["quota_exceeded"],
      input: v.object({
        user: v.string(),
        auth: v.object({ token: sensitive(v.string()) }),
        keys: v.array(v.object({ name: v.string(), key: sensitive(v.string()) })),
        maybe: v.optional(v.nullable(sensitive(v.string()))),
      }),
      output: v.object({}),
      handler: noop,
    }),
  ),
  guarded: registered(
    capability({
      id: "demo.guarded",
      title: "Guarded",
      description: "A whole-input check whose message quotes the secret field.",
      effect: "read",
      input: v.pipe(
        v.object({ user: v.string(), token: sensitive(v.string()), keys: v.optional(sensitive(v.record(v.string(), v.string()))) }),
        v.check((o) => o.user !== "root", (issue) => `user ${issue.input.user} may not use token ${issue.input.token} (${JSON.stringify(issue.input)})`),
      ),
      output: v.object({}),
      handler: noop,
    }),
  ),
  cached: registered(
    capability({
      id: "demo.cached",
      title: "Cached",
      description: "A read whose direct calls are cached.",
      effect: "read",
      cache: { ttl_ms: 1000 },
      input: v.object({ q: v.string() }),
      output: v.object({ q: v.string() }),
      handler: noop,
    }),
  ),
  renamed: registered(
    capability({
      id: "demo.renamed",
      title: "Renamed",
      description: "A write whose input schema moves its secret somewhere else (tester: t.rename).",
      effect: "write",
      input: v.pipe(
        v.object({ user: v.string(), tok: sensitive(v.string()), tries: v.optional(v.number(), 3) }),
        v.transform((o) => ({ user: o.user, tries: o.tries, auth: { bearer: o.tok } })),
      ),
      output: v.object({ ok: v.boolean() }),
      handler: noop,
    }),
  ),
  defaulted: registered(
    capability({
      id: "demo.defaulted",
      title: "Defaulted",
      description: "A read whose secrets come from defaults, never sent, that transforms then move (tester: s.envdef, s.defenv).",
      effect: "read",
      input: v.pipe(
        v.object({
          user: v.string(),
          tok: v.optional(sensitive(v.string()), () => "DefaultSecret9"),
          nested: v.optional(v.pipe(v.object({ key: v.optional(sensitive(v.string()), "NestedDefault7") }), v.transform((o) => o.key)), {}),
        }),
        v.transform((o) => ({ user: o.user, auth: { bearer: o.tok, key: o.nested } })),
      ),
      output: v.object({ ok: v.boolean() }),
      handler: noop,
    }),
  ),
  wrapped: registered(
    capability({
      id: "demo.wrapped",
      title: "Wrapped",
      description: "A write whose field is JSON text that its schema parses into an object holding a secret (tester: t.wrap).",
      effect: "write",
      input: v.object({ user: v.string(), cfg: v.pipe(v.string(), v.transform((s) => JSON.parse(s) as unknown), v.object({ token: sensitive(v.string()) })) }),
      output: v.object({ ok: v.boolean() }),
      handler: noop,
    }),
  ),
  cachedSecret: registered(
    capability({
      id: "demo.cached-secret",
      title: "Cached with a secret",
      description: "A read whose direct calls are cached, with an optional secret (tester: t.cached).",
      effect: "read",
      cache: { ttl_ms: 60_000 },
      input: v.object({ account: v.string(), token: v.optional(sensitive(v.string())) }),
      output: v.object({ balance: v.number() }),
      handler: noop,
    }),
  ),
  deploy: registered(
    capability({
      id: "demo.deploy",
      title: "Deploy",
      description: "A write with an optional switch, and a nested target.",
      effect: "write",
      input: v.object({
        env: v.string(),
        dry_run: v.optional(v.boolean(), false),
        target: v.optional(v.object({ region: v.string() })),
        // What the check gives back need not look like what was sent: no field of it is undeclared.
        when: v.optional(v.pipe(v.object({ y: v.number(), m: v.number() }), v.transform((o) => new Date(Date.UTC(o.y, o.m))))),
        items: v.optional(v.array(v.object({ name: v.string(), dry_run: v.optional(v.boolean()) }))),
        labels: v.optional(v.record(v.string(), v.string())),
        extra: v.optional(v.looseObject({ a: v.string() })),
        route: v.optional(v.union([v.object({ host: v.string() }), v.object({ host: v.string(), port: v.number() })])),
        withheld: v.optional(v.boolean()),
      }),
      output: v.object({ ok: v.boolean() }),
      handler: noop,
    }),
  ),
  tally: registered(
    capability({
      id: "demo.tally",
      title: "Tally",
      description: "A read whose output schema takes what JSON would write as {} or null: a record takes a Map, any a Set, a number Infinity.",
      effect: "read",
      input: v.object({}),
      output: v.object({ counts: v.record(v.string(), v.number()), tags: v.optional(v.any()), ratio: v.optional(v.number()) }),
      handler: noop,
    }),
  ),
  plane: registered(
    capability({
      id: "plane.echo",
      title: "Plane echo",
      description: "A plane capability: runs in the main thread.",
      effect: "read",
      execution: "never",
      input: v.object({ fail: v.optional(v.boolean(), false), answer: v.optional(v.picklist(["extra_member", "wrong_type"])) }),
      output: v.object({ root: v.string(), request_id: v.string() }),
      handler(input, ctx) {
        if (input.fail) throw new CapabilityError("not_found", "Nothing here.");
        const plane = planeOf(ctx);
        // Outputs off their schema, to show that a plane capability's is still checked.
        if (input.answer === "extra_member") return { root: plane.root, request_id: plane.edge.request_id, internal: 1 } as never;
        if (input.answer === "wrong_type") return { root: 1, request_id: plane.edge.request_id } as never;
        return { root: plane.root, request_id: plane.edge.request_id };
      },
    }),
    { plane: true },
  ),
};

export interface Harness {
  engine: Engine;
  store: ExecutionStore;
  pool: FakePool;
  clock: ManualClock;
  limits: Limits;
  logged: string[];
}

/** An engine over the memory store, a fake pool and a manual clock; `options` adds what the engine is given besides. */
export function harness(overrides: Partial<Limits> = {}, options: Pick<EngineOptions, "processAlive" | "pidNamespace" | "leftReports"> = {}): Harness {
  const limits = resolveLimits({ overrides });
  const clock = new ManualClock();
  const store = createMemoryStore({ limits, clock: () => clock.now() });
  const pool = new FakePool(clock);
  const logged: string[] = [];
  const engine = createEngine({
    registry: catalog(Object.values(TEST_CAPABILITIES)),
    store,
    pool,
    limits,
    root: "/checkout",
    storeKind: "memory",
    clock,
    log: (line) => logged.push(line),
    ...options,
  });
  return { engine, store, pool, clock, limits, logged };
}
