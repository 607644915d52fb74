import { chatScheme } from './chat.ts';
import { codehostScheme } from './codehost.ts';
import { paymentsScheme } from './payments.ts';
import type { SignatureScheme, SignedProvider } from './types.ts';

export { CHAT_TIMESTAMP_HEADERS } from './chat.ts';
export type { SignatureScheme, SignedProvider, VerifyInput, VerifyResult } from './types.ts';

export const signatureSchemes: Readonly<Record<SignedProvider, SignatureScheme>> = {
  codehost: codehostScheme,
  payments: paymentsScheme,
  chat: chatScheme,
};

export const SIGNED_PROVIDERS: readonly SignedProvider[] = ['codehost', 'payments', 'chat'];

export const isSignedProvider = (name: string): name is SignedProvider =>
  name === 'codehost' || name === 'payments' || name === 'chat';

/** Every header that carries a signature, in either naming family: their values are never stored. */
export const SIGNATURE_HEADER_NAMES: readonly string[] = Object.values(signatureSchemes).flatMap(
  (s) => s.signatureHeaders,
);
