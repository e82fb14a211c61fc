/** @jsxImportSource hono/jsx */
import type { LoadError, RegisteredCapability } from "../../runtime/capability/registered.ts";
import { EffectBadge } from "../components/badges.tsx";
import { Layout } from "../components/layout.tsx";
import { LoadErrors } from "../components/load-errors.tsx";
import { MarkdownText } from "../components/markdown-text.tsx";
import { searchCapabilities } from "../capability-search.ts";
import { checkoutPath, shownText } from "../format.ts";
import { capabilitiesPath, capabilityPagePath } from "../paths.ts";

/** How a capability runs, in words. */
function runsAs(c: RegisteredCapability): string {
  if (c.execution === "never") return "direct call only";
  if (c.execution === "always") return "execution only";
  return "call or execution";
}

/** One group of capabilities as a table. */
function CapabilityTable(props: { capabilities: RegisteredCapability[]; caption: string; root: string; name: string }) {
  return (
    <div class="table-scroll">
      <table class="table" data-capabilities={String(props.capabilities.length)} data-group={props.name}>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Capability</th>
            <th scope="col">Effect</th>
            <th scope="col">Runs as</th>
            <th scope="col">Source</th>
          </tr>
        </thead>
        <tbody>
          {props.capabilities.map((c) => (
            <tr data-capability={c.id}>
              <td>
                <a href={capabilityPagePath(c.id)} class="mono">
                  {c.id}
                </a>
                <div class="wrap-anywhere">{shownText(c.title)}</div>
                <MarkdownText text={c.description} inline class="muted small wrap-anywhere description" />
              </td>
              <td>
                <EffectBadge effect={c.effect} />
              </td>
              <td>
                {runsAs(c)}
                {c.cancellable ? <div class="muted small">cancellable</div> : null}
              </td>
              <td class="mono wrap-anywhere small" title={c.source.kind === "builtin" ? undefined : shownText(c.source.file)}>
                {c.source.kind === "builtin" ? "built-in" : checkoutPath(c.source.file, props.root)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * `/cockpit/capabilities`: the registry, the checkout's own capabilities first and docket's
 * built-ins in their own group, with a search that is a plain GET form (`?q=`), so it works with
 * no script at all; then the files that did not load.
 */
export function CapabilitiesPage(props: { root: string; capabilities: RegisteredCapability[]; loadErrors: LoadError[]; query: string }) {
  const groups = searchCapabilities(props.capabilities, props.query);
  return (
    <Layout title="Capabilities" section="capabilities" root={props.root}>
      <div class="page-head">
        <div>
          <h1>Capabilities</h1>
          <p class="muted">Every capability this server loaded: each one file, each runnable from here, the CLI, HTTP and MCP.</p>
        </div>
      </div>
      <form method="get" action={capabilitiesPath()} class="search-form" role="search" aria-label="Search capabilities">
        <label for="capability-search">Search</label>
        <input id="capability-search" type="search" name="q" value={props.query} maxlength={200} placeholder="id, title or description" />
        <button type="submit" class="button">
          Search
        </button>
        {props.query ? (
          <a href={capabilitiesPath()} class="small">
            Show all
          </a>
        ) : null}
      </form>
      {props.query ? (
        <p class="muted" role="status" data-slot="search-result">
          {`${groups.matched} of ${groups.total} capabilities match “${props.query}”.`}
        </p>
      ) : null}
      <section class="panel" aria-labelledby="own-heading" data-section="own">
        <h2 id="own-heading">This checkout's capabilities</h2>
        {groups.own.length ? (
          <CapabilityTable capabilities={groups.own} caption="Capabilities of this checkout" root={props.root} name="own" />
        ) : (
          <p class="empty">{props.query ? "None of this checkout's capabilities match." : "This checkout has no capabilities of its own yet: docket new <id> writes one into capabilities/."}</p>
        )}
      </section>
      <section class="panel" aria-labelledby="builtin-heading" data-section="builtin">
        <h2 id="builtin-heading">Built into docket</h2>
        {groups.builtin.length ? <CapabilityTable capabilities={groups.builtin} caption="Built-in capabilities" root={props.root} name="builtin" /> : <p class="empty">No built-in capability matches.</p>}
      </section>
      <section class="panel" aria-labelledby="load-heading">
        <h2 id="load-heading">Load errors</h2>
        <LoadErrors errors={props.loadErrors} root={props.root} />
      </section>
    </Layout>
  );
}
