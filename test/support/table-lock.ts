import pg from 'pg';

/**
 * Holds a table in EXCLUSIVE mode from a connection of the test's own: reads of the table go on,
 * but the projection that writes it waits. This is how a test makes a read model lag behind the
 * log on purpose, with nothing of ours replaced. `release()` commits and ends the connection.
 */
export async function holdTable(databaseUrl: string, table: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('begin');
  await client.query(`lock table ${client.escapeIdentifier(table)} in exclusive mode`);
  let released: Promise<void> | undefined;
  return {
    release: () => {
      released ??= client
        .query('commit')
        .then(() => client.end())
        .then(() => undefined);
      return released;
    },
  };
}
