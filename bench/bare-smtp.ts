// Anchor for bench/inbound: a bare smtp-server that accepts every recipient and discards the data.
import { SMTPServer } from 'smtp-server';

let count = 0;
const server = new SMTPServer({
  disableReverseLookup: true,
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  size: 50 * 1024 * 1024,
  onData(stream, _session, cb) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      count++;
      cb();
    });
  },
});
server.listen(0, '127.0.0.1', () => {
  const a = server.server.address();
  process.stdout.write(`LISTENING ${typeof a === 'object' && a ? a.port : 0}\n`);
});
process.on('SIGTERM', () => {
  process.stdout.write(`COUNT ${count}\n`);
  process.exit(0);
});
