import { ConfigError, loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { ExporterAppModule } from './exporter-app.module.js';

describe('apps/exporter', () => {
  const logger = createLogger('silent');
  const scaled = { CDP_BUS: 'nats', CDP_IDENTITY: 'redis', CDP_METADATA: 'nats' };

  it('refuses chDB: its one owner, the processor, runs the exports', () => {
    expect(() => ExporterAppModule.forRoot(loadConfig({ ...scaled, CDP_STORE: 'chdb' }), logger)).toThrow(
      /CDP_STORE=clickhouse/,
    );
  });

  it('refuses metadata it cannot share with the API', () => {
    expect(() =>
      ExporterAppModule.forRoot(loadConfig({ CDP_STORE: 'clickhouse', CDP_BUS: 'log' }), logger),
    ).toThrow(ConfigError);
  });

  it('composes the worker over a ClickHouse server', () => {
    const module = ExporterAppModule.forRoot(loadConfig({ ...scaled, CDP_STORE: 'clickhouse' }), logger);
    expect(module.imports).toHaveLength(3);
  });
});
