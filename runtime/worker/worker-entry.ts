// The main of every pool worker: serves "docket" and "valibot", loads declarations, runs handlers.
import { AsyncLocalStorage } from "node:async_hooks";
import { dirname, relative } from "node:path";
import { createRequire } from "node:module";
import type { MessagePort } from "node:worker_threads";
import { registerDocketModules } from "../adapter/bun-modules.ts";
import { collectGarbage } from "../adapter/collect-garbage.ts";
import { CAPABILITY_ERROR_MISUSE, CapabilityError } from "../capability/capability-error.ts";
import { createVersionImporter } from "./_import-version.ts";
import { importTarget } from "../capability/pinned-sources.ts";
import { prepareData } from "../capability/data-imports.ts";
import type { CapabilitySources } from "../capability/capability-sources.ts";
import type { ImportFailure } from "../capability/_import-failure.ts";
import type { CapabilityDef, HostFacts } from "../capability/declaration.ts";
import type { CapabilitySource } from "../capability/registered.ts";
import { fromWire, runIdOfWire, toWire, type FromWorker, type ToWorker, type WorkerBoot } from "./_messages.ts";
import { createWorkerContext, isCancellation, type WorkerContext } from "./_worker-context.ts";
import { spawnThroughMain } from "./_spawn-through-main.ts";
import { laneWorker, type TaskError, type TaskOutcome, type WorkerTask } from "./task.ts";
import { thrownClass, thrownDetail, thrownMessage, UNSAID } from "../execution/thrown.ts";
import { currentThread } from "./memory-watchdog.ts";
import { guardOwnProcess, onNestedWorkers, refusedCall } from "./_own-process.ts";
import { packagePaths } from "./_linked-packages.ts";
import { trackTopLevelWork, type PendingWork } from "./_top-level-deferrals.ts";
import { builtinsSnapshot, type BuiltinChanges } from "./_pristine-builtins.ts";
import { environmentBefore, putBackSecretVariables } from "./_env-secrets.ts";
import { builtinsIntact, replacedBuiltins } from "../execution/_masking-builtins.ts";
import { namedChanges, sharedPrototypes } from "./_shared-prototypes.ts";
import { sanitizeLine } from "../execution/text-sanitize.ts";
import { createSecretMask, maskedBeforeSafe } from "../execution/secret-mask.ts";
import { otherSecrets, type OtherSecrets } from "./_other-secrets.ts";
import { AUTOMATON_MAX_UNITS, unitsOf } from "../execution/_secret-index.ts";
import { captureConsole, type ConsoleTarget } from "./_console-capture.ts";
import { outputOver } from "./_output-size.ts";
import { jsonText, plainJsonProblem, type PlainJsonProblem } from "../execution/plain-json.ts";
import { MAX_INPUT_DEPTH } from "../execution/json-depth.ts";
import { beginTask, beginTimeOf, claimTime, endUnbegun, receiveTask } from "./_task-claim.ts";
import { setProcessStartedMs } from "../capability/_process-started.ts";

/** How many tasks' secrets a worker keeps masking in output no task owns. */
const RECENT_MASKS = 16;

/**
 * The shortest secret of another task masked in a task's texts. Only whole, one-line values this
 * long: a shorter one (a PIN, "main") blanked ordinary words of every caller on the worker, and
 * told them that some caller's secret was that word (checking tester, session 49).
 */
const OTHERS_MIN_LENGTH = 12;

/** The most of them masked (the newest): each is looked for in every text a task writes. */
const MAX_OTHER_SECRETS = 64;
// Taken before any capability loads: a handler that replaced process.memoryUsage would otherwise
// answer the memory watchdog's question itself, and stay under any limit (docs/containment.md).
const memoryUsage = process.memoryUsage.bind(process);
const heapUsed = () => memoryUsage().heapUsed;
/** A copy of `ctx.host()`'s facts for each caller, with the copier this thread began with. */
const copy = structuredClone;
/**
 * The timers and clock `withinLoadTime` uses, taken as the worker starts: a capability file's top
 * level that replaces the globals (a fake-timer library, a stub) must neither break the next
 * file's load time nor leave the sampler running.
 */
const ownTimers = { setTimeout, clearTimeout, setInterval, clearInterval, now: performance.now.bind(performance) };

// First, before any capability file is imported: their `import … from "docket"` must find us,
// and none may signal the process every execution runs in.
registerDocketModules();
guardOwnProcess();

// Required, not imported: the first ESM import of node:worker_threads in a thread fixes what its
// named exports are for that thread, and the guard must replace its Worker before (_own-process.ts).
const { parentPort, workerData } = createRequire(import.meta.url)("node:worker_threads") as typeof import("node:worker_threads");
if (parentPort) serve(parentPort, workerData as WorkerBoot);

interface Running {
  id: number;
  capability: string;
  context: WorkerContext;
  done: boolean;
  /** An execution's task, whose events are kept (a direct call's are not): its console output is its log. */
  logged: boolean;
  /** The task's `output_bytes`, when it has one. */
  outputBytes?: number;
  /** The environment as a task with secrets began (_env-secrets.ts); null for a task without. */
  environment: Record<string, string | undefined> | null;
}

/**
 * The task whose handler scheduled the code running now: Bun carries it through timers and
 * callbacks, so an error thrown by work a handler left running after its task ended is known as
 * that task's, not charged to the task running then (unhandled rejections carry none).
 */
const owner = new AsyncLocalStorage<Running>();

