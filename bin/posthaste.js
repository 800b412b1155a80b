#!/usr/bin/env -S node --max-semi-space-size=8
// Thin shim: the CLI is compiled TypeScript under dist/.
// --max-semi-space-size=8 (MiB): each thread's young generation at 16 MiB rather than V8's 32,
// which a busy daemon grows to and keeps; part of what keeps its peak under 256 MB (docs/operations.md).
// The flag can only be given at start; tests and benchmarks start the daemon with the flags here.
import '../dist/src/cli/main.js';
