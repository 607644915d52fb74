/**
 * Types for hookline routing rules (see rules-sandbox/README.md).
 *
 * A webhook's rules are an ordered list. Each rule is the source text of one JavaScript function
 * expression, typically an arrow function, that receives the delivery and returns an action:
 *
 * ```js
 * /** @type {import('./rules').Rule} *\/
 * (delivery) => (delivery.event_type === 'push' ? { route: 'ci' } : 'continue')
 * ```
 *
 * Rules run one after the other, in list order, until one returns something other than
 * `'continue'` (or `undefined`). A rule that throws, returns anything not described by
 * {@link Action}, runs past the deadline or budget, runs out of memory, or no longer compiles
 * stops evaluation: the delivery is recorded as faulted and held in the reserved `quarantine` queue.
 */

/** A JSON value as the payload parser produces it. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

/** A form body (`application/x-www-form-urlencoded`): repeated fields become arrays, in order. */
export interface FormObject {
  readonly [field: string]: string | readonly string[];
}

/** What a rule sees. It is a deep-frozen copy: writing to it throws (rules run in strict mode). */
export interface Delivery {
  /** The provider's event type (e.g. `push`, `invoice.paid`), or null when the provider sent none. */
  readonly event_type: string | null;
  /** Request headers, names lower-case, already sanitized (credentials and signatures removed). */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed body: a JSON value, a form object, or null when the body is empty or unparseable. */
  readonly payload: JsonValue | FormObject | null;
  /** The provider name, e.g. `webhook:wh_…`, `codehost`, `generic:<name>`. */
  readonly provider: string;
  /** When hookline accepted the delivery, ISO-8601 with milliseconds, UTC. */
  readonly received_at: string;
}

/**
 * A queue name: `^[a-z0-9][a-z0-9_-]{0,63}$`. `quarantine` is reserved and refused as a route;
 * return `{ quarantine: true }` to hold a delivery there.
 */
export type QueueName = string;

/** Deliver to this queue of the webhook's owner and stop. */
export interface RouteAction {
  readonly route: QueueName;
}
/** Record the delivery, make no todo, and stop. */
export interface DropAction {
  readonly drop: true;
}
/** Hold the delivery in the reserved `quarantine` queue and stop. */
export interface QuarantineAction {
  readonly quarantine: true;
}
/** Leave the decision to the next rule; after the last rule, the webhook's default applies. */
export type ContinueAction = 'continue' | undefined;

/**
 * Exactly one of these. An object action is a plain object with exactly one own data property;
 * anything else (extra keys, `null`, `{ drop: 1 }`, a promise, a getter, an unknown string) is an
 * invalid action, and an invalid action is a fault.
 */
export type Action = RouteAction | DropAction | QuarantineAction | ContinueAction;

/** One rule: synchronous, no I/O, no timers, no state kept between deliveries. */
export type Rule = (delivery: Delivery) => Action;