/** Answers the pool's messages on `port` until the worker is terminated. */
function serve(port: MessagePort, boot: WorkerBoot): void {
  setProcessStartedMs(boot.process_started_ms);
  const cancelFlag = new Int32Array(boot.cancel);
  const claim = new Int32Array(boot.claim);
  const begunAt = beginTimeOf(claim);
  const backlog = new Int32Array(boot.backlog);
  const definitions = createDefinitionCache(boot.load_timeout_ms);
  const hostRequests = new Map<number, { resolve(facts: HostFacts): void; reject(error: Error): void }>();
  let nextHostRequest = 1;
  let current: Running | null = null;

  // The port's postMessage as the worker began, bound once: a handler that replaced it (on the
  // port, or on MessagePort.prototype) left every later message unsent, its own outcome included,
  // and its execution running for good (foundation tester, session 48).
  const send = port.postMessage.bind(port);
  // What a handler may replace of it (on the port, or on MessagePort.prototype): docket's own sends
  // go through `send`, but the handler's next tasks on this worker, and their MessageChannels, met
  // the replacement (checking tester, session 48): a worker where it changed is retired.
  const postAtBoot = port.postMessage;
  const portPrototype = (Object.getPrototypeOf(port) as { postMessage?: unknown } | null) ?? null;
  const prototypePostAtBoot = portPrototype?.postMessage;
  const portIntact = () => port.postMessage === postAtBoot && (portPrototype === null || portPrototype.postMessage === prototypePostAtBoot);
  const post = (message: FromWorker) => send(toWire(message));
  // A thread a handler starts and leaves running is no task's: the pool's idle watch looks at the
  // process for what such threads take, while this worker has any (docs/containment.md).
  onNestedWorkers((threads) => post({ type: "nested", threads }));
  // The shared prototypes as this worker began: what a handler adds or replaces there (a deep
  // merge of an input's "__proto__" key) is taken back once its task ends, and what work it left
  // running changed, before the next task begins (docs/containment.md).
  const prototypes = sharedPrototypes();
  /** The capability of the task that ran here last, whose leftovers a change found between tasks is. */
  let lastCapability: string | null = null;
  // The masks of the tasks this worker ran last: code whose task the runtime lost track of (a
  // MessagePort or BroadcastChannel listener carries no async context) is masked with all of them.
  // Their secrets, kept to make one mask of them all (longest first, so that one task's secret
  // holding another's is masked whole, not in part): made when needed, and kept until the next task.
  const recentSecrets: string[][] = [];
  let recentMask: ((text: string) => string) | null = null;
  const maskRecent = (text: string) => (recentMask ??= createSecretMask(recentSecrets.flat()).text)(text);
  // Their long one-line secrets, masked where whole in every task's texts (see othersMask); made
  // when they change.
  let othersOfRecent: OtherSecrets | null | undefined;
  const othersMask = (): OtherSecrets | undefined => {
    if (othersOfRecent === undefined) {
      const long = [...new Set(recentSecrets.flat())].filter((secret) => secret.length >= OTHERS_MIN_LENGTH && !/[\r\n]/.test(secret));
      othersOfRecent = long.length === 0 ? null : otherSecrets(long.slice(-MAX_OTHER_SECRETS));
    }
    return othersOfRecent ?? undefined;
  };
  // What handler code prints is its execution's log, or the process's output (masked) when no
  // running execution owns the code printing: never another task's log.
  captureConsole(
    (): ConsoleTarget => {
      const of = owner.getStore();
      if (of !== undefined && !of.done && of.logged) return { kind: "execution", mask: of.context.mask, print: of.context.print, stream: of.context.ctx.progress.stream };
      return of === undefined ? { kind: "process", mask: maskRecent } : { kind: "process", mask: of.context.mask, write: of.context.output };
    },
    (stream, text) => post({ type: "output", stream, text }),
  );
  const children = spawnThroughMain(post);
  const askMain = () =>
    new Promise<HostFacts>((resolve, reject) => {
      const request = nextHostRequest++;
      hostRequests.set(request, { resolve, reject });
      post({ type: "host", request });
    });
  // Calls made while one is asked share its answer, each its own copy: a handler calling ctx.host()
  // a million times in a loop had the main thread build and send a million answers, growing the
  // server by gigabytes no worker's memory limit counted (containment tester, session 45). The
  // copies are the handler's thread's, which its limit does count.
  let asked: Promise<HostFacts> | null = null;
  const host = (): Promise<HostFacts> => {
    if (asked === null) {
      const asking = askMain();
      asked = asking;
      const done = () => {
        if (asked === asking) asked = null;
      };
      asking.then(done, done);
    }
    return asked.then((facts) => copy(facts));
  };

  /**
   * The message that ends `run`: its outcome, or its output refused — over `output_bytes`, or, as
   * its handler `returned` it, not plain JSON. A returned output is read once, by the JSON.stringify
   * that writes it (execution/plain-json.ts, jsonText), in the handler's thread, as its task's (a
   * `toJSON` it holds runs here): the text that crosses is what JSON made of it, checked as JSON
   * read it and stopped once past the limit, never a second reading of getters or a `toJSON`
   * (docs/handler-api.md). Other outcomes (docket's own) go as toWire sends them, measured too.
   */
  const outcomeMessage = (run: Running, outcome: TaskOutcome, returned: boolean): string | FromWorker => {
    const message = (outcome: TaskOutcome) => toWire<FromWorker>({ type: "outcome", id: run.id, outcome });
    if (!outcome.ok) return message(outcome);
    if (returned) {
      const limit = run.outputBytes ?? UNBOUNDED_OUTPUT;
      const written = owner.run(run, () => jsonText(outcome.output, MAX_INPUT_DEPTH, "output", limit));
      if (written.ok) return outcomeText(run.id, written.text);
      return message("over" in written ? tooLarge(written.over, true, limit) : notJson(written.problem));
    }
    const wire = message(outcome);
    return overLimit(run.id, wire, outcome.output, run.outputBytes) ?? wire;
  };

  const finish = (run: Running, outcome: TaskOutcome, returned = false) => {
    if (run.done) return;
    // Made while the task is still running: what a toJSON prints is its log, flushed with the rest
    // when its context closes, before the outcome.
    let message: string | FromWorker | null = null;
    let thrown: unknown;
    try {
      message = outcomeMessage(run, outcome, returned);
    } catch (error) {
      thrown = error;
    }
    run.done = true;
    run.context.close();
    if (current === run) current = null;
    // A trial's (capability "") refuses its file instead, and its worker is ended (tryLoad).
    if (run.capability !== "") {
      // Work a task before left running, which changed them before this task began, may have done it again meanwhile (third checking tester).
      takeBackPrototypes(leftoverOf === null ? `${run.capability}'s handler` : `${run.capability}'s handler, or work ${leftoverOf}'s task left running (which did before this task began)`, run.context.mask);
      if (run.environment !== null) forgetSecretVariables(run.environment, run.context.mask, `${run.capability}'s handler`, "before the task");
      if (!builtinsIntact() || !portIntact()) taintedBy(`${run.capability}'s handler`, run.context.mask);
      lastCapability = run.capability;
    }
    try {
      if (message === null) throw thrown;
      send(message);
    } catch (error) {
      // An output structured clone cannot copy (a function, a Symbol): what the handler returned
      // is refused, named where it is, as the main thread names a Map or an Infinity — nothing was
      // thrown by the handler, and the clone's stack is docket's own.
      if (outcome.ok) return post({ type: "outcome", id: run.id, outcome: { ok: false, error: notCopied(outcome.output) } });
      post({ type: "outcome", id: run.id, outcome: { ok: false, error: internal(error, "its result could not be sent to the main thread", run.context.mask) } });
    }
  };

  /**
   * Takes back what was added to or replaced on the shared prototypes (_shared-prototypes.ts), and
   * says so in the server's log: by `who` (a handler, during its task) or by what a task left
   * running (found as the next one begins).
   */
  const takeBackPrototypes = (who: string, mask: (text: string) => string): "none" | "put back" | "kept" => {
    let found;
    try {
      found = prototypes.takeBack();
    } catch (error) {
      // Never out of a task's end: what a handler left there must not hold the task (or its lane).
      post({ type: "problem", message: mask(`${laneWorker(boot.lane)}: the look at the prototypes every object shares after ${who} failed: ${(error as Error)?.message ?? String(error)}`) });
      return "none";
    }
    if (found === null) return "none";
    const left = found.kept.length === 0 ? "docket put them back as the worker began, so that no later task on it sees them" : `docket could not put back ${namedChanges(found.kept)} (not configurable, or frozen), so the worker is replaced once its task ends: no later task meets ${found.kept.length === 1 ? "it" : "them"}`;
    const message = mask(`${laneWorker(boot.lane)}: ${who} added or replaced ${namedChanges(found.changed)}, which every object of its thread shares (a deep merge of an input's "__proto__" key does so, or a polyfill); ${left}`);
    // What stays would reach every later task (a non-configurable Object.prototype.toJSON wrote one
    // task's secret into the next ones' outputs: second checking tester, session 45): the pool
    // replaces a tainted worker once its task ends.
    post({ type: found.kept.length === 0 ? "problem" : "tainted", message });
    return found.kept.length === 0 ? "put back" : "kept";
  };
  /**
   * Built-ins masking and docket's messages call were replaced (_masking-builtins.ts): masking
   * still runs with the originals, but a mask built from now on, and every task's code, would meet
   * them — this worker is replaced once its task ends (pool.ts), and the server's log says why.
   */
  let tainted = false;
  const taintedBy = (who: string, mask: (text: string) => string) => {
    if (tainted) return;
    tainted = true;
    const replaced = [...replacedBuiltins(), ...(portIntact() ? [] : ["the worker's MessagePort postMessage"])];
    post({ type: "tainted", message: mask(`${laneWorker(boot.lane)}: ${who} replaced ${listed(replaced)}, which every task of its worker shares (a polyfill, or a patch); docket masks with the originals and replaces the worker once its task ends, so that no later task runs with them. Do not replace built-ins in a capability.`) });
  };

  /** The environment as this worker began: what work a task left running set there since, holding a recent task's secret, is put back to it. */
  const environmentAtStart = environmentBefore();

  /**
   * Puts back the variables of process.env that hold a secret `mask` knows and differ from
   * `before` (_env-secrets.ts), and says so in the server's log: `who` put them there, `when` is
   * what they are put back to.
   */
  const forgetSecretVariables = (before: Record<string, string | undefined>, mask: (text: string) => string, who: string, when: string) => {
    const names = putBackSecretVariables(before, mask);
    if (names.length === 0) return;
    post({ type: "problem", message: `${laneWorker(boot.lane)}: ${who} put a secret in process.env (${names.map(mask).join(", ")}); docket put back what ${names.length === 1 ? "it" : "they"} held ${when}, so that no later task on this worker reads it. Pass a secret to a command with ctx.exec's env option instead.` });
  };

  /** The capability whose leftover work changed the prototypes before the task running now began, if any: it may be at it again. */
  let leftoverOf: string | null = null;

  /**
   * A task taken back while this worker prepared it (cancelled, or its deadline passed): the pool
   * settled it as never begun, so nothing of it runs and nothing is posted about it.
   */
  const abandon = (run: Running) => {
    if (run.done) return;
    run.done = true;
    run.context.close();
    if (current === run) current = null;
  };

  // The task a `receive` message received, whose `run` comes next.
  let receivedAhead: number | null = null;

  /**
   * Runs a task this worker received: prepares it, then begins it only if it is still its own
   * (see _task-claim.ts). Begun means its function was called; the file's top level, which ran
   * when it was imported, is not the handler.
   */
  const runTask = async (id: number, task: WorkerTask) => {
    if ((task.secrets?.length ?? 0) > 0) {
      recentSecrets.push(task.secrets!);
      // At most RECENT_MASKS tasks, and about as many secrets as one input may hold (their forms
      // are about four times a multi-line value): one mask of more would build an automaton of
      // hundreds of MiB (_secret-index.ts). The newest task's are always kept.
      while (recentSecrets.length > RECENT_MASKS || (recentSecrets.length > 1 && unitsOf(recentSecrets.flat()) > AUTOMATON_MAX_UNITS / 4)) recentSecrets.shift();
      recentMask = null;
      othersOfRecent = undefined;
    }
    // Its texts are masked with the long secrets of the tasks that ran here last too, where whole:
    // a module-level variable keeps what an earlier task put there (a client made with the first
    // caller's token), and this task's log showed it in clear (containment tester, session 49).
    const context = createWorkerContext({ id, task, cancelFlag, backlog, post, host, spawn: children.spawn, others: othersMask() });
    const run: Running = { id, capability: task.capability, context, done: false, logged: task.execution !== null, outputBytes: task.output_bytes, environment: (task.secrets?.length ?? 0) > 0 ? environmentBefore() : null };
    // What work an earlier task left running changed meanwhile is not this task's to meet.
    if (lastCapability !== null && task.entry !== "load") {
      const left = takeBackPrototypes(`work ${leftoverOf ?? lastCapability}'s task left running after it ended`, maskRecent);
      // Kept, this task would meet it (a timer's non-configurable Array.prototype.toJSON wrote an
      // earlier task's secret into its output: third checking tester, session 45). The thread ends
      // before the task begins: the pool runs it on a fresh worker (a task received, not begun).
      if (left === "kept") {
        exitThread(0);
        return;
      }
      // Blamed on the task that left it, as long as it goes on (not on each task it lands in).
      if (left !== "none") leftoverOf ??= lastCapability;
      else leftoverOf = null;
    }
    current = run;
    // Work an earlier task left running may have replaced them since: this task is the last here.
    if (!builtinsIntact() || !portIntact()) taintedBy(`work ${lastCapability ?? "an earlier task"}'s task left running`, maskRecent);
    // ...or put a secret of a recent task in the environment since it ended (a timer): put back as the worker began.
    if (recentSecrets.length > 0) forgetSecretVariables(environmentAtStart, maskRecent, `work ${lastCapability ?? "an earlier task"}'s task left running, after that task ended,`, "as the worker began");
    let outcome: TaskOutcome;
    let returned = false;
    try {
      // The warm path stays synchronous: a cached declaration and a handler that returns a plain
      // value post their outcome in the same turn that received the task, with no promise hops.
      if (task.entry === "load") {
        if (!beginTask(claim, id)) return abandon(run);
        outcome = { ok: true, output: await tryLoad(task, boot.load_timeout_ms, () => post({ type: "importing", id })) };
      } else {
        let def: CapabilityDef;
        try {
          def = definitions.loaded(task) ?? (await definitions.load(task));
        } catch (error) {
          // The file failed before its handler was called: the failure is the file's, and nothing
          // of the handler ran (unless a cancel or a deadline took the task back meanwhile).
          if (!endUnbegun(claim, id)) return abandon(run);
          // docket's own refusal of a version changed or gone on disk (_import-version.ts) keeps its
          // code, capability_changed, which says to run again once the file is reloaded.
          if (CapabilityError.is(error) && error.code === "capability_changed") return finish(run, { ok: false, error: classify(error, context) });
          return finish(run, { ok: false, error: await loadFailure(error, task, boot.load_timeout_ms) });
        }
        // The last thing before the handler: a cancel or a deadline that came during the import
        // or the input's parse took the task back, and then its handler never runs. Its start, for
        // a timeout_ms counted from it, is noted before the swap that publishes it.
        if (task.timed) begunAt[0] = claimTime();
        if (!beginTask(claim, id)) return abandon(run);
        const result = owner.run(run, () => (task.entry === "reconcile" ? reconcileOf(def)(task.input as never, context.ctx) : def.handler(task.input as never, context.ctx)));
        outcome = { ok: true, output: isThenable(result) ? await result : result };
        // A check's answer is kept as JSON writes it (reconciliation.md): only a handler's output is checked.
        returned = task.entry !== "reconcile";
      }
    } catch (error) {
      outcome = { ok: false, error: classify(error, context) };
    }
    finish(run, outcome, returned);
  };

  port.on("message", (data: string | ToWorker) => {
    // A task sent as text is received before its input is parsed (see runIdOfWire); one taken
    // back before is never parsed at all.
    const runId = runIdOfWire(data);
    if (runId !== null && !receiveTask(claim, runId)) return;
    const message = fromWire(data);
    switch (message.type) {
      case "receive":
        receivedAhead = receiveTask(claim, message.id) ? message.id : null;
        break;
      case "run": {
        const received = runId !== null || receivedAhead === message.id || receiveTask(claim, message.id);
        receivedAhead = null;
        if (received) void runTask(message.id, message.task);
        break;
      }
      case "cancel":
        if (current?.id === message.id) current.context.cancel();
        break;
      case "collect": {
        // Between tasks, or between two awaits of a handler the pool found over the memory limit:
        // what the heap still holds after it is what the handler keeps.
        collectGarbage();
        post({ type: "collected", held_mb: Math.round(heapUsed() / (1024 * 1024)) });
        break;
      }
      case "spawned":
      case "spawn_failed":
      case "child_output":
      case "child_exit":
      case "child_stdin_wanted":
        children.receive(message);
        break;
      case "host": {
        const pending = hostRequests.get(message.request);
        hostRequests.delete(message.request);
        if (message.facts) pending?.resolve(message.facts);
        else pending?.reject(new Error(message.error ?? "The main thread did not answer ctx.host()."));
        break;
      }
    }
  });

  // A stray timer or promise of a handler must not kill the worker silently: it fails the task it
  // belongs to while that task runs. One that outlived its task is logged, masked with that
  // task's secrets; one of unknown origin fails the task running, or is logged when none runs,
  // masked with the secrets of the tasks this worker ran last: a promise left to reject carries
  // no task (the runtime gives unhandledRejection no async context), and may be any of theirs.
  const uncaught = (error: unknown) => {
    const of = owner.getStore();
    if (of !== undefined && of !== current) {
      post({ type: "problem", message: `${laneWorker(boot.lane)} caught an error thrown by work ${of.capability} left running after its task ended (no task fails for it): ${thrownDetail(error, of.context.mask)}` });
      return;
    }
    // The running task's secrets are among the recent ones (when it has any): one mask, longest first.
    const running = current !== null && !current.done ? current : null;
    if (running !== null && endUnbegun(claim, running.id)) {
      // Left uncaught while its file was imported (a rejection its top level did not await, or a
      // previous handler's leftover's): the handler never ran (the pool judges whose it was).
      const uncaught = "loading the file left an error uncaught:";
      finish(running, { ok: false, error: { kind: "load_failed", cause: "threw", uncaught: true, message: `${uncaught} ${thrownClass(error)}${UNSAID}`, detail: `${uncaught} ${thrownDetail(error, maskRecent).split("\n")[0]}` } });
    } else if (running !== null) {
      finish(running, { ok: false, error: internal(error, "it failed outside its own call (an uncaught error or unhandled rejection)", maskRecent) });
    } else {
      post({ type: "problem", message: `${laneWorker(boot.lane)} caught an error outside any task: ${thrownDetail(error, maskRecent)}` });
    }
  };
  process.on("uncaughtException", uncaught);
  process.on("unhandledRejection", uncaught);

  // process.exit in handler code ends this thread (the pool fails its task: the worker stopped).
  // What the code wrote in the turn before it is still batched here (the last log lines, often the
  // reason it exits for, a step it opened): posted first, as the task's end would post it.
  const exitThread = process.exit.bind(process);
  process.exit = function (code?: number | string | null) {
    const of = owner.getStore() ?? current;
    if (of !== null && of !== undefined && !of.done) of.context.close();
    return exitThread(code as number);
  } as typeof process.exit;

  post({ type: "ready", thread: currentThread() });
}

