#!/usr/bin/env -S node --max-semi-space-size=8
// The hookline command. Plain JavaScript so that an older Node reaches the version check below
// instead of failing on TypeScript syntax; the program itself is TypeScript that Node 24 runs
// natively (type stripping), with no build step.
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `hookline needs Node.js 24 or newer; this is Node.js ${process.versions.node} (${process.execPath}).\n` +
      'Install Node.js 24 or newer (`nvm install 24`, or https://nodejs.org/en/download) and run it again.\n',
  );
  process.exit(1);
}

// Node's module compile cache: the V8 code of every module hookline loads (its own TypeScript,
// type-stripped, and its dependencies), kept on disk, so that later starts skip stripping and
// compiling. Measured in bench/README.md ("Start-up time"). NODE_COMPILE_CACHE chooses another
// directory, NODE_DISABLE_COMPILE_CACHE=1 turns it off (Node's own variables). The default is the
// user's cache directory, not a shared one in /tmp: what it holds is code this process will run.
function userCacheDir() {
  if (process.env.XDG_CACHE_HOME) return process.env.XDG_CACHE_HOME;
  try {
    return path.join(os.homedir(), '.cache');
  } catch {
    return undefined; // no home directory: no cache
  }
}
const cacheHome = process.env.NODE_COMPILE_CACHE ? undefined : userCacheDir();
if (process.env.NODE_COMPILE_CACHE || cacheHome) {
  // Never throws: a directory it cannot write leaves the cache off.
  module.enableCompileCache(cacheHome ? path.join(cacheHome, 'hookline', 'node-compile-cache') : undefined);
}

const { main } = await import('../src/cli/main.ts');
await main(process.argv);
