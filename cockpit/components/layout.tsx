/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import { DOCKET_VERSION } from "../../runtime/version.ts";
import { assetPath, type AssetName } from "../assets.ts";
import { capabilitiesPath, executionsPath, overviewPath } from "../paths.ts";
import { shownText } from "../format.ts";

/** Which navigation entry a page belongs to. */
export type Section = "overview" | "capabilities" | "executions" | null;

/** Options of {@link Layout}. */
export interface LayoutProps {
  title: string;
  section: Section;
  /** The checkout this server serves, shown in the footer. */
  root: string;
  /** Browser scripts of this page, in order (socket.js first when a page follows the live channel). */
  scripts?: AssetName[];
  children?: Child;
}

const NAV: Array<{ section: Exclude<Section, null>; label: string; href: string }> = [
  { section: "overview", label: "Overview", href: overviewPath() },
  { section: "capabilities", label: "Capabilities", href: capabilitiesPath() },
  { section: "executions", label: "Executions", href: executionsPath() },
];

/** The page shell: head with the stylesheet and deferred scripts, header with navigation, footer. */
export function Layout(props: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${shownText(props.title)} · docket`}</title>
        <link rel="icon" type="image/svg+xml" href={assetPath("icon.svg")} />
        <link rel="stylesheet" href={assetPath("cockpit.css")} />
        {(props.scripts ?? []).map((name) => (
          <script src={assetPath(name)} defer></script>
        ))}
      </head>
      <body>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="site-header">
          <div class="wrap header-row">
            <a class="brand" href={overviewPath()}>
              <img src={assetPath("icon.svg")} alt="" width="24" height="24" />
              <span>docket</span>
            </a>
            <nav aria-label="Main">
              <ul class="nav">
                {NAV.map((item) => (
                  <li>
                    <a href={item.href} aria-current={item.section === props.section ? "page" : undefined}>
                      {item.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
          </div>
        </header>
        <main id="main" class="wrap">
          {props.children}
        </main>
        <footer class="site-footer">
          <div class="wrap">
            docket {DOCKET_VERSION} · serving <code class="path">{props.root}</code>
          </div>
        </footer>
      </body>
    </html>
  );
}