/**
 * Declarations by source, imported once for the worker's life: a warm worker pays a capability's
 * load once. Failed imports are not kept, so a fixed file loads on the next task.
 */
function createDefinitionCache(loadTimeoutMs: number) {
  const loaded = new Map<string, CapabilityDef>();
  const loading = new Map<string, Promise<CapabilityDef>>();
  const importVersion = createVersionImporter((specifier) => import(specifier));
  const keyOf = (task: WorkerTask) => `${task.source.kind}:${task.source.file}:${task.version ?? ""}`;
  const checked = (def: CapabilityDef, task: WorkerTask) => {
    if (def.id !== task.capability) {
      throw new NotACapability(`${task.source.file} declares capability "${def.id}", but the task asked for "${task.capability}"; reload the capabilities.`);
    }
    return def;
  };
  return {
    /** The declaration if it is already imported, without waiting. */
    loaded(task: WorkerTask): CapabilityDef | undefined {
      const def = loaded.get(keyOf(task));
      return def && checked(def, task);
    },
    async load(task: WorkerTask): Promise<CapabilityDef> {
      const key = keyOf(task);
      let pending = loading.get(key);
      if (!pending) {
        pending = withinLoadTime(importDefinition(task.source, task.version, importVersion), task.source.file, loadTimeoutMs);
        loading.set(key, pending);
      }
      try {
        const def = await pending;
        loaded.set(key, def);
        return checked(def, task);
      } finally {
        loading.delete(key);
      }
    },
  };
}

