import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the bus reports about its backlog at scrape time (undefined: the driver cannot say). */
export interface BusBacklog {
  /** Messages waiting to be delivered to a processor. */
  pending: number;
  /** Messages delivered and not yet settled. */
  inFlight: number;
  /** Bytes of the waiting messages, when the driver knows them. */
  bytes?: number;
  /** Dead letters held. */
  deadLetters?: number;
}

/** Seconds buckets for work measured in milliseconds to seconds (requests, inserts, resolves). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds from a request's acceptance to its message's settlement: up to minutes under backlog. */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];
/** A bus poll at every scrape of several collectors: one poll a second is plenty. */
const BACKLOG_CACHE_MS = 1000;

/**
 * The process's metrics, in a registry of its own (tests build several apps in one process; prom-client's
 * global registry would make them collide). Labels are low-cardinality only: a route pattern, a kind,
 * a table, a status — never an account, customer or email. Hot paths count per batch (`inc(n)`).
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = this.counter(
    'cdp_http_requests_total',
    'HTTP requests answered, by method, route pattern and status code',
    ['method', 'route', 'status'],
  );
  readonly httpDuration = this.histogram(
    'cdp_http_request_duration_seconds',
    'Time from a request arriving to its answer being sent, by method and route pattern',
    LATENCY_BUCKETS,
    ['method', 'route'],
  );

  readonly recordsAccepted = this.counter(
    'cdp_records_accepted_total',
    'Records the API acknowledged (202) after the bus held them durably, by kind',
    ['kind'],
  );
  readonly recordsStored = this.counter(
    'cdp_records_stored_total',
    'Records of messages the processor settled as stored, by kind (a redelivered message counts again)',
    ['kind'],
  );
  readonly recordsDropped = this.counter(
    'cdp_records_dropped_total',
    'Records acknowledged without being stored, by kind and the reason a processor step dropped them (duplicate: a second copy of a message in one batch; unknown-object: records of an object the schema does not have)',
    ['kind', 'reason'],
  );
  readonly recordsDeadLettered = this.counter(
    'cdp_records_dead_lettered_total',
    'Records of messages the processor gave up on (dead letters), by kind',
    ['kind'],
  );
  readonly messagesDeadLettered = this.counter(
    'cdp_bus_dead_lettered_messages_total',
    'Messages moved to the dead letters, by kind (an undecodable message counts here with no records)',
    ['kind'],
  );
  readonly messageLag = this.histogram(
    'cdp_bus_message_lag_seconds',
    'Seconds from a request being accepted to its message being settled by the processor',
    LAG_BUCKETS,
  );

  readonly storeInsertRows = this.counter(
    'cdp_store_insert_rows_total',
    'Rows inserted into the analytic store, by table (without the account database)',
    ['table'],
  );
  readonly storeInsertDuration = this.histogram(
    'cdp_store_insert_duration_seconds',
    'Time of one insert into the analytic store, by table and outcome (ok, error)',
    LATENCY_BUCKETS,
    ['table', 'outcome'],
  );

  readonly identityResolveDuration = this.histogram(
    'cdp_identity_resolve_duration_seconds',
    "Time to resolve one batch's identities (and look up the opt-out pool), rebuilds included",
    LATENCY_BUCKETS,
  );
  readonly identityResolvedRecords = this.counter(
    'cdp_identity_resolved_records_total',
    'Records whose identifiers were resolved to a customer',
  );
  readonly identityMerges = this.counter(
    'cdp_identity_merges_total',
    'Customers merged into another by identity resolution',
  );
  readonly identityConflicts = this.counter(
    'cdp_identity_conflicts_total',
    'Identity conflicts recorded (a merge refused)',
  );

  readonly rateLimitRefusals = this.counter(
    'cdp_rate_limit_refusals_total',
    'Requests refused with 429 by the per-account rate limits, by API family',
    ['family'],
  );

  readonly exportJobs = this.counter(
    'cdp_export_jobs_total',
    'Export jobs this process finished, by final state (completed, completed_with_errors, interrupted)',
    ['state'],
  );
  readonly exportJobsRunning = this.gauge(
    'cdp_export_jobs_running',
    'Export jobs this process is running now',
  );
  readonly exportRows = this.counter(
    'cdp_export_rows_total',
    'Rows written to export files by finished jobs',
  );
  readonly exportBytes = this.counter(
    'cdp_export_bytes_total',
    'Bytes of export files written by finished jobs',
  );

  readonly bulkFiles = this.counter(
    'cdp_bulk_files_total',
    'Bulk files this loader finished, by final state (completed, rejected, failed), and attempts it ended without one (interrupted: stopped, lost to another loader, or failed and left for a retry)',
    ['state'],
  );
  readonly bulkFilesRunning = this.gauge('cdp_bulk_files_running', 'Bulk files this loader is loading now');
  readonly bulkRecordsRead = this.counter(
    'cdp_bulk_records_read_total',
    'Records of bulk files read and checked, by data type (a file taken over is read again)',
    ['data_type'],
  );
  readonly bulkRecordsLoaded = this.counter(
    'cdp_bulk_records_loaded_total',
    'Records of bulk files published to the bus and acknowledged, by data type',
    ['data_type'],
  );
  readonly bulkRecordsInvalid = this.counter(
    'cdp_bulk_records_invalid_total',
    'Records of bulk files refused by the checks (written to the rejected-records file), by data type',
    ['data_type'],
  );
  readonly bulkRecordsDropped = this.counter(
    'cdp_bulk_records_dropped_total',
    "Valid records of bulk files with a value of no meaning dropped (the activity record's records.dropped), by data type",
    ['data_type'],
  );
  readonly bulkBytesRead = this.counter(
    'cdp_bulk_bytes_read_total',
    'Bytes of bulk files read (as stored: compressed for .gz), by data type',
    ['data_type'],
  );

  // Every metric is made by one of these three, so none can land in prom-client's global registry.
  private counter<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  /** `collect`: sets the gauge at scrape time. */
  private gauge(name: string, help: string, collect?: (this: Gauge) => Promise<void>) {
    return new Gauge({ name, help, collect, registers: [this.registry] });
  }

  private histogram<L extends string = string>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ) {
    return new Histogram<L>({ name, help, buckets, labelNames, registers: [this.registry] });
  }

  /** Counts a message a bus moved to its dead letters (the bus drivers' `onDeadLetter`). */
  readonly deadLettered = (kind: string, records: number): void => {
    this.messagesDeadLettered.inc({ kind });
    this.recordsDeadLettered.inc({ kind }, records);
  };

  private backlogSource: (() => Promise<BusBacklog | undefined>) | undefined;
  private backlogCache: { at: number; value: Promise<BusBacklog | undefined> } | undefined;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    // Process metrics under their usual names (process_*, nodejs_*): CPU, memory, event-loop lag, GC.
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Reports the bus's backlog at scrape time from `source` (the process's bus). A read that fails
   * leaves the gauges at their last value; a figure the driver does not know is left out.
   */
  watchBus(source: () => Promise<BusBacklog | undefined>): void {
    this.backlogSource = source;
    const gauge = (name: string, help: string, read: (b: BusBacklog) => number | undefined) => {
      const backlog = () => this.backlog();
      this.gauge(name, help, async function () {
        const found = await backlog();
        const value = found && read(found);
        if (value !== undefined) this.set(value);
      });
    };
    gauge(
      'cdp_bus_backlog_messages',
      'Messages in the bus not yet delivered to a processor (consumer lag)',
      (b) => b.pending,
    );
    gauge(
      'cdp_bus_in_flight_messages',
      'Messages delivered to a processor and not yet settled',
      (b) => b.inFlight,
    );
    gauge('cdp_bus_backlog_bytes', 'Bytes of messages in the bus not yet settled', (b) => b.bytes);
    gauge(
      'cdp_bus_dead_letters',
      'Dead letters held by the bus, waiting for an operator to replay them',
      (b) => b.deadLetters,
    );
  }

  /** The bus's backlog, polled at most once a second whatever the number of gauges and scrapers. */
  private backlog(): Promise<BusBacklog | undefined> {
    const now = Date.now();
    if (!this.backlogCache || now - this.backlogCache.at >= BACKLOG_CACHE_MS) {
      const read = this.backlogSource?.().catch(() => undefined) ?? Promise.resolve(undefined);
      this.backlogCache = { at: now, value: read };
    }
    return this.backlogCache.value;
  }

  /** The Prometheus text exposition of every metric. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
