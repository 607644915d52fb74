/**
 * Provider names (design.md, "Identifiers"): `codehost`, `payments`, `chat`, `generic:<name>`,
 * `broker:<channel>`, `webhook:<webhook_id>`, `operator`. In a URL path the full name is
 * percent-encoded.
 */
export type ProviderKind = 'codehost' | 'payments' | 'chat' | 'generic' | 'broker' | 'webhook' | 'operator';

export const GENERIC_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** GENERIC_NAME_PATTERN (and the queue names, which share it) said in words, for error messages. */
export const NAME_RULE =
  "1 to 64 characters, lowercase letters, digits, '-' or '_', starting with a letter or digit (such as ci or my-registry)";

export interface ProviderName {
  readonly name: string;
  readonly kind: ProviderKind;
  /** The part after the colon (`generic:<name>`, `broker:<channel>`, `webhook:<id>`), else null. */
  readonly suffix: string | null;
}

export function parseProviderName(name: string): ProviderName | undefined {
  if (name === 'codehost' || name === 'payments' || name === 'chat' || name === 'operator') {
    return { name, kind: name, suffix: null };
  }
  const colon = name.indexOf(':');
  if (colon < 0) return undefined;
  const prefix = name.slice(0, colon);
  const suffix = name.slice(colon + 1);
  if (prefix === 'generic' && GENERIC_NAME_PATTERN.test(suffix)) return { name, kind: 'generic', suffix };
  if (prefix === 'broker' && /^[!-~]{1,256}$/.test(suffix)) return { name, kind: 'broker', suffix };
  if (prefix === 'webhook' && /^wh_[A-Za-z0-9_-]{1,64}$/.test(suffix))
    return { name, kind: 'webhook', suffix };
  return undefined;
}

export const genericProviderName = (name: string): string => `generic:${name}`;