/**
 * A trial load (worker/load-probe.ts): imports the source the main thread read of the file and
 * its local modules (its `input`), pinned so that the modules run exactly those texts, and runs
 * nothing of it. Null when it loaded; else where and why it failed, as the main thread's import
 * would have said it. `importing()` once the data it imports is parsed and its import begins:
 * the trial's time limit is the top level's, from then on.
 */
async function tryLoad(task: WorkerTask, loadTimeoutMs: number, importing: () => void): Promise<ImportFailure | Passed | null> {
  const file = task.source.file;
  const sources = task.input as CapabilitySources;
  const text = sources.text;
  // As the main thread will import it (inspect.ts): pinned to these texts, unless it is CommonJS.
  const { specifier, pin, pinned } = importTarget(sources);
  pin();
  // Served pinned, a JSON file is parsed when the import asks for it: parsed here first, its
  // time (seconds for tens of MB on a busy machine) is not counted as the top level's.
  if (pinned) for (const module of sources.modules) if (module.data !== undefined) prepareData(module.data, module.served);
  importing();
  // This worker only ever runs trials (load-probe.ts), the next only once one passed: what its top level defers can be watched.
  // A package linked into node_modules runs from its own folder: still a package's code, not the capability's.
  const timers = trackTopLevelWork(packagePaths(dirname(file)));
  // The built-ins as the trials before left them (first: as the worker started, its guards in place).
  builtinsAsTaken ??= builtinsSnapshot();
  const prototypes = sharedPrototypes();
  const held = { ms: 0 };
  try {
    await withinLoadTime(import(specifier), file, loadTimeoutMs, held);
    // At once, before docket's own code here calls what the file may have replaced (an iterator:
    // every check below walks arrays and maps); looked at again once what it deferred has run.
    const replacedNow = builtinsAsTaken();
    if (replacedNow.core.length > 0) return builtinsReplaced(replacedNow.core);
    // A rejection its top level left unhandled is reported once the turn it happened in is over:
    // the trial waits two turns of the loop for it, so that it fails this task, not none.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 1));
    // A timeout due soon is waited for (what it runs is tried too); one due later, or an
    // interval, would run on the server's main thread after the trial: refused.
    for (let waits = 0; waits < 10; waits++) {
      const soon = timers.pending().filter((t) => t.due <= performance.now() + SOON_MS);
      if (soon.length === 0 || soon.length < timers.pending().length) break;
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.max(...soon.map((t) => t.due)) - performance.now() + 1)));
    }
    const left = timers.pending()[0];
    if (left) return workLeftRunning(left, file);
    const builtins = builtinsAsTaken();
    if (builtins.core.length > 0) return builtinsReplaced(builtins.core);
    const changed = prototypes.takeBack();
    if (changed !== null) return sharedPrototypesChanged(changed.changed);
    // Passed: the next file's trial may run here, unless what this one left would run during it
    // (a package's timer) or it changed what docket's own checks call (a built-in replaced).
    const spent = timers.foreign() !== 0 || builtins.other;
    // How long its top level held this thread: the main thread's import will hold that one as long.
    const slow = held.ms >= SLOW_TOP_LEVEL_MS;
    return spent || slow ? { ...(spent ? { spent: true as const } : {}), ...(slow ? { held_ms: Math.round(held.ms) } : {}) } : null;
  } catch (error) {
    // Loaded only when a file fails: a worker that runs handlers never needs it.
    const { describeImportFailure } = await import("../capability/_import-failure.ts");
    return describeImportFailure(error, file, text);
  }
}

