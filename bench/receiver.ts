// Anchor receiver for bench/webhooks: answers 200 at once; a separate process so its CPU is not the dispatcher's.
import http from 'node:http';

let count = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    count++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`LISTENING ${typeof a === 'object' && a ? a.port : 0}\n`);
});
process.on('SIGTERM', () => {
  process.stdout.write(`COUNT ${count}\n`);
  process.exit(0);
});
