#!/usr/bin/env node
// Thin shim: the CLI is compiled TypeScript under dist/.
import '../dist/src/cli/main.js';
