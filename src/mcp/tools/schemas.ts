import { z } from 'zod';
import { queueNameSchema } from '../../domain/queue.ts';
import { MAX_LEASE_MS } from '../../domain/todo/decide.ts';

/** Shared argument shapes; a value outside them is a protocol error (InvalidParams). */
export const todoId = z
  .string()
  .regex(/^td_[a-z2-7]{20}$/, 'a todo id looks like td_ followed by 20 base32 characters')
  .describe('The todo id (td_...).');

export const leaseId = z
  .string()
  .regex(/^ls_[A-Za-z0-9_-]{20}$/, 'a lease id looks like ls_ followed by 20 characters')
  .describe('The lease id the claim returned.');

export const leaseSeconds = z
  .number()
  .int()
  .min(1)
  .max(MAX_LEASE_MS / 1000)
  .optional()
  .describe('How long the lease runs before it expires unless extended (default 300 seconds).');

export const queueName = queueNameSchema.describe('A queue of this endpoint.');

export const cursor = z.string().max(200).optional().describe('The next_cursor of the previous page.');

export const limit = (max: number, dflt: number) =>
  z.number().int().min(1).max(max).optional().describe(`Page size, 1 to ${max} (default ${dflt}).`);

export const leaseMs = (seconds: number | undefined, fallback: number): number =>
  seconds === undefined ? fallback : seconds * 1000;
