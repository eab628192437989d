import { Controller, Get, Optional, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Buckets } from '@cdp/buckets';
import { ConsentState } from '@cdp/consent';
import { EventBus } from '@cdp/bus';
import type { DriverHealth } from '@cdp/contracts';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { MetadataStore } from '@cdp/metadata';
import { RateLimiter } from '@cdp/rate-limits';
import { OrderState } from '@cdp/orders';
import { AnalyticStore } from '@cdp/store';
import { Auth } from '@cdp/http-common';

/**
 * Liveness (the process answers) and readiness (every port's driver answers). 503 when not ready.
 * `/health` tells both; `/health/live` and `/health/ready` each alone, for orchestrators' probes.
 * `dead_letters.count`: messages the processor gave up on (null when the bus cannot say); they do not
 * make the process unready — an operator lists and replays them through `/admin/v1/dead-letters`.
 */
@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly bus: EventBus,
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly metadata: MetadataStore,
    private readonly buckets: Buckets,
    private readonly consent: ConsentState,
    private readonly rateLimiter: RateLimiter,
    private readonly orders: OrderState,
    /** Absent in a process that does not open the store (the API beside a chDB processor). */
    @Optional() private readonly store?: AnalyticStore,
  ) {}

  @Get()
  @Auth('none')
  async health(@Res({ passthrough: true }) reply: FastifyReply): Promise<{
    live: true;
    ready: boolean;
    drivers: Record<string, DriverHealth>;
    dead_letters: { count: number | null };
  }> {
    const [{ ready, drivers }, count] = await Promise.all([
      this.check(),
      this.bus.deadLetterCount().catch(() => null),
    ]);
    void reply.status(ready ? 200 : 503);
    return { live: true, ready, drivers, dead_letters: { count } };
  }

  /** Liveness alone: the process answers. An orchestrator restarts it when this fails. */
  @Get('live')
  @Auth('none')
  live(): { live: true } {
    return { live: true };
  }

  /** Readiness alone: 503 while a driver is not ready. An orchestrator sends no traffic until 200. */
  @Get('ready')
  @Auth('none')
  async ready(
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ ready: boolean; drivers: Record<string, DriverHealth> }> {
    const checked = await this.check();
    void reply.status(checked.ready ? 200 : 503);
    return checked;
  }

  private async check(): Promise<{ ready: boolean; drivers: Record<string, DriverHealth> }> {
    const entries = await Promise.all(
      Object.entries({
        bus: this.bus,
        identity: this.identity,
        profiles: this.profiles,
        orders: this.orders,
        ...(this.store ? { store: this.store } : {}),
        metadata: this.metadata,
        buckets: this.buckets,
        consent: this.consent,
        rate_limits: this.rateLimiter,
      }).map(async ([port, driver]) => [port, await driver.health()] as const),
    );
    return { ready: entries.every(([, h]) => h.ready), drivers: Object.fromEntries(entries) };
  }
}