/**
 * A trial that passed, with what the main thread should know (load-probe.ts): `spent`, no further
 * trial may run in its worker (a package left a timer pending, or the file replaced a built-in);
 * `held_ms`, its top level held its thread that long (SLOW_TOP_LEVEL_MS or more).
 */
interface Passed {
  spent?: true;
  held_ms?: number;
}

/** A top level that holds its thread this long when tried is said in the log: the server's main thread is held as long at each import. */
const SLOW_TOP_LEVEL_MS = 1000;

/** The built-ins of this trial worker as it started (_pristine-builtins.ts); null before its first trial. */
let builtinsAsTaken: (() => BuiltinChanges) | null = null;

/** How soon a timer a top level started must be due for the trial to wait for it to fire. */
const SOON_MS = 100;

/** Why a file whose own top level left work pending (a timer, a watcher, a server…) is not imported on the main thread. */
function workLeftRunning(work: PendingWork, file: string): ImportFailure {
  const where = work.where;
  const inFile = where !== null && where.path === file;
  const at = where === null ? "" : inFile ? ` at line ${where.line}` : ` in ${relative(dirname(file), where.path)} line ${where.line}`;
  return {
    reason: `its top level left ${work.left} (${work.kind}${at}) when docket tried it in a worker first: imported, it would run later on docket's main thread (in a server, the thread that serves every client), where nothing can stop it, so docket did not import it; start it in the handler (and stop it when ctx.signal aborts), or ${work.undo} before the top level ends`,
    line: inFile ? where.line : null,
    column: null,
  };
}

