import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Secrets that must be read back (webhook signing secrets) enter the log only encrypted,
 * AES-256-GCM, under a key kept outside the log (design.md): `HOOKLINE_SECRET_KEY` if set, else
 * a key file `secret.key` in the data directory, created on first use with mode 0600. Deleting
 * the key shreds every secret sealed with it. The additional data binds a sealed secret to what
 * it belongs to (a webhook id), so it cannot be moved to another.
 */
export interface SecretBox {
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
}

export const KEY_FILE = 'secret.key';

export function createSecretBox(options: {
  readonly secretKey: string | undefined;
  readonly dataDir: string;
}): SecretBox {
  let key: Buffer | undefined;
  let keyId: string | undefined;

  const load = (): { key: Buffer; keyId: string } => {
    if (!key) {
      const material = options.secretKey ?? readOrCreateKeyFile(options.dataDir);
      key = Buffer.from(hkdfSync('sha256', material, 'hookline', 'secret-box v1', 32));
      keyId = createHash('sha256').update(key).digest('hex').slice(0, 8);
    }
    return { key, keyId: keyId! };
  };

  return {
    seal(plaintext, context) {
      const k = load();
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', k.key, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `v1.${k.keyId}.${iv.toString('base64url')}.${body.toString('base64url')}`;
    },
    open(sealed, context) {
      const k = load();
      const [version, id, iv, body] = sealed.split('.');
      if (version !== 'v1' || !iv || !body) throw new Error('not a sealed secret');
      if (id !== k.keyId) throw new Error('sealed under another key (the secret key changed or was lost)');
      const bytes = Buffer.from(body, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', k.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(bytes.subarray(bytes.length - 16));
      return Buffer.concat([
        decipher.update(bytes.subarray(0, bytes.length - 16)),
        decipher.final(),
      ]).toString('utf8');
    },
  };
}

function readOrCreateKeyFile(dataDir: string): string {
  const file = path.join(dataDir, KEY_FILE);
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const material = randomBytes(32).toString('base64url');
  try {
    // 'wx': of two processes creating it at once, one writes and the other reads the winner's.
    fs.writeFileSync(file, `${material}\n`, { mode: 0o600, flag: 'wx' });
    return material;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fs.readFileSync(file, 'utf8').trim();
  }
}
