#!/usr/bin/env -S node --max-semi-space-size=8
// The hookline command. Plain JavaScript so that an older Node reaches the version check below
// instead of failing on TypeScript syntax; the program itself is TypeScript that Node 24 runs
// natively (type stripping), with no build step.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `hookline needs Node.js 24 or newer; this is Node.js ${process.versions.node} (${process.execPath}).\n` +
      'Install Node.js 24 or newer (`nvm install 24`, or https://nodejs.org/en/download) and run it again.\n',
  );
  process.exit(1);
}

const { main } = await import('../src/cli/main.ts');
await main(process.argv);
