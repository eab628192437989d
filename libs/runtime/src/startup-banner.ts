import type { AddressInfo } from 'node:net';
import { ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AccountsBootstrap } from '@cdp/accounts';
import type { AppConfig } from '@cdp/config';

/** What a person starting the process at a terminal needs first. */
export interface StartupFacts {
  name: string;
  /** Where a client on this machine reaches the process (`http://localhost:3000`). */
  url: string;
  servesApi: boolean;
  servesConsole: boolean;
  drivers: string;
  dataDir: string;
  /** The account created at this start (only the all-in-one process creates one, on an empty install). */
  firstAccount: { publicKey: string; privateKey: string } | undefined;
}

export function startupFacts(name: string, app: NestFastifyApplication, config: AppConfig): StartupFacts {
  const fastify = app.getHttpAdapter().getInstance();
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    name,
    url: `http://${displayHost(config.host)}:${port}`,
    servesApi: fastify.hasRoute({ method: 'POST', url: '/v3/events' }),
    servesConsole: fastify.hasRoute({ method: 'GET', url: '/console' }),
    drivers: `bus ${config.bus}, identity ${config.identity}, store ${config.store}, metadata ${config.metadata}`,
    dataDir: config.dataDir,
    firstAccount: createdKeys(app),
  };
}

/**
 * The banner `npm start` prints on a terminal, after the process listens. A role without the API (the
 * processor, the loader, the exporter beside it in `npm run start:scaled`) gets one line.
 */
export function startupBanner(facts: StartupFacts): string {
  const { url } = facts;
  if (!facts.servesApi)
    return `  ${facts.name} is ready  (${facts.drivers}); health ${url}/health/ready, metrics ${url}/metrics\n`;
  const lines = ['', `  ${facts.name} is ready  (${facts.drivers}; data in ${facts.dataDir})`, ''];
  lines.push(`  API       ${url}   (OpenAPI: ${url}/openapi.json)`);
  if (facts.servesConsole) lines.push(`  Console   ${url}/console   (sign in with a private key)`);
  lines.push(`  Health    ${url}/health/ready   Metrics ${url}/metrics`);
  const account = facts.firstAccount;
  if (account) {
    lines.push(
      '',
      '  First account, created now. Its private key is shown only this once:',
      `  Public key    ${account.publicKey}`,
      `  Private key   ${account.privateKey}`,
      '',
      '  Try it:',
      `  curl -X POST ${url}/v3/events -H 'x-api-key: ${account.publicKey}' -H 'content-type: application/json' \\`,
      `    -d '{"type":"pageview","identifiers":{"email":"ann@example.com"},"data":{"page":"/"}}'`,
      `  curl '${url}/v3/profiles?email=ann@example.com' -H 'x-api-key: ${account.privateKey}'`,
    );
  }
  lines.push('', '  Ctrl-C stops it cleanly.', '');
  return lines.join('\n') + '\n';
}

/** A wildcard bind address is reached as localhost from this machine. */
function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/** The keys AccountsBootstrap created at this start, where the process has one (the API roles do). */
function createdKeys(app: NestFastifyApplication): StartupFacts['firstAccount'] {
  for (const module of app.get(ModulesContainer).values()) {
    const bootstrap = module.providers.get(AccountsBootstrap)?.instance;
    if (bootstrap instanceof AccountsBootstrap) return bootstrap.createdKeys;
  }
  return undefined;
}
