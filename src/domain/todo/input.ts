import { z } from 'zod';

/** Characters as a person counts them (code points), not UTF-16 units. */
const length = (s: string): number => [...s].length;

// biome-ignore lint/suspicious/noControlCharactersInRegex: a title is one line of text
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Spec 2.9 PushTodoIn.title: non-empty, at most 200 characters, one line. */
export const todoTitleSchema = z
  .string()
  .refine((t) => t.trim().length > 0, { message: 'title must not be empty' })
  .refine((t) => length(t) <= 200, { message: 'title must be at most 200 characters' })
  .refine((t) => !CONTROL.test(t), {
    message: 'title must be one line (no line breaks or control characters)',
  });

/** Reported by list_todos as the todo's kind; `operator` for a hand-off unless given. */
export const todoKindSchema = z
  .string()
  .min(1, 'kind must not be empty')
  .refine((k) => length(k) <= 64, { message: 'kind must be at most 64 characters' })
  .refine((k) => !CONTROL.test(k), { message: 'kind must be one line' });

/** Spec 8: an idempotency key of at most 256 characters, scoped to the endpoint. */
export const todoKeySchema = z
  .string()
  .min(1, 'key must not be empty')
  .refine((k) => length(k) <= 256, { message: 'key must be at most 256 characters' });

export const DEFAULT_TODO_KIND = 'operator';
