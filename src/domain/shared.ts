import { z } from 'zod';

/**
 * What every aggregate folder builds on: the schema of one event type (style.md §14: each event
 * type has a zod schema beside its type) and the decider shape the one command handler runs
 * (style.md §1, §13; emmett's Decider).
 */
export const defineEvent = <const T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ type: z.literal(type), data });

/** Any event schema made by defineEvent. */
export type EventSchema = ReturnType<typeof defineEvent<string, z.ZodType>>;

export interface DomainEventShape {
  readonly type: string;
  readonly data: unknown;
}

/**
 * One aggregate's logic, pure: `decide(command, state, now)` gives the events a command produces
 * (or throws a DomainError), `evolve(state, event)` folds one event. `eventTypes` are the types
 * that may appear on the aggregate's stream; anything else found there is an error.
 */
export interface Decider<Command, State, Event extends DomainEventShape> {
  readonly initialState: () => State;
  readonly evolve: (state: State, event: Event) => State;
  readonly decide: (command: Command, state: State, now: Date) => Event[];
  readonly eventTypes: readonly Event['type'][];
}

/** The types of a list of event schemas, for a Decider's `eventTypes`. */
export const typesOf = <S extends readonly EventSchema[]>(schemas: S): z.infer<S[number]>['type'][] =>
  schemas.map((s) => s.shape.type.value) as z.infer<S[number]>['type'][];
