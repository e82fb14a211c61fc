// The "docket" module exists at run time only inside docket: the binary serves it to the
// capability files it loads, so that every capability shares the binary's own copy. This package
// carries its types (types/public.d.ts) for editors and tsc; importing it anywhere else is a mistake.
throw new Error(
  'The "docket" module runs inside docket only: run capability files with `npx docket run <id|./file.ts>` ' +
    "(or `docket serve`), not with node or bun directly. This package gives the `docket` command and the module's types.",
);
