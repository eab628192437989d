import type { Metrics } from '@cdp/metrics';
import type { ActivityRecord } from './activity.js';

type ReadCounts = Pick<ActivityRecord['records'], 'read' | 'invalid' | 'dropped'>;

/**
 * One file's loading as the process's metrics see it (`cdp_bulk_*`). Reading reports its running totals
 * at each progress write (twice a second) and once at the end, and the meter adds what changed since the
 * last report; publishing reports once per bus message. Never once per record: a file has millions.
 */
export class LoadMeter {
  private readonly labels: { data_type: string };
  private reported = { read: 0, invalid: 0, dropped: 0, bytes: 0 };

  constructor(
    private readonly metrics: Metrics | undefined,
    dataType: ActivityRecord['data_type'],
  ) {
    // A file whose name names no data type is rejected unread; it still counts as a file.
    this.labels = { data_type: dataType ?? 'unknown' };
  }

  /** What the reading has got to so far (totals since the file's start). */
  read(counts: ReadCounts, bytes: number): void {
    const metrics = this.metrics;
    if (!metrics) return;
    const last = this.reported;
    metrics.bulkRecordsRead.inc(this.labels, counts.read - last.read);
    metrics.bulkRecordsInvalid.inc(this.labels, counts.invalid - last.invalid);
    metrics.bulkRecordsDropped.inc(this.labels, counts.dropped - last.dropped);
    metrics.bulkBytesRead.inc(this.labels, bytes - last.bytes);
    this.reported = { read: counts.read, invalid: counts.invalid, dropped: counts.dropped, bytes };
  }

  /** A bus message of `lines` records of the file was published and acknowledged. */
  loaded(lines: number): void {
    this.metrics?.bulkRecordsLoaded.inc(this.labels, lines);
  }
}