/**
 * A top level that changed what every object of its thread shares (hostile tester, session 38: a
 * deep merge of a parsed `{"__proto__": {"debug": true}}`): on the server's main thread, every
 * `for…in` and `in` of docket and of every capability would meet it — the other files' schemas
 * failed to convert, and removing the file mended nothing until a restart.
 */
/**
 * Why a file whose top level replaced a method of the language's own objects (JSON.parse,
 * Array.prototype.map, Promise.prototype.then…) is not imported on the main thread, where every
 * request, the store and the live channel call them.
 */
function builtinsReplaced(replaced: string[]): ImportFailure {
  return {
    reason: `its top level (or a package it imports) replaced ${namedChanges(replaced)} when docket tried it in a worker first: imported, the server's own code would call the replacement (a replaced JSON.parse kept the server from ever answering), so docket did not import it. Leave the runtime's built-ins as they are: call your own function instead, and drop a polyfill package, which the runtime does not need`,
    line: null,
    column: null,
  };
}

function sharedPrototypesChanged(changed: string[]): ImportFailure {
  return {
    reason: `its top level (or a package it imports) added or replaced ${namedChanges(changed)} when docket tried it in a worker first: imported, every object of the server and of the other capabilities would have it, so docket did not import it; a deep merge of a parsed "__proto__" key does so (skip "__proto__", "constructor" and "prototype" keys, or merge into Object.create(null)), and so does a polyfill package, which the runtime does not need`,
    line: null,
    column: null,
  };
}

/**
 * What `withinLoadTime` rejects with: the file, not the handler, took too long. `held`:
 * synchronous code held the thread for part of the load time (see HELD_MS) — the file's own top
 * level, or what an earlier task left running there (docs/containment.md).
 */
class LoadTimeout extends Error {
  constructor(
    message: string,
    readonly held: boolean,
  ) {
    super(message);
  }
}

/**
 * When a load counts as `held`: synchronous code held its thread for HELD_MS at once (one
 * stretch, or the load timer firing that late), or for HELD_SHARE of the load time in all,
 * counted in stretches of at least HELD_GAP_MS. A 10 ms sampler measures the stretches as its own
 * lateness: a timer on a busy 2-core machine fires a few ms late, and a thread waiting for a core
 * rarely 20 ms. So one long hold and many short ones (a leftover interval that spins 45 ms at a
 * time while the file's top level awaits timer after timer) count alike. A file of its own slow
 * at its top level may count too: it is then tried once more on a fresh worker (pool.ts).
 */
