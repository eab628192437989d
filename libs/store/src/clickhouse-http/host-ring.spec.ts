import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StoreError } from '../clickhouse-transport.js';
import { ClickHouseHttpTransport } from './clickhouse-http.transport.js';
import { hostUrls } from './host-ring.js';

/**
 * Several hosts in CLICKHOUSE_URL. No ClickHouse server runs here: the hosts are plain HTTP listeners
 * answering as ClickHouse's HTTP interface does (`/ping`, JSONEachRow rows, `X-ClickHouse-Exception-Code`
 * errors), and a port nothing listens on. What is tested is the transport's choice of host, over real
 * sockets; the SQL itself is the chDB suites' business.
 */
describe('ClickHouse over HTTP with several hosts', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  /** A listener that answers every query with one row naming it, or with the engine error given. */
  async function host(name: string, error?: { code: number; message: string }) {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(req.url ?? '');
      req.resume();
      if (req.url?.startsWith('/ping')) return void res.end('Ok.\n');
      if (error) {
        res.writeHead(500, { 'X-ClickHouse-Exception-Code': String(error.code) });
        return void res.end(`Code: ${error.code}. DB::Exception: ${error.message}`);
      }
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.end(`${JSON.stringify({ host: name })}\n`);
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }

  /** A port on this machine nothing listens on: connections are refused. */
  async function closedPort(): Promise<string> {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    await new Promise((r) => server.close(r));
    return `http://127.0.0.1:${port}`;
  }

  const transport = (url: string) => new ClickHouseHttpTransport({ url, user: 'default', password: '' });

  it('reads a comma-separated list, and refuses an empty or non-HTTP one', () => {
    expect(hostUrls(' http://a:8123, https://b:8443 ,')).toEqual(['http://a:8123', 'https://b:8443']);
    expect(() => hostUrls(' , ')).toThrow(/names no host/);
    expect(() => hostUrls('tcp://a:9000')).toThrow(/not an http/);
  });

  it('takes the hosts in turn', async () => {
    const [a, b] = [await host('a'), await host('b')];
    const t = transport(`${a.url},${b.url}`);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await t.query<{ host: string }>('SELECT 1'))[0]!.host);
    expect(answers.sort()).toEqual(['a', 'a', 'b', 'b']);
    await t.close();
  });

  it('moves past a host that refuses connections, for queries, statements and ping', async () => {
    const live = await host('live');
    const t = transport(`${await closedPort()},${live.url}`);
    for (let i = 0; i < 3; i++) expect(await t.query('SELECT 1')).toEqual([{ host: 'live' }]);
    await t.exec('CREATE TABLE t (a String) ENGINE = Memory');
    await expect(t.ping()).resolves.toBeUndefined();
    await t.close();
  });

  it("does not move on when a host answers with an error: the engine's answer is the answer", async () => {
    const failing = await host('failing', { code: 62, message: 'Syntax error' });
    const other = await host('other');
    const t = transport(`${failing.url},${other.url}`);
    const err = await t.query('SELEC 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe(62);
    expect(other.seen.filter((u) => !u.startsWith('/ping'))).toEqual([]);
    await t.close();
  });

  it('fails with the last network error when no host can be reached', async () => {
    const t = transport(`${await closedPort()},${await closedPort()}`);
    await expect(t.query('SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
    await t.close();
  });
});
