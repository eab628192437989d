import { Controller, Get, Header } from '@nestjs/common';
import { ApiProduces, ApiTags } from '@nestjs/swagger';
import { Metrics } from '@cdp/metrics';
import { Auth } from '@cdp/http-common';

/**
 * `GET /metrics`: the process's metrics in the Prometheus text format, for a scraper on the operators'
 * network. No key (like `/health`) and never rate-limited: it carries no account's data.
 */
@ApiTags('health')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  @Get()
  @Auth('none')
  @ApiProduces('text/plain')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.exposition();
  }
}