const HELD_MS = 100;
const HELD_SHARE = 0.2;
const HELD_GAP_MS = 20;
const HELD_TICK_MS = 10;

/** A file that loaded but is not the capability its task names: its message says so whole. */
class NotACapability extends Error {}

/**
 * A file whose top-level `await` never settles would hold every task of it for ever: past the
 * load time the task fails, and the next one tries again (docs/containment.md).
 */
function withinLoadTime<T>(loading: Promise<T>, file: string, ms: number, held?: { ms: number }): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const due = ownTimers.now() + ms;
  let heldMs = 0;
  let longestMs = 0;
  let tick = ownTimers.now();
  const sampler = ownTimers.setInterval(() => {
    const now = ownTimers.now();
    const gap = now - tick - HELD_TICK_MS;
    if (gap >= HELD_GAP_MS) heldMs += gap;
    if (gap > longestMs) longestMs = gap;
    tick = now;
  }, HELD_TICK_MS);
  const late = new Promise<never>((_, reject) => {
    timer = ownTimers.setTimeout(() => {
      const lateMs = ownTimers.now() - due;
      // The hold that made this timer late may not have reached the sampler yet: its lateness is that hold.
      const held = lateMs >= HELD_MS || longestMs >= HELD_MS || heldMs >= Math.max(HELD_MS, ms * HELD_SHARE);
      reject(new LoadTimeout(`${file} did not finish loading within ${ms} ms (a top-level await that never settles, or slow work when it is imported)`, held));
    }, ms);
  });
  // Synchronous work at the top level keeps the load timer from firing until it ends, and the
  // import may settle first: a load that settles past its time is late all the same.
  const inTime = loading.then((value) => {
    const now = ownTimers.now();
    if (now <= due) return value;
    const gap = now - tick - HELD_TICK_MS;
    const held = gap >= HELD_MS || longestMs >= HELD_MS || heldMs + (gap >= HELD_GAP_MS ? gap : 0) >= Math.max(HELD_MS, ms * HELD_SHARE);
    throw new LoadTimeout(`${file} did not finish loading within ${ms} ms (it took ${Math.round(now - due + ms)} ms: slow work when it is imported)`, held);
  });
  return Promise.race([inTime, late]).finally(() => {
    ownTimers.clearTimeout(timer);
    ownTimers.clearInterval(sampler);
    if (held !== undefined) {
      // The stretch since the last tick counts too: a loop ending the import is not sampled otherwise.
      const gap = ownTimers.now() - tick - HELD_TICK_MS;
      held.ms = heldMs + (gap >= HELD_GAP_MS ? gap : 0);
    }
  });
}

/**
 * Why a task's file failed to load in this worker, as its load error says it (file, line, what
 * it threw): the task's failure is the file's, not its handler's (docs/containment.md).
 */
async function loadFailure(error: unknown, task: WorkerTask, loadTimeoutMs: number): Promise<TaskError> {
  if (error instanceof LoadTimeout && error.held) {
    return { kind: "load_failed", cause: "load_timeout", held: true, message: `it did not finish loading within ${loadTimeoutMs} ms (load_timeout_ms), its worker's thread held by synchronous code for part of that time: slow work at its top level` };
  }
  if (error instanceof LoadTimeout) return { kind: "load_failed", cause: "load_timeout", message: `it did not finish loading within ${loadTimeoutMs} ms (load_timeout_ms): a top-level await that never settles, or slow work at its top level` };
  if (error instanceof NotACapability) return { kind: "load_failed", cause: "threw", message: error.message.replace(/\.$/, "") };
  // Loaded only when a file fails: a worker whose files load never needs it.
  const { describeImportFailure } = await import("../capability/_import-failure.ts");
  const failure = describeImportFailure(error, task.source.file);
  const line = failure.line === null ? "" : ` (line ${failure.line})`;
  // The line goes with the class, before the note that says where the rest is.
  const message = failure.reason.endsWith(UNSAID) ? `${failure.reason.slice(0, -UNSAID.length)}${line}${UNSAID}` : `${failure.reason}${line}`;
  return { kind: "load_failed", cause: "threw", message, ...(failure.detail !== undefined ? { detail: `${failure.detail}${line}` } : {}), ...(failure.outside ? { outside: true as const } : {}) };
}

/** The declaration's reconcile check; the engine asks only for one it declares, but a reloaded file may have dropped it. */
function reconcileOf(def: CapabilityDef): NonNullable<CapabilityDef["reconcile"]> {
  if (typeof def.reconcile !== "function") throw new Error(`${def.id} declares no reconcile(input, ctx) function (any more).`);
  return def.reconcile.bind(def);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}

async function importDefinition(source: CapabilitySource, version: string | undefined, importVersion: ReturnType<typeof createVersionImporter>): Promise<CapabilityDef> {
  let def: unknown;
  if (source.kind === "builtin") {
    // Lazy, so that a worker that only runs user files never evaluates every built-in; the
    // specifier is a literal, so `bun build --compile` still bundles them all.
    const { BUILTINS } = await import("../capability/builtins.ts");
    def = BUILTINS[source.file];
  } else {
    def = ((await importVersion(source.file, version)) as { default?: unknown }).default;
  }
  if (typeof def !== "object" || def === null || typeof (def as CapabilityDef).handler !== "function") {
    throw new NotACapability(`${source.file} does not export a capability as its default export (export default capability({ … })).`);
  }
  return def as CapabilityDef;
}

/**
 * Turns whatever a handler threw into the closed TaskError the pool reports. Total: a thrown Proxy
 * or an object whose getters throw is still classified (as internal), never a second throw.
 */
