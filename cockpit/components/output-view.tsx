/** @jsxImportSource hono/jsx */
import { outputShape, SHAPED_CHARS, type OutputShape, type TableShape } from "../output-shape.ts";
import { JsonBlock } from "./json-block.tsx";
import { jsonShownWhole } from "../format.ts";

/** Rows and columns; output-table.js sorts by a column when its header is pressed. */
function OutputTable(props: { table: TableShape; label: string; jsonWhole: () => boolean; whole?: string }) {
  const t = props.table;
  return (
    <div class="output-table">
      <div class="table-scroll" tabindex={0}>
        <table class="table" data-sortable>
          <caption class="visually-hidden">{props.label}</caption>
          <thead>
            <tr>
              {t.columns.map((column, index) => (
                <th scope="col" data-column={String(index)}>
                  {column}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {t.rows.map((row) => (
              <tr>
                {row.map((cell, index) => (
                  <td class="wrap-anywhere" data-label={t.labels[index]}>{cell}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="muted small">
        {`${t.rows.length + t.more} row(s)`}
        {/* Sorting sorts the rows shown; where the others are is said as it is: the JSON view is cut past its own bound (cockpit tester, session 43). */}
        {t.more > 0 ? `; the first ${t.rows.length} are shown (a column's header sorts these), ${props.jsonWhole() ? "the JSON view has every one" : `the JSON view is cut too: ${props.whole ?? "every one is in the API's answer (the links on this page)"}`}` : ""}
        {t.moreColumns > 0 ? `; ${t.moreColumns} more column(s) in the JSON view` : ""}.
      </p>
    </div>
  );
}

/** One shape, as markup. */
function Shape(props: { shape: OutputShape; label: string; jsonWhole: () => boolean; whole?: string }) {
  const s = props.shape;
  switch (s.kind) {
    case "nothing":
      return <p class="muted">Nothing (null).</p>;
    case "scalar":
      return <p class="output-scalar wrap-anywhere">{s.text}</p>;
    case "text":
      return (
        <>
          <pre class="output-text" tabindex={0}>
            {s.text}
          </pre>
          {s.left > 0 ? <p class="muted small">{`${s.left.toLocaleString("en-US")} more characters not shown here: the page shows ${SHAPED_CHARS / 1024} Ki characters of an output's fields; ${props.jsonWhole() ? "the JSON view has every one" : props.whole ?? "every one is in the API's answer (the links on this page)"}.`}</p> : null}
        </>
      );
    case "omitted":
      return <p class="muted">{`Not shown here: the page shows ${SHAPED_CHARS / 1024} Ki characters of an output's fields, and the fields before this one took them; ${props.jsonWhole() ? "the JSON view has it" : props.whole ?? "it is in the API's answer (the links on this page)"}.`}</p>;
    case "table":
      return <OutputTable table={s.table} label={props.label} jsonWhole={props.jsonWhole} whole={props.whole} />;
    case "json":
      return <JsonBlock value={s.value} label={props.label} whole={props.whole} max={s.max} />;
    case "record":
      return (
        <dl class="output-record">
          {s.fields.map((field) => (
            <div class={`output-field output-field-${field.shape.kind}`}>
              <dt class="mono">{field.name}</dt>
              <dd>
                <Shape shape={field.shape} label={field.name} jsonWhole={props.jsonWhole} whole={props.whole} />
              </dd>
            </div>
          ))}
        </dl>
      );
  }
}

/**
 * A value shown by its shape (tables, text blocks, fields), with the exact JSON one click away.
 * `slot` names the JSON block the execution page's script fills when the output arrives live.
 */
export function OutputView(props: { value: unknown; label: string; slot?: string; whole?: string }) {
  const shape = outputShape(props.value);
  const plainJson = shape.kind === "json";
  // Asked by every field cut or left out: the whole value is written as JSON once, not once a field
  // (47 times over an 8 MB value held the server 2–4 s: cockpit checking tester, session 48).
  let whole: boolean | undefined;
  const jsonWhole = () => (whole ??= jsonShownWhole(props.value));
  return (
    <div class="output-view" data-slot={props.slot ? `${props.slot}-view` : undefined}>
      {plainJson ? null : <Shape shape={shape} label={props.label} jsonWhole={jsonWhole} whole={props.whole} />}
      <details class="json-view" open={plainJson}>
        <summary>JSON</summary>
        <JsonBlock value={props.value} slot={props.slot} label={props.label} whole={props.whole} />
      </details>
    </div>
  );
}
