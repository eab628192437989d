import { Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AccountsBootstrap } from '@cdp/accounts';
import { loadConfig } from '@cdp/config';
import { startupBanner, startupFacts, type StartupFacts } from './startup-banner.js';

const facts: StartupFacts = {
  name: 'cdp',
  url: 'http://localhost:3000',
  servesApi: true,
  servesConsole: true,
  drivers: 'bus log, identity memory, store chdb, metadata file',
  dataDir: '/srv/cdp/data',
  firstAccount: { publicKey: 'pk123', privateKey: 'pk123.secret' },
};

describe('startupBanner', () => {
  it('shows where the API and the console are and the keys of the account just created', () => {
    const banner = startupBanner(facts);
    expect(banner).toContain('cdp is ready');
    expect(banner).toContain('API       http://localhost:3000');
    expect(banner).toContain('Console   http://localhost:3000/console');
    expect(banner).toContain('Public key    pk123');
    expect(banner).toContain('Private key   pk123.secret');
    expect(banner).toContain("-H 'x-api-key: pk123'");
    expect(banner.split('\n').length).toBeLessThan(25);
  });

  it('shows no keys when no account was created at this start', () => {
    const banner = startupBanner({ ...facts, firstAccount: undefined });
    expect(banner).toContain('Console   http://localhost:3000/console');
    expect(banner).not.toMatch(/Public key|Private key|x-api-key/);
  });

  it('is one line for a role without the API', () => {
    const banner = startupBanner({ ...facts, name: 'processor', servesApi: false, servesConsole: false });
    expect(banner).toBe(
      '  processor is ready  (bus log, identity memory, store chdb, metadata file); ' +
        'health http://localhost:3000/health/ready, metrics http://localhost:3000/metrics\n',
    );
  });
});

@Controller('v3')
class EventsStandIn {
  @Post('events')
  accept(): string {
    return 'ok';
  }
}

describe('startupFacts', () => {
  let app: NestFastifyApplication | undefined;
  afterEach(() => app?.close());

  async function listen(module: object): Promise<NestFastifyApplication> {
    app = await NestFactory.create<NestFastifyApplication>(module, new FastifyAdapter(), { logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return app;
  }

  it("reads the listening port, the routes served and AccountsBootstrap's created keys from the app", async () => {
    // What AccountsBootstrap holds after creating the first account (its own start-up is the accounts suites').
    const bootstrap = Object.assign(Object.create(AccountsBootstrap.prototype) as AccountsBootstrap, {
      createdKeys: { publicKey: 'pk', privateKey: 'pk.s' },
      onApplicationBootstrap: () => Promise.resolve(),
    });
    @Module({
      controllers: [EventsStandIn],
      providers: [{ provide: AccountsBootstrap, useValue: bootstrap }],
    })
    class WithAccount {}
    const started = await listen(WithAccount);
    const { port } = started.getHttpServer().address() as { port: number };
    const read = startupFacts('cdp', started, loadConfig({ HOST: '127.0.0.1' }));
    expect(read).toMatchObject({
      url: `http://127.0.0.1:${port}`,
      servesApi: true,
      servesConsole: false,
      firstAccount: { publicKey: 'pk', privateKey: 'pk.s' },
    });
  });

  it('finds no keys in a process without AccountsBootstrap', async () => {
    @Module({})
    class Bare {}
    const read = startupFacts('processor', await listen(Bare), loadConfig({}));
    expect(read).toMatchObject({ url: expect.stringMatching(/^http:\/\/localhost:\d+$/), servesApi: false });
    expect(read.firstAccount).toBeUndefined();
  });
});
