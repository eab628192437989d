import { Agent, request } from 'node:http';
import type { FuzzRequest } from './openapi-fuzz.js';

export interface FuzzResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** A transport failure (reset, hang-up, timeout) instead of an answer. */
  error?: string;
}

/**
 * Sends requests over real HTTP on loopback with keep-alive, `concurrency` at a time. (Fastify's
 * `inject` cannot load inside Jest's ESM mode: light-my-request requires the ESM-only `cookie`.)
 */
export async function sendAll(
  port: number,
  requests: readonly FuzzRequest[],
  concurrency: number,
  onResponse: (req: FuzzRequest, res: FuzzResponse) => void,
): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const req = requests[next++]!;
      onResponse(req, await send(agent, port, req));
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    agent.destroy();
  }
}

function send(agent: Agent, port: number, req: FuzzRequest): Promise<FuzzResponse> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body) headers['content-length'] = req.body.length;
    const r = request(
      { host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', (err) =>
          resolve({ status: 0, headers: {}, body: Buffer.alloc(0), error: err.message }),
        );
      },
    );
    r.on('timeout', () => r.destroy(new Error('no answer within 30 s')));
    r.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ status: 0, headers: {}, body: Buffer.alloc(0), error: err.code ?? err.message }),
    );
    r.end(req.body);
  });
}

/** Why a 4xx answer is not the spec's error envelope, or undefined when it is. */
export function envelopeProblem(res: FuzzResponse): string | undefined {
  const type = String(res.headers['content-type'] ?? '');
  if (!/^application\/json/.test(type)) return `content-type ${type || 'missing'}`;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- checked field by field below
  let body: any;
  try {
    body = JSON.parse(res.body.toString('utf8'));
  } catch {
    return 'body is not JSON';
  }
  if (!body || typeof body !== 'object') return 'body is not an object';
  const keys = Object.keys(body).sort().join(',');
  if (keys !== 'detail,status,timestamp,title') return `keys ${keys}`;
  if (typeof body.title !== 'string' || !body.title) return 'title';
  if (body.status !== res.status) return `status ${body.status} in body`;
  if (typeof body.timestamp !== 'string' || Number.isNaN(Date.parse(body.timestamp))) return 'timestamp';
  const detail = body.detail;
  if (!detail || typeof detail !== 'object') return 'detail';
  if ('message' in detail) return typeof detail.message === 'string' ? undefined : 'detail.message';
  if (!Array.isArray(detail.invalids) || detail.invalids.length === 0)
    return 'detail has neither message nor invalids';
  for (const inv of detail.invalids) {
    const fieldOk =
      typeof inv?.field === 'string' ||
      (Array.isArray(inv?.field) && inv.field.every((f: unknown) => typeof f === 'string'));
    if (!fieldOk || typeof inv.reason !== 'string') return `invalid ${JSON.stringify(inv).slice(0, 80)}`;
    if (inv.event !== undefined && !Number.isInteger(inv.event)) return 'invalid.event';
  }
  return undefined;
}

/** The message of an error answer, short, for grouping failures. */
export function messageOf(res: FuzzResponse): string {
  if (res.error) return res.error;
  try {
    const detail = JSON.parse(res.body.toString('utf8'))?.detail;
    const text = detail?.message ?? JSON.stringify(detail?.invalids?.[0] ?? detail);
    return String(text)
      .replace(/fz\d+k/g, 'fz…k')
      .slice(0, 120);
  } catch {
    return res.body.toString('utf8').slice(0, 120);
  }
}
