// The piscina peer's task: a no-op, as bench.noop is for docket (plain JS, so piscina's loader needs nothing).
export default (input) => input;
