import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../http/ui/support.ts';

const run = promisify(execFile);
// The example lives in the API reference since the README became a front page (issue 18).
const readme = readFileSync(new URL('../../docs/reference/api.md', import.meta.url), 'utf8');

/** The README's copy-paste example: one signed delivery per provider with openssl and curl. */
function example(): string {
  const at = readme.indexOf('<!-- signed-providers-example');
  expect(at, 'docs/reference/api.md has the signed-providers example').toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  return block?.[1] ?? '';
}

const SECRETS = {
  HOOKLINE_CODEHOST_SECRET: 'readme-codehost',
  HOOKLINE_PAYMENTS_SECRET: 'readme-payments',
  HOOKLINE_CHAT_SECRET: 'readme-chat',
};
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ env: SECRETS });
});
afterAll(async () => {
  await s?.close();
});

it('the README example signs and sends one delivery per provider, each accepted', async () => {
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', example()], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOOKLINE_URL: s.url, ...SECRETS },
  });
  const acks = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { provider: string; verified: boolean; trust_mode: string });
  expect(acks.map((a) => a.provider)).toEqual(['codehost', 'payments', 'chat']);
  for (const a of acks) expect(a).toMatchObject({ verified: true, trust_mode: 'signed' });
});
