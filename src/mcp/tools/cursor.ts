import { HooklineError } from '../../errors.ts';

/** Opaque keyset cursors: `<epoch ms>.<id>` in base64url. */
export const encodeCursor = (at: Date, id: string | number): string =>
  Buffer.from(`${at.getTime()}.${id}`).toString('base64url');

export function decodeCursor(cursor: string): { readonly at: Date; readonly id: string } {
  const m = /^([0-9]{1,15})\.([A-Za-z0-9_]{1,64})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!m || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw new HooklineError('bad_request', 'the cursor is not one this server issued', { field: 'cursor' });
  }
  return { at: new Date(Number(m[1])), id: m[2]! };
}
