import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSecretBox, KEY_FILE } from '../../src/webhooks/secret-box.ts';

describe('secret box: AES-256-GCM under a key outside the log', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hookline-secret-box-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates the key file on first use with mode 0600, and seals so only the same key and context open', () => {
    const dataDir = path.join(dir, 'data');
    const box = createSecretBox({ secretKey: undefined, dataDir });
    expect(fs.existsSync(path.join(dataDir, KEY_FILE))).toBe(false);
    const sealed = box.seal('whsec_abc', 'wh_1');
    expect(sealed).not.toContain('whsec_abc');
    expect(fs.statSync(path.join(dataDir, KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(box.open(sealed, 'wh_1')).toBe('whsec_abc');
    // Another process over the same directory reads the same key.
    expect(createSecretBox({ secretKey: undefined, dataDir }).open(sealed, 'wh_1')).toBe('whsec_abc');
    expect(() => box.open(sealed, 'wh_2')).toThrow();
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    expect(() => box.open([...parts.slice(0, 3), body.toString('base64url')].join('.'), 'wh_1')).toThrow();
  });

  it('HOOKLINE_SECRET_KEY wins over the file; a different key cannot open (shredding)', () => {
    const a = createSecretBox({ secretKey: 'k'.repeat(43), dataDir: path.join(dir, 'unused') });
    const b = createSecretBox({ secretKey: 'j'.repeat(43), dataDir: path.join(dir, 'unused') });
    const sealed = a.seal('s3cret', 'ctx');
    expect(a.open(sealed, 'ctx')).toBe('s3cret');
    expect(() => b.open(sealed, 'ctx')).toThrow(/another key/);
    expect(fs.existsSync(path.join(dir, 'unused'))).toBe(false);
  });
});
