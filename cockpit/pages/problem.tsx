/** @jsxImportSource hono/jsx */
import { Layout } from "../components/layout.tsx";
import { overviewPath } from "../paths.ts";

/** What a problem page says; `status` is the HTTP status it is served with. */
export interface ProblemProps {
  root: string;
  status: number;
  title: string;
  message: string;
  /** What to do next, as a sentence. */
  suggestion?: string;
  /** Quoted to find the details in the server's log (500s). */
  correlationId?: string;
}

/** The 400, 404 and 500 pages: what went wrong in words, and a way back. */
export function ProblemPage(props: ProblemProps) {
  return (
    <Layout title={props.title} section={null} root={props.root}>
      <div class="problem" data-status={String(props.status)}>
        <p class="problem-status mono">{`${props.status}`}</p>
        <h1>{props.title}</h1>
        <p class="lead wrap-anywhere">{props.message}</p>
        {props.suggestion ? <p class="wrap-anywhere">{props.suggestion}</p> : null}
        {props.correlationId ? (
          <p>
            Correlation id: <code>{props.correlationId}</code>
          </p>
        ) : null}
        <p>
          <a href={overviewPath()}>← Back to the overview</a>
        </p>
      </div>
    </Layout>
  );
}
