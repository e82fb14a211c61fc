/** @jsxImportSource hono/jsx */
import { StoreDamagedError, storeDamagedRemedy } from "../runtime/store/store.ts";
import { Hono, type Context } from "hono";
import { isCapabilityId } from "../runtime/capability/capability-id.ts";
import { runsAsExecution } from "../runtime/capability/registered.ts";
import { didYouMeanText } from "../runtime/capability/did-you-mean.ts";
import { loadErrorFor, loadErrorSuggestion, LOOKALIKE_SUGGESTION, lookalikeFor, planeCapabilityHint } from "../runtime/capability/unknown-capability.ts";
import type { ExecutionPlane } from "../runtime/execution/plane.ts";
import { isExecutionId } from "../runtime/execution/execution-id.ts";
import { newCorrelationId } from "../runtime/execution/failure.ts";
import { EXECUTION_STATES, type ExecutionState } from "../runtime/execution/state-machine.ts";
import type { AppEnv } from "../runtime/server/_app-env.ts";
import type { LiveChannel } from "../runtime/server/live-channel.ts";
import { loopTurn } from "../runtime/server/loop-turn.ts";
import { InvalidCursorError } from "../runtime/store/list-cursor.ts";
import { CANCEL_NOTICES, cancelExecution, cockpitEdge, runCapability } from "./actions.tsx";
import { RELEASE_NOTICES, releaseArtifacts } from "./release-action.tsx";
import { RECONCILE_NOTICES, reconcileExecution } from "./reconcile-action.tsx";
import { againValues } from "./run-again.ts";
import { LOG_LEVELS, logFilterOf } from "./log-filter.ts";
import { capabilityHistory, stateBuckets } from "./chart-data.ts";
import { serveAsset } from "./assets.ts";
import { createCallResults, RESULT_QUERY, type CallResults } from "./call-results.ts";
import { createNotices, NOTICE_TOKEN, type ExecutionNotice, type Notices } from "./notices.ts";
import { catalogSignature } from "./catalog-signature.ts";
import { historyExtras, STREAM_TAIL_CHARS } from "./history-extras.ts";
import { CapabilitiesPage } from "./pages/capabilities.tsx";
import { CapabilityPage } from "./pages/capability.tsx";
import { ExecutionPage } from "./pages/execution.tsx";
import { EXECUTION_SECTION_NAMES, ExecutionSections } from "./pages/execution-sections.tsx";
import { OVERVIEW_SECTION_NAMES, OverviewSections } from "./pages/overview-sections.tsx";
import { sectionsAsked, unknownSectionMessage } from "./section-query.ts";
import { ExecutionsPage } from "./pages/executions.tsx";
import { EXECUTIONS_SECTION_NAMES, ExecutionsSections } from "./pages/executions-sections.tsx";
import { OverviewPage } from "./pages/overview.tsx";
import { problemResponse } from "./problem-response.tsx";
import { takesQuery } from "./page-query.ts";
import { htmlPage } from "./render.ts";
import { securityHeaders } from "./security-headers.ts";

/** What the cockpit is built from. */
export interface CockpitOptions {
  plane: ExecutionPlane;
  /** The live channel the pages' scripts connect to (accepted for symmetry with the other mounts). */
  live?: LiveChannel;
  /** Where stacks of unexpected errors go (stderr); never a page. */
  log?: (line: string) => void;
  /** The pages "Run" answered, kept for their GET (a clock of its own in tests). */
  callResults?: CallResults;
  /** The notices the execution page's forms left for its GET (notices.ts). */
  notices?: Notices<ExecutionNotice>;
}

const RECENT = 20;
/** How far back the overview's chart looks. */
const ACTIVITY_HOURS = 6;
const PAGE_SIZE = 50;

/**
 * The cockpit (README.md): server-rendered pages over the registry and the store, mounted at
 * `/cockpit`. Every page is complete HTML; its small scripts only make it live.
 */
