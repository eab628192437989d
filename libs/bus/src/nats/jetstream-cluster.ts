import type { ClusterInfo } from '@nats-io/jetstream';

/**
 * A stream JetStream could not place on `replicas` servers, told as an operator can act on it: the
 * server's own words ("no suitable peers for placement, insufficient storage") name neither the stream
 * nor the setting to change.
 */
export class StreamPlacementError extends Error {
  override name = 'StreamPlacementError';
}

/**
 * `err` as a StreamPlacementError when JetStream refused to place `stream` (too few servers, or too
 * little `max_file_store` left on them for the `maxBytes` the stream reserves on every replica),
 * otherwise `err` itself.
 */
export function placementRefusal(
  err: unknown,
  stream: string,
  replicas: number,
  maxBytes: number | undefined,
): unknown {
  const message = err instanceof Error ? err.message : String(err);
  if (!/no suitable peers for placement|insufficient (storage|resources)/i.test(message)) return err;
  const servers = `${replicas} JetStream server${replicas === 1 ? '' : 's'}`;
  const storage =
    maxBytes && maxBytes > 0 && /storage|resources/i.test(message)
      ? ` The stream reserves its max_bytes (${Math.round(maxBytes / 1024 / 1024)} MiB, ` +
        `CDP_NATS_STREAM_MAX_MB) on every replica: each of ${servers} needs that much of its ` +
        `jetstream max_file_store unreserved. Raise max_file_store in the NATS configuration, or lower ` +
        `CDP_NATS_STREAM_MAX_MB.`
      : ` The cluster has fewer than ${servers} up, or they lack room: start the missing servers, or ` +
        `set CDP_NATS_REPLICAS to the number that run.`;
  return new StreamPlacementError(
    `JetStream could not place stream ${stream} on ${servers} (${message}).${storage}`,
  );
}

/**
 * What a replicated stream's cluster state says is wrong, or undefined when every replica is current:
 * a replica that is offline or behind means one more lost server stops the stream.
 */
export function degradedReplicas(cluster: ClusterInfo | undefined): string | undefined {
  if (!cluster) return undefined;
  if (!cluster.leader) return 'no leader (electing one)';
  const lagging = (cluster.replicas ?? []).filter((r) => r.offline || !r.current);
  if (lagging.length === 0) return undefined;
  return `replica${lagging.length === 1 ? '' : 's'} ${lagging
    .map((r) => `${r.name} ${r.offline ? 'offline' : 'catching up'}`)
    .join(', ')}`;
}