function classify(error: unknown, context: WorkerContext): TaskError {
  try {
    // A look-alike whose code is not lower snake case is no CapabilityError: its code would be shown as is.
    if (CapabilityError.is(error) && /^[a-z][a-z0-9_]{0,63}$/.test(error.code)) {
      const certainty = error.outcome_certainty;
      return {
        kind: "capability",
        code: error.code,
        // Made safe to print here, before the secrets are masked out of them (on the main thread):
        // a bell inside a secret, removed after the mask, would show the secret whole.
        message: sanitizeLine(maskedBeforeSafe(String(error.message), context.mask)),
        context: context.maskValue(jsonSafe(error.context)),
        ...(error.retryability === undefined ? {} : { retryability: error.retryability }),
        ...(error.suggestion === undefined ? {} : { suggestion: sanitizeLine(maskedBeforeSafe(String(error.suggestion), context.mask)) }),
        ...(certainty === "applied" || certainty === "not_applied" ? { outcome_certainty: certainty } : {}),
      };
    }
    // An AbortError counts as cancellation only when cancel was requested: `fetch` given ctx.signal
    // rejects with one then; an AbortError of the handler's own making is still a failure.
    if (isCancellation(error) || (context.cancelRequested() && error instanceof Error && error.name === "AbortError")) {
      return { kind: "cancelled", message: "The execution was cancelled." };
    }
  } catch {
    // Fall through: what cannot be inspected is an internal failure like any other.
  }
  return internal(error, misuseNote(error), context.mask);
}

/** What a handler did wrong building a CapabilityError (capability-error.ts), said to the client; null for any other error. */
function misuseNote(error: unknown): string | null {
  try {
    const what = error instanceof TypeError ? (error as { capabilityErrorMisuse?: unknown }).capabilityErrorMisuse : undefined;
    return typeof what === "string" && Object.hasOwn(CAPABILITY_ERROR_MISUSE, what) ? `the CapabilityError it threw could not be made: ${CAPABILITY_ERROR_MISUSE[what as keyof typeof CAPABILITY_ERROR_MISUSE]}` : null;
  } catch {
    return null;
  }
}

/**
 * Names joined by ", " without Array.prototype.join, which the handler being named may have
 * replaced (the log said it "replaced j": second checking tester, session 45).
 */
function listed(names: string[]): string {
  let text = "";
  for (let i = 0; i < names.length; i++) text += `${i === 0 ? "" : ", "}${names[i]}`;
  return text;
}

/** An internal failure: its class for the client, its message and stack for the log (execution/thrown.ts). */
function internal(error: unknown, note: string | null, mask?: (text: string) => string): TaskError {
  const message = mask ? mask(thrownMessage(error)) : thrownMessage(error);
  const refused = refusedCall(error);
  return { kind: "internal", error_class: thrownClass(error), message: note ? `${note}: ${message}` : message, stack: thrownDetail(error, mask), ...(note ? { note } : {}), ...(refused ? { refused } : {}) };
}

/** The refusal of an output whose JSON is over `limit` characters (`wire`: its message, see outputOver) as a message, or null. */
function overLimit(id: number, wire: string | FromWorker, output: unknown, limit: number | undefined): string | FromWorker | null {
  const over = limit === undefined ? null : outputOver(wire, output, limit);
  return over === null ? null : toWire<FromWorker>({ type: "outcome", id, outcome: tooLarge(over.bytes, over.at_least, limit!) });
}

/** The refusal of an output of `bytes` characters of JSON (`atLeast`: counted that far before stopping), over `limit`. */
function tooLarge(bytes: number, atLeast: boolean, limit: number): TaskOutcome {
  const size = atLeast ? `more than ${limit} characters of JSON` : `${bytes} characters of JSON`;
  return { ok: false, error: { kind: "output_too_large", message: `an output of ${size}, over output_bytes (${limit})`, bytes, limit, ...(atLeast ? { at_least: true } : {}) } };
}

/**
 * How far a returned output is written when its task has no `output_bytes`: the largest the
 * limit admits (execution/limits.ts), so that no output is written without end.
 */
const UNBOUNDED_OUTPUT = 1024 * 1024 * 1024;

/**
 * The outcome message of an output whose JSON text is `text` (undefined: JSON wrote nothing, and
 * the output is undefined), as toWire would write it: the main thread parses it as any message.
 */
function outcomeText(id: number, text: string | undefined): string {
  return `{"type":"outcome","id":${id},"outcome":{"ok":true${text === undefined ? "" : `,"output":${text}`}}}`;
}

/**
 * The refusal of an output that is not plain JSON, naming where. The main thread checks what
 * arrives again: this thread runs the handler's code, and is not trusted to have.
 */
function notJson(problem: PlainJsonProblem): TaskOutcome {
  if (problem.reason === "too_deep") return { ok: false, error: { kind: "output_not_json", message: `output nests deeper than ${MAX_INPUT_DEPTH} levels, or holds itself`, too_deep: true } };
  return { ok: false, error: { kind: "output_not_json", message: `${problem.path} is ${problem.what}`, path: problem.path, what: problem.what } };
}

/** Why an output could not be copied to the main thread: the first value in it JSON cannot hold, and where. */
function notCopied(output: unknown): TaskError {
  const problem = plainJsonProblem(output, MAX_INPUT_DEPTH, "output");
  const { path, what } = problem?.reason === "not_json" ? problem : { path: "output", what: "a value that cannot be copied between threads (it holds a function or a Symbol)" };
  return { kind: "output_not_json", message: `${path} is ${what}`, path, what };
}

/** A CapabilityError's context goes to clients as JSON: make it JSON now, where a failure is local. */
function jsonSafe(context: unknown): Record<string, unknown> {
  try {
    const copy = JSON.parse(JSON.stringify(context ?? {}));
    return typeof copy === "object" && copy !== null && !Array.isArray(copy) ? copy : {};
  } catch {
    return { unserializable: true };
  }
}
