/** An output as text: a string as it is, anything else as indented JSON. */
export function outputText(value: unknown): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return text.endsWith("\n") ? text : `${text}\n`;
}
