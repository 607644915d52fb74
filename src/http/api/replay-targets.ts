import { HooklineError } from '../../errors.ts';
import { checkReplayTarget } from '../../replay/ssrf.ts';

/**
 * Replay targets are fixed at vend time (release 0.4.0 item 4) and must pass the shared SSRF
 * guard then: `https`, no user information, and every address the host resolves to public. A
 * refused target is a 400 and nothing is minted; the guard runs again at replay time.
 */
export async function checkReplayTargetAtVend(raw: string): Promise<void> {
  const verdict = await checkReplayTarget(raw);
  if (!verdict.ok) {
    throw new HooklineError(
      'bad_request',
      `replay target ${JSON.stringify(raw)} refused: ${verdict.detail}`,
      {
        field: 'replay_targets',
        reason: verdict.reason,
      },
    );
  }
}
