import { expect } from 'vitest';
import { DomainError, type DomainErrorCode } from '../../src/domain/errors.ts';
import type { Decider, DomainEventShape } from '../../src/domain/shared.ts';

/**
 * Given events, when a command, then events (or a refusal): the one shape of every domain test
 * (style.md §2, after emmett's DeciderSpecification). Pure: no database, the clock passed in.
 *
 *   deciderSpec(todoDecider, T0).given(created).when(claim).thenEvents([claimed]);
 *   deciderSpec(todoDecider, T0).given().when(claim).thenThrows('not_found');
 */
export function deciderSpec<C, S, E extends DomainEventShape>(decider: Decider<C, S, E>, now: Date) {
  return {
    given(...events: E[]) {
      const state = (): S => events.reduce(decider.evolve, decider.initialState());
      return {
        /** The state the given events fold to. */
        state,
        when(command: C, at: Date = now) {
          const decide = () => decider.decide(command, state(), at);
          return {
            /** The events decided, for assertions beyond equality. */
            events: (): E[] => decide(),
            /** The state after the decided events. */
            stateAfter: (): S => decide().reduce(decider.evolve, state()),
            thenEvents(expected: readonly E[]): void {
              expect(decide()).toEqual(expected);
            },
            thenNothing(): void {
              expect(decide()).toEqual([]);
            },
            thenThrows(code: DomainErrorCode, message?: RegExp): DomainError {
              let refused: unknown;
              try {
                decide();
              } catch (err) {
                refused = err;
              }
              expect(refused, 'the command should be refused').toBeInstanceOf(DomainError);
              const error = refused as DomainError;
              expect(error.code).toBe(code);
              if (message) expect(error.message).toMatch(message);
              return error;
            },
          };
        },
      };
    },
  };
}
