// The cockpit's assets are imported as text (`with { type: "text" }`): Bun issue 19725 keeps embedded
// asset files and bundled workers from living in one executable, text imports work in both. Each
// import's default export is the file's contents.
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "*/assets/icon.svg" {
  const text: string;
  export default text;
}
declare module "*/assets/socket.js" {
  const text: string;
  export default text;
}
declare module "*/assets/format.js" {
  const text: string;
  export default text;
}
declare module "*/assets/execution.js" {
  const text: string;
  export default text;
}
declare module "*/assets/live-list.js" {
  const text: string;
  export default text;
}
declare module "*/assets/run-form.js" {
  const text: string;
  export default text;
}
declare module "*/assets/catalog-watch.js" {
  const text: string;
  export default text;
}
declare module "*/assets/ansi.js" {
  const text: string;
  export default text;
}
declare module "*/assets/log-filter.js" {
  const text: string;
  export default text;
}
declare module "*/assets/output-table.js" {
  const text: string;
  export default text;
}
declare module "anser/lib/index.js" {
  const text: string;
  export default text;
}
declare module "*/assets/refresh.js" {
  const text: string;
  export default text;
}
