import type { Logger } from './logger.ts';

/**
 * What a receiver does once its delivery is durable, where the hand-off was not written with it
 * (src/todos/hand-off.ts): a retry finishing a delivery whose todo was never written, or every
 * delivery on a store without a multi-stream transaction (EventStoreDB): mint the todo, ring the
 * doorbell, record the disposition. The sender's answer waits for it only up to a bound (issue 24: no request to a
 * receiver waits unboundedly once its delivery is durable). Past the bound the request answers
 * (the delivery is in the log) and the work goes on: a warning names the step it was on, and its
 * late end, or its failure, is logged as well. A failure within the bound is the request's, as
 * before: a sender that gets no 2xx retries, and a redelivery finishes what is missing.
 */
export const FOLLOW_UP_BOUND_MS = 2_000;

/** Names the step the work is on, for the log line if the bound passes: "the todo td_…". */
export type Step = (awaited: string) => void;

export type FollowedUp<T> =
  | { readonly done: true; readonly value: T }
  | { readonly done: false; readonly awaited: string };

export interface FollowUps {
  /** Runs `work`, awaiting it at most the bound. `fields` name the delivery in the log (never a secret). */
  run<T>(fields: Readonly<Record<string, unknown>>, work: (step: Step) => Promise<T>): Promise<FollowedUp<T>>;
  /** Resolves once every follow-up that outlived its request has ended (before the store closes). */
  idle(): Promise<void>;
}

export function createFollowUps(deps: { readonly logger: Logger; readonly boundMs?: number }): FollowUps {
  const boundMs = deps.boundMs ?? FOLLOW_UP_BOUND_MS;
  const late = new Set<Promise<unknown>>();

  return {
    async run(fields, work) {
      const started = performance.now();
      let awaited = 'the start of the follow-up';
      const running = work((what) => {
        awaited = what;
      });
      // Settled either way, so that a failure after the bound is never an unhandled rejection.
      const outcome = running.then(
        (value) => ({ ok: true as const, value }),
        (err: unknown) => ({ ok: false as const, err }),
      );
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'bound'>((resolve) => {
        timer = setTimeout(() => resolve('bound'), boundMs);
      });
      const first = await Promise.race([outcome, bound]);
      clearTimeout(timer);
      if (first !== 'bound') {
        if (!first.ok) throw first.err;
        return { done: true, value: first.value };
      }
      deps.logger.warn(
        { ...fields, awaited, boundMs },
        `answered without waiting any longer for ${awaited}: the delivery is durable, its follow-up goes on`,
      );
      const tracked = outcome.then((late) => {
        const elapsedMs = Math.round(performance.now() - started);
        if (late.ok) deps.logger.info({ ...fields, elapsedMs }, 'late follow-up of a delivery finished');
        else
          deps.logger.error(
            { err: late.err, ...fields, awaited, elapsedMs },
            `late follow-up of a delivery failed at ${awaited}`,
          );
      });
      late.add(tracked);
      void tracked.finally(() => late.delete(tracked));
      return { done: false, awaited };
    },

    async idle() {
      while (late.size > 0) await Promise.allSettled([...late]);
    },
  };
}
