/** @jsxImportSource hono/jsx */
import { EXECUTION_STATES, type ExecutionState } from "../../runtime/execution/state-machine.ts";

/** How each execution state reads: a shape (glyph) and a word, so colour is never the only signal. */
export const STATE_LOOK: Record<ExecutionState, { glyph: string; word: string }> = {
  queued: { glyph: "○", word: "Queued" },
  running: { glyph: "▶", word: "Running" },
  cancelling: { glyph: "◌", word: "Cancelling" },
  succeeded: { glyph: "✓", word: "Succeeded" },
  failed: { glyph: "✕", word: "Failed" },
  cancelled: { glyph: "⊘", word: "Cancelled" },
};

const STEP_LOOK = {
  running: { glyph: "▶", word: "Running" },
  succeeded: { glyph: "✓", word: "Done" },
  failed: { glyph: "✕", word: "Failed" },
  // Still running when its execution ended (cancelled, or failed around it): it will never finish.
  stopped: { glyph: "■", word: "Stopped" },
} as const;

const SEVERITY_LOOK = {
  error: { glyph: "✕", word: "Error" },
  warning: { glyph: "▲", word: "Warning" },
  info: { glyph: "ℹ", word: "Info" },
} as const;

const EFFECT_LOOK = {
  read: { glyph: "◇", word: "Read" },
  write: { glyph: "✎", word: "Write" },
} as const;

/** A word with its shape; `tone` picks the colour, which only repeats what the word says. */
function Badge(props: { tone: string; glyph: string; word: string; large?: boolean; data?: Record<string, string> }) {
  const data = Object.fromEntries(Object.entries(props.data ?? {}).map(([k, v]) => [`data-${k}`, v]));
  return (
    <span class={`badge tone-${props.tone}${props.large ? " badge-large" : ""}`} {...data}>
      <span class="glyph" aria-hidden="true">
        {props.glyph}
      </span>{" "}
      <span class="word">{props.word}</span>
    </span>
  );
}

/** An execution's state. */
export function StateBadge(props: { state: ExecutionState; large?: boolean }) {
  const look = STATE_LOOK[props.state];
  return <Badge tone={props.state} glyph={look.glyph} word={look.word} large={props.large} data={{ state: props.state }} />;
}

/** One step's state. */
export function StepBadge(props: { state: keyof typeof STEP_LOOK }) {
  const look = STEP_LOOK[props.state];
  return <Badge tone={props.state} glyph={look.glyph} word={look.word} data={{ "step-state": props.state }} />;
}

/** A diagnostic's severity. */
export function SeverityBadge(props: { severity: keyof typeof SEVERITY_LOOK }) {
  const look = SEVERITY_LOOK[props.severity] ?? SEVERITY_LOOK.info;
  return <Badge tone={props.severity} glyph={look.glyph} word={look.word} data={{ severity: props.severity }} />;
}

/** Whether a capability may change something; `write` is what makes the cockpit ask first. */
export function EffectBadge(props: { effect: "read" | "write" }) {
  const look = EFFECT_LOOK[props.effect];
  return <Badge tone={`effect-${props.effect}`} glyph={look.glyph} word={look.word} data={{ effect: props.effect }} />;
}

/**
 * Inert copies of every badge a script may need (`<template data-template="state-running">` …):
 * the browser clones them, so the words and shapes are written once, here.
 */
export function BadgeTemplates(props: { large?: boolean; steps?: boolean; severities?: boolean }) {
  return (
    <div hidden class="templates">
      {EXECUTION_STATES.map((state) => (
        <template data-template={`state-${state}`}>
          <StateBadge state={state} large={props.large} />
        </template>
      ))}
      {props.steps &&
        (Object.keys(STEP_LOOK) as Array<keyof typeof STEP_LOOK>).map((state) => (
          <template data-template={`step-${state}`}>
            <StepBadge state={state} />
          </template>
        ))}
      {props.severities &&
        (Object.keys(SEVERITY_LOOK) as Array<keyof typeof SEVERITY_LOOK>).map((severity) => (
          <template data-template={`severity-${severity}`}>
            <SeverityBadge severity={severity} />
          </template>
        ))}
    </div>
  );
}
