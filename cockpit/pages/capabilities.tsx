/** @jsxImportSource hono/jsx */
import type { LoadError, RegisteredCapability } from "../../runtime/capability/registered.ts";
import { EffectBadge } from "../components/badges.tsx";
import { Layout } from "../components/layout.tsx";
import { LoadErrors } from "../components/load-errors.tsx";
import { capabilityPagePath } from "../paths.ts";

/** `/cockpit/capabilities`: the registry, one row per capability, and the files that did not load. */
export function CapabilitiesPage(props: { root: string; capabilities: RegisteredCapability[]; loadErrors: LoadError[] }) {
  const sorted = [...props.capabilities].sort((a, b) => a.id.localeCompare(b.id));
  return (
    <Layout title="Capabilities" section="capabilities" root={props.root}>
      <div class="page-head">
        <div>
          <h1>Capabilities</h1>
          <p class="muted">Every capability this server loaded: each one file, each runnable from here, the CLI, HTTP and MCP.</p>
        </div>
      </div>
      <section class="panel" aria-labelledby="registry-heading">
        <h2 id="registry-heading" class="visually-hidden">
          Registry
        </h2>
        <div class="table-scroll">
          <table class="table" data-capabilities={String(sorted.length)}>
            <caption class="visually-hidden">Loaded capabilities</caption>
            <thead>
              <tr>
                <th scope="col">Capability</th>
                <th scope="col">Effect</th>
                <th scope="col">Runs as</th>
                <th scope="col">Cancellable</th>
                <th scope="col">Source</th>
              </tr>
            </thead>
            <tbody>
              {sorted.map((c) => (
                <tr data-capability={c.id}>
                  <td>
                    <a href={capabilityPagePath(c.id)} class="mono">
                      {c.id}
                    </a>
                    <div class="wrap-anywhere">{c.title}</div>
                    <div class="muted small wrap-anywhere">{c.description}</div>
                  </td>
                  <td>
                    <EffectBadge effect={c.effect} />
                  </td>
                  <td>{c.execution === "allowed" ? "call or execution" : c.execution === "always" ? "execution only" : "direct call only"}</td>
                  <td>{c.cancellable ? "yes" : "no"}</td>
                  <td class="mono wrap-anywhere small">{c.source.kind === "builtin" ? "built-in" : c.source.file}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section class="panel" aria-labelledby="load-heading">
        <h2 id="load-heading">Load errors</h2>
        <LoadErrors errors={props.loadErrors} />
      </section>
    </Layout>
  );
}
