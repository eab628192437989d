import { connect } from 'node:net';
import Fastify from 'fastify';
import { installHttpHooks } from './fastify-setup.js';

describe('the hooks every route shares', () => {
  it("keep the client's address for a request whose connection the client closed before it was answered", async () => {
    const app = Fastify();
    installHttpHooks(app);
    let seen: string | undefined;
    let answered!: () => void;
    const done = new Promise<void>((resolve) => (answered = resolve));
    app.post('/late', async (request) => {
      // The route reads the address only after the client has hung up (a page closing after its
      // keepalive request went): what an event's `ip` is made from.
      await new Promise<void>((resolve) => request.raw.socket.once('close', () => resolve()));
      seen = request.ip;
      answered();
      return {};
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as { port: number };
      const client = connect(port, '127.0.0.1', () => {
        client.write(
          'POST /late HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
        );
      });
      // Hang up once the server has the whole request (it answers only after the close).
      client.on('connect', () => setImmediate(() => client.destroy()));
      await done;
      expect(seen).toBe('127.0.0.1');
    } finally {
      await app.close();
    }
  });
});
