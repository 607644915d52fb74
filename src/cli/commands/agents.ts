import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, printTable, say } from '../client/output.ts';

/** `hookline agents list` (GET /api/v1/agents). */
export function registerAgents(program: Command): void {
  const agents = program
    .command('agents')
    .description('the agents you registered (vending an endpoint registers one)');
  withUrl(agents.command('list'))
    .description('list your agents')
    .option('--json', 'machine-readable JSON output')
    .action(async (_opts, cmd: Command) => {
      const api = clientFor(cmd);
      const rows = await api.request<{ id: string; name: string; description?: string }[]>(
        'GET',
        '/api/v1/agents',
      );
      if (wantsJson(cmd)) return printJson(rows);
      if (rows.length === 0) return say('No agents yet. `hookline endpoints vend <name>` registers one.');
      printTable(rows, ['name', 'id']);
    });
}
