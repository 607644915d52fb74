import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { IngestAck } from '../domain/delivery/events.ts';
import type { ProviderState } from '../domain/provider/state.ts';
import { HooklineError } from '../errors.ts';
import { checkBody } from './body.ts';
import { type ExtractFamily, extractIdentity } from './extract.ts';
import type { DeliveryRecorder } from './recorder.ts';
import { sanitizeHeaders } from './sanitize.ts';
import { isSignedProvider, signatureSchemes } from './signatures/index.ts';
import { parseTrustedProxies, resolveSourceIp } from './source-ip.ts';
import { presentedToken, tokenMatches } from './token.ts';

export interface IncomingRequest {
  readonly headers: IncomingHttpHeaders;
  /** The raw body; empty when none was sent. */
  readonly body: Uint8Array;
  readonly remoteAddress: string | undefined;
  readonly pathToken?: string | undefined;
  readonly queryToken?: string | undefined;
}

export type ReceiveOutcome =
  | {
      readonly kind: 'accepted';
      readonly ack: IngestAck;
      readonly duplicate: boolean;
      readonly position: string | null;
    }
  | { readonly kind: 'handshake'; readonly challenge: string };

export interface ReceiverDeps {
  readonly config: Config;
  readonly clock: Clock;
  readonly recorder: DeliveryRecorder;
}

export interface Receiver {
  /**
   * Checks 3 to 7 of design.md's ingestion order for a provider that exists and a body already
   * read within the limit (checks 1 and 2 happen before the body is read), then records it.
   * Failures throw HooklineError; a 401/403 carries a `reason` safe to log.
   */
  receive(provider: ProviderState, request: IncomingRequest): Promise<ReceiveOutcome>;
}

export function createReceiver(deps: ReceiverDeps): Receiver {
  const { config, clock, recorder } = deps;
  const trusted = parseTrustedProxies(config.trustedProxies);

  return {
    async receive(provider, request) {
      if (!provider.enabled)
        throw new HooklineError('provider_disabled', `provider ${provider.name} is disabled`);

      let verified = false;
      let verifyDetail: string;
      const knownTokens: string[] = [];
      if (provider.trust_mode === 'signed' && isSignedProvider(provider.kind)) {
        const result = signatureSchemes[provider.kind].verify({
          headers: request.headers,
          body: request.body,
          secrets: config.secrets[provider.kind],
          nowMs: clock.now().getTime(),
          toleranceS: config.signatureToleranceS,
        });
        if (!result.ok) throw new HooklineError(result.code, result.reason);
        verified = true;
        verifyDetail = result.detail;
      } else if (provider.trust_mode === 'token' && provider.kind === 'generic') {
        const token = presentedToken(request.headers, request.pathToken, request.queryToken);
        if (token === undefined) throw new HooklineError('invalid_token', 'a token is required');
        if (provider.token_hash === null || !tokenMatches(token, provider.token_hash)) {
          throw new HooklineError('invalid_token', 'the token is not valid for this provider');
        }
        knownTokens.push(token);
        verifyDetail = 'token ok';
      } else if (provider.trust_mode === 'open' && provider.kind === 'generic') {
        verifyDetail = 'open: not checked';
        // An open provider takes no token, but one sent anyway is still kept out of storage.
        const token = presentedToken(request.headers, request.pathToken, request.queryToken);
        if (token !== undefined) knownTokens.push(token);
      } else {
        throw new HooklineError('not_found', `provider ${provider.name} has no HTTP receiver`);
      }

      const contentType = headerString(request.headers['content-type']);
      const checked = checkBody(contentType, request.body);
      if (!checked.ok) throw new HooklineError(checked.code, checked.reason);

      if (provider.kind === 'chat' && checked.body.kind === 'json') {
        const v = checked.body.value as Record<string, unknown>;
        if (v.type === 'url_verification' && typeof v.challenge === 'string') {
          return { kind: 'handshake', challenge: v.challenge };
        }
      }

      const identity = extractIdentity(provider.kind as ExtractFamily, request.headers, checked.body);
      const recorded = await recorder.record({
        provider: provider.name,
        family: 'webhook',
        trust_mode: provider.trust_mode,
        verified,
        verify_detail: verifyDetail,
        event_type: identity.event_type,
        external_id: identity.external_id,
        content_type: contentType ?? null,
        source_ip: resolveSourceIp(request.remoteAddress, request.headers['x-forwarded-for'], trusted),
        headers: sanitizeHeaders(request.headers, knownTokens),
        payload: request.body,
      });
      return {
        kind: 'accepted',
        ack: recorded.ack,
        duplicate: recorded.duplicate,
        position: recorded.position,
      };
    },
  };
}

const headerString = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