export function createCockpit(options: CockpitOptions): Hono<AppEnv> {
  const { plane } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const root = plane.root;
  const results = options.callResults ?? createCallResults();
  const notices = options.notices ?? createNotices<ExecutionNotice>();
  const app = new Hono<AppEnv>();
  app.use("*", securityHeaders());
  // Every page is built on the main thread: the loop turns first, so workers' answers get through (loop-turn.ts).
  app.use("*", async (_c, next) => {
    await loopTurn();
    await next();
  });

  app.get("/assets/:name", (c) => serveAsset(c, c.req.param("name")));

  // What pages poll to follow a live reload (catalog-watch.js): one short digest, never cached.
  app.get("/catalog", (c) => {
    c.header("Cache-Control", "no-store");
    return c.json({ signature: catalogSignature(plane.capabilities(), plane.loadErrors()) });
  });

  app.get("/", takesQuery(root, ["section"]), (c) => {
    // The sections live-list.js re-reads (the counts at each change of state): only what they show is read.
    const asked = sectionsAsked(c, OVERVIEW_SECTION_NAMES);
    if ("unknown" in asked) return problemResponse(c, root, { status: 400, title: "Unknown section", message: unknownSectionMessage(OVERVIEW_SECTION_NAMES, asked.unknown) });
    const needs = (name: (typeof OVERVIEW_SECTION_NAMES)[number]) => asked.names === null || asked.names.includes(name);
    // Every list page carries the counts; the counts alone need the shortest.
    const recent = plane.store.list({ limit: needs("recent") ? RECENT : 1 });
    const active = needs("active")
      ? (["running", "cancelling", "queued"] as const).flatMap((state) => plane.store.list({ state, limit: PAGE_SIZE }).items).sort((a, b) => b.created_at.localeCompare(a.created_at))
      : [];
    const props = {
      root,
      counts: recent.counts,
      active,
      recent: recent.items,
      loadErrors: plane.loadErrors(),
      capabilityCount: plane.capabilities().length,
      catalog: asked.names === null ? catalogSignature(plane.capabilities(), plane.loadErrors()) : "",
      heartbeatMs: plane.limits.heartbeat_ms,
      activity: needs("activity") ? { ...stateBuckets(plane.store, { now: Date.now(), spanMs: ACTIVITY_HOURS * 3600_000 }), spanHours: ACTIVITY_HOURS } : { buckets: [], spanHours: ACTIVITY_HOURS, more: false },
    };
    if (asked.names !== null) return htmlPage(c, <OverviewSections {...props} names={asked.names} />);
    return htmlPage(c, <OverviewPage {...props} />);
  });

  app.get("/capabilities", takesQuery(root, ["q"]), (c) => htmlPage(c, <CapabilitiesPage root={root} capabilities={plane.capabilities()} loadErrors={plane.loadErrors()} query={(c.req.query("q") ?? "").slice(0, 200)} />));

  const capabilityOr = (c: Context, id: string) => {
    if (!isCapabilityId(id)) {
      return problemResponse(c, root, { status: 400, title: "Not a capability id", message: `${JSON.stringify(id.slice(0, 80))} is not a capability id (lower-case dotted, like files.digest).` });
    }
    const capability = plane.capability(id);
    if (!capability) {
      // Its file did not load (the usual case right after an edit): say why, not only that it is missing.
      const broken = loadErrorFor(id, plane);
      if (broken) return problemResponse(c, root, { status: 404, title: "Capability did not load", message: `No capability ${id} is loaded: ${planeCapabilityHint(id, plane).replace(/\.$/, "")}.`, suggestion: loadErrorSuggestion(broken) });
      // A file named for it that discovery does not take (a subfolder, a .tsx): which, and why.
      const lookalike = lookalikeFor(id, plane);
      if (lookalike) return problemResponse(c, root, { status: 404, title: "Capability file not loaded", message: `No capability ${id} is loaded: ${lookalike.file} is not loaded: ${lookalike.reason}.`, suggestion: LOOKALIKE_SUGGESTION });
      return problemResponse(c, root, { status: 404, title: "No such capability", message: `No capability ${id} is loaded.`, suggestion: `${didYouMeanText(id, plane.capabilities().map((x) => x.id))} The capabilities page lists every one this server loaded, and the files that did not load.`.trim() });
    }
    return capability;
  };

  app.get("/capabilities/:id", takesQuery(root, ["again", RESULT_QUERY]), (c) => {
    const capability = capabilityOr(c, c.req.param("id"));
    if (capability instanceof Response) return capability;
    // What a "Run" answered (its POST's 303): the page as it was drawn then, not the call again.
    const token = c.req.query(RESULT_QUERY);
    if (token !== undefined) {
      const kept = results.get(token, capability.id);
      if (kept) return c.html(kept.html, kept.status as 200);
      const notice = "The result of that Run is no longer kept (a Run's page is kept ten minutes, for a reload); run it again to see one.";
      return htmlPage(c, <CapabilityPage root={root} capability={capability} values={null} errors={{}} problem={null} result={null} notice={notice} history={capabilityHistory(plane.store, capability.id)} />);
    }
    const again = againValues(plane.store, capability, c.req.query("again"));
    if (again.kind === "refused") return problemResponse(c, root, again.problem);
    const notice = again.kind === "filled" ? again.notice : null;
    return htmlPage(c, <CapabilityPage root={root} capability={capability} values={again.kind === "filled" ? again.values : null} errors={{}} problem={null} result={null} notice={notice} history={capabilityHistory(plane.store, capability.id)} />);
  });

  app.post("/capabilities/:id", (c) => {
    const capability = capabilityOr(c, c.req.param("id"));
    if (capability instanceof Response) return capability;
    return runCapability(c, plane, capability, results);
  });

  app.get("/executions", takesQuery(root, ["state", "capability", "cursor", "section"]), (c) => {
    const state = c.req.query("state") || null;
    if (state !== null && !(EXECUTION_STATES as readonly string[]).includes(state)) {
      return problemResponse(c, root, { status: 400, title: "Unknown state", message: `state must be one of ${EXECUTION_STATES.join(", ")}, got ${JSON.stringify(state.slice(0, 40))}.` });
    }
    const capability = c.req.query("capability") || null;
    if (capability !== null && capability.length > 128) return problemResponse(c, root, { status: 400, title: "Capability filter too long", message: "capability must be at most 128 characters." });
    const cursor = c.req.query("cursor") || null;
    // The sections live-list.js re-reads (the counts at each change of state): only what they show is read.
    const asked = sectionsAsked(c, EXECUTIONS_SECTION_NAMES);
    if ("unknown" in asked) return problemResponse(c, root, { status: 400, title: "Unknown section", message: unknownSectionMessage(EXECUTIONS_SECTION_NAMES, asked.unknown) });
    const rows = asked.names === null || asked.names.includes("list");
    let page;
    try {
      page = plane.store.list({ state: (state as ExecutionState | null) ?? undefined, capability: capability ?? undefined, cursor: cursor ?? undefined, limit: rows ? PAGE_SIZE : 1 });
    } catch (error) {
      if (error instanceof InvalidCursorError) return problemResponse(c, root, { status: 400, title: "Unknown cursor", message: error.message });
      throw error;
    }
    const props = {
      root,
      items: page.items,
      counts: page.counts,
      nextCursor: page.next_cursor,
      pageSize: PAGE_SIZE,
      filter: { state: state as ExecutionState | null, capability, cursor },
      capabilityIds: asked.names === null ? plane.capabilities().filter(runsAsExecution).map((x) => x.id) : [],
      heartbeatMs: plane.limits.heartbeat_ms,
    };
    if (asked.names !== null) return htmlPage(c, <ExecutionsSections {...props} names={asked.names} />);
    return htmlPage(c, <ExecutionsPage {...props} />);
  });

  app.get("/executions/:id", takesQuery(root, ["notice", "section", "log_level", "log_q"]), (c) => {
    const id = c.req.param("id");
    if (!isExecutionId(id)) {
      return problemResponse(c, root, { status: 400, title: "Not an execution id", message: `${JSON.stringify(String(id).slice(0, 80))} is not an execution id (x-<yyyymmddThhmmssZ>-<8 hex>).` });
    }
    const execution = plane.store.get(id);
    // Run by a `docket run` without a server: the server knows how it ended, not its events.
    const notHeld = execution ? null : (plane.whyNotHeld?.(id, "has no page of it") ?? null);
    if (notHeld !== null) return problemResponse(c, root, { status: 404, title: "Ran without a server", message: notHeld.message, suggestion: notHeld.suggestion });
    if (!execution) {
      return problemResponse(c, root, {
        status: 404,
        title: "No such execution",
        message: `This server knows no execution ${id}.`,
        suggestion: `It may have been forgotten: only the ${plane.limits.executions_retained} most recent are kept. The executions page lists those that are.`,
      });
    }
    // Sections a page re-reads (refresh.js): those alone, not the page.
    const asked = sectionsAsked(c, EXECUTION_SECTION_NAMES);
    if ("unknown" in asked) return problemResponse(c, root, { status: 400, title: "Unknown section", message: unknownSectionMessage(EXECUTION_SECTION_NAMES, asked.unknown) });
    const sections = asked.names ?? [];
    const level = c.req.query("log_level");
    if (level !== undefined && level !== "" && !(LOG_LEVELS as readonly string[]).includes(level)) {
      return problemResponse(c, root, { status: 400, title: "Unknown log level", message: `log_level must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(level.slice(0, 40))}.` });
    }
    // A notice is shown only when this server gave it, for this execution (notices.ts): one a link
    // named itself (?notice=released) claimed deleted files above the panel listing them (cockpit testers, session 48).
    const noticeToken = c.req.query("notice");
    if (noticeToken !== undefined && noticeToken !== "" && !NOTICE_TOKEN.test(noticeToken)) {
      return problemResponse(c, root, { status: 400, title: "Unknown notice", message: `notice must be a token this server gave when one of the page's forms was sent, got ${JSON.stringify(noticeToken.slice(0, 40))}.` });
    }
    const noticeKey = noticeToken ? notices.read(noticeToken, id) : null;
    const notice = noticeKey === null ? null : { ...CANCEL_NOTICES, ...RELEASE_NOTICES, ...RECONCILE_NOTICES }[noticeKey];
    const partial = sections.length > 0;
    const props = {
      root,
      execution,
      capability: plane.capability(execution.capability),
      // What only the whole page shows is not read for sections.
      extras: partial ? { streams: new Map(), streamsWritten: new Map(), streamsDropped: 0, other: [] } : historyExtras(plane.store, id, execution.last_sequence),
      heartbeatMs: plane.limits.heartbeat_ms,
      logLimit: plane.limits.log_tail_lines,
      stepLimit: plane.limits.steps_retained,
      diagnosticLimit: plane.limits.diagnostics_retained,
      streamLimit: STREAM_TAIL_CHARS,
      notice,
      artifacts: partial && !sections.includes("artifacts") ? [] : plane.handle(cockpitEdge(c)).artifacts(id),
      logFilter: logFilterOf((name) => c.req.query(name)),
      now: Date.now(),
    };
    if (partial) return htmlPage(c, <ExecutionSections {...props} names={sections} />);
    return htmlPage(c, <ExecutionPage {...props} />);
  });

  app.post("/executions/:id/cancel", (c) => cancelExecution(c, plane, c.req.param("id"), notices));
  app.post("/executions/:id/release", (c) => releaseArtifacts(c, plane, c.req.param("id"), notices));
  app.post("/executions/:id/reconcile", (c) => reconcileExecution(c, plane, c.req.param("id"), notices));

  app.all("*", (c) => {
    const path = new URL(c.req.url).pathname;
    // A HEAD asks what a GET would get: the same redirect (checking tester, session 39).
    if ((c.req.method === "GET" || c.req.method === "HEAD") && path.length > 1 && path.endsWith("/")) return c.redirect(path.replace(/\/+$/, ""), 301);
    return problemResponse(c, root, { status: 404, title: "Not found", message: `The cockpit has no page at ${path.slice(0, 200)}.` });
  });

  app.onError((error, c) => {
    // A store whose file turned out damaged is the server's condition, not a bug: said as the API says it.
    if (error instanceof StoreDamagedError) {
      return problemResponse(c, root, { status: 503, title: "The execution store is damaged", message: error.message, suggestion: storeDamagedRemedy(error.path) });
    }
    const correlation_id = newCorrelationId();
    log(`[docket] ${correlation_id} cockpit ${c.req.method} ${new URL(c.req.url).pathname}: ${error?.stack ?? String(error)}`);
    return problemResponse(c, root, {
      status: 500,
      title: "Something went wrong",
      message: "The cockpit failed while answering this request.",
      suggestion: "This is a bug in docket; the correlation id finds the details in the server's log.",
      correlationId: correlation_id,
    });
  });
  return app;
}
