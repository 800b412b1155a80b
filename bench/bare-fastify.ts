// Anchor for bench/accept: a bare fastify server that parses the same JSON and answers 202.
import Fastify from 'fastify';

const app = Fastify();
app.post('/api/v1/emails', async (request, reply) => {
  const body = request.body as { to?: unknown };
  return reply.code(202).send({ message_id: 'x@example.com', status: 'queued', sandbox: false, recipients: [body.to] });
});
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
process.stdout.write(`LISTENING ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
