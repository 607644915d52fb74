import type { QuarantineEvent, QuarantineReleasedData } from './events.ts';

/** A held delivery's release, once decided: the first one holds. */
export type ReleaseState = { readonly release: QuarantineReleasedData | null };

export const initialReleaseState = (): ReleaseState => ({ release: null });

export function evolveRelease(state: ReleaseState, event: QuarantineEvent): ReleaseState {
  switch (event.type) {
    case 'QuarantineReleased':
      return { release: state.release ?? event.data };
    default: {
      const never: never = event.type;
      return never;
    }
  }
}
