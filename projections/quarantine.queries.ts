import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { QuarantineRow } from './quarantine.table.ts';

/** What the operator reads of quarantine (API and screen). */
/** The operator's held deliveries, newest first; `released` false: only those still held. */
export function listQuarantine(
  db: Kysely<Database>,
  operator: string,
  options: { readonly released?: boolean; readonly limit?: number } = {},
): Promise<QuarantineRow[]> {
  let q = db.selectFrom('quarantine').selectAll().where('operator', '=', operator);
  if (options.released === false) q = q.where('released_at', 'is', null);
  return q
    .orderBy('held_at', 'desc')
    .limit(options.limit ?? 100)
    .execute();
}

/** One held delivery of an operator, by its held todo (the screen's row after a release). */
export function findHeld(db: Kysely<Database>, operator: string, todoId: string): Promise<QuarantineRow[]> {
  return db
    .selectFrom('quarantine')
    .selectAll()
    .where('todo_id', '=', todoId)
    .where('operator', '=', operator)
    .execute();
}
