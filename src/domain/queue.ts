import { z } from 'zod';

/** design.md: queue names; `quarantine` is reserved (release 0.4.0) for held deliveries. */
export const QUEUE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const QUARANTINE = 'quarantine';
export const DEFAULT_QUEUE = 'inbox';
/** QUEUE_PATTERN in words, for error messages. */
export const QUEUE_RULE =
  "a queue name must be 1 to 64 characters, lowercase letters, digits, '-' or '_', starting with a letter or digit (such as inbox)";

export const queueNameSchema = z
  .string()
  .regex(QUEUE_PATTERN, QUEUE_RULE)
  .refine((q) => q !== QUARANTINE, {
    message: '`quarantine` is reserved for held deliveries and cannot be vended',
  });

/** An endpoint drains 1 to this many queues (spec 2.9's `queues`). */
export const MAX_QUEUES = 16;
