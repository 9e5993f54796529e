// kafkajs clients from our config, with kafkajs's logs routed into ours and our codecs registered; and
// an admin client connected on first use and shared by whoever needs one.
// First, before kafkajs loads: our produce path goes into its module cache (./preload.ts).
import './preload.js';
import kafkajs, { type Admin, type Kafka, type KafkaConfig as KafkajsConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../config/index.js';
import { withTimeout } from '../async/index.js';
import { registerCodecs } from './codecs.js';
import { patchCoordinatorLookups } from './coordinators.js';
import { patchStableOffsetFetch } from './offset-fetch.js';
import { patchRequestQueue } from './request-queue.js';
import { framedSocketFactory, patchWholeResponses } from './socket.js';

// Before any client exists: every connection's request queue gets it, and every cluster the
// coordinator lookups that a transactional producer remembers, and OffsetFetch the version that can
// ask for stable offsets.
patchRequestQueue();
patchCoordinatorLookups();
patchStableOffsetFetch();
patchWholeResponses();

const KafkaLogLevel = kafkajs.logLevel;

/**
 * kafkajs's logs into ours. A broker's error response (the Connection's "Response <api>" line) is a
 * warning, not an error: kafkajs logs one for every retriable answer too (a topic being created, a
 * leader moving, a coordinator loading), and the call that finally fails reports that itself, at its
 * own level. So a healthy start (an output topic auto-created on first use) logs no error line.
 */
/** The broker's answers while a group's coordinator starts (every fresh start): kafkajs retries them. */
const COORDINATOR_STARTING = new Set(['The group coordinator is not available', "The coordinator is loading and hence can't process requests for this group", 'This is not the correct coordinator for this group']);

/** The group coordinator's answer to a stable read while a transaction holds a partition's offsets (retried by src/sinks/kafka/positions.ts). */
const OFFSETS_UNSTABLE = 'There are unstable offsets that need to be cleared';

/** The transaction coordinator's answer while it completes a transaction's commit (the next one's first request meets it). */
const TRANSACTION_COMPLETING = 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing';

/**
 * The level a kafkajs line is logged at. Besides the broker's error responses (above), these are
 * debug: AddOffsetsToTxn answered CONCURRENT_TRANSACTIONS (an exactly-once lane's next transaction
 * starting while its last commit completes, several times a second: retried after 2.5-5 ms by
 * src/kafka/transactions.ts); a stable OffsetFetch answered UNSTABLE_OFFSET_COMMIT (an exactly-once restore
 * meeting the previous owner's transaction completing, retried); a coordinator still starting (a WARN on every fresh start, retried by kafkajs); the intake
 * pausing and resuming busy partitions as its byte budget fills and drains ("Pausing/Resuming
 * fetching from N topics" at info: 81 lines for one 690,000-message load); and "Limiting retries
 * for the idempotent producer may invalidate EoS guarantees", at every producer's start (4 with
 * SINK=kafka): a send that runs out of kafkajs's retries fails as a whole, and our writers send it
 * again (at least once) or abort the transaction (exactly once), so no guarantee of ours rests on them.
 */
function kafkaLevel(level: number, namespace: string, message: string, error: unknown): number {
  if (namespace === 'Connection' && message.startsWith('Response ') && COORDINATOR_STARTING.has(String(error))) return KafkaLogLevel.DEBUG;
  if (namespace === 'Connection' && message.startsWith('Response AddOffsetsToTxn') && String(error) === TRANSACTION_COMPLETING) return KafkaLogLevel.DEBUG;
  if (namespace === 'Connection' && message.startsWith('Response OffsetFetch') && String(error) === OFFSETS_UNSTABLE) return KafkaLogLevel.DEBUG;
  if (level === KafkaLogLevel.ERROR && namespace === 'Connection' && message.startsWith('Response ')) return KafkaLogLevel.WARN;
  if (level === KafkaLogLevel.INFO && (message.startsWith('Pausing fetching') || message.startsWith('Resuming fetching'))) return KafkaLogLevel.DEBUG;
  if (level === KafkaLogLevel.WARN && message.startsWith('Limiting retries for the idempotent producer')) return KafkaLogLevel.DEBUG;
  return level;
}

export function kafkaLogCreator(logger: Logger) {
  return () => (entry: LogEntry) => {
    const { message, ...extra } = entry.log;
    const fields = { kafka: entry.namespace, ...extra };
    const level = kafkaLevel(entry.level, entry.namespace, message, (extra as { error?: unknown }).error);
    switch (level) {
      case KafkaLogLevel.ERROR:
        logger.error(fields, `kafka: ${message}`);
        break;
      case KafkaLogLevel.WARN:
        logger.warn(fields, `kafka: ${message}`);
        break;
      case KafkaLogLevel.INFO:
        logger.info(fields, `kafka: ${message}`);
        break;
      default:
        logger.debug(fields, `kafka: ${message}`);
    }
  };
}

export function kafkajsConfig(cfg: KafkaConfig, logger: Logger): KafkajsConfig {
  const out: KafkajsConfig = {
    clientId: cfg.clientId,
    brokers: cfg.brokers,
    connectionTimeout: 3000,
    // Our own supervisor reconnects with a capped back-off; kafkajs's retries cover short blips.
    retry: { initialRetryTime: 300, retries: 5, maxRetryTime: Math.min(cfg.retryMaxMs, 30000) },
    logLevel: KafkaLogLevel.INFO,
    logCreator: kafkaLogCreator(logger),
  };
  // Plaintext: each response read into a buffer of its own (./framing.ts); TLS: kafkajs's sockets.
  if (cfg.ssl === null) out.socketFactory = framedSocketFactory;
  if (cfg.ssl !== null) {
    out.ssl = {
      rejectUnauthorized: cfg.ssl.rejectUnauthorized,
      ...(cfg.ssl.ca === undefined ? {} : { ca: [cfg.ssl.ca] }),
      ...(cfg.ssl.cert === undefined ? {} : { cert: cfg.ssl.cert }),
      ...(cfg.ssl.key === undefined ? {} : { key: cfg.ssl.key }),
    };
  }
  if (cfg.sasl !== null) {
    out.sasl = { mechanism: cfg.sasl.mechanism, username: cfg.sasl.username, password: cfg.sasl.password } as SASLOptions;
  }
  return out;
}

/** A kafkajs client, or our Kafka settings to build one (its logs then go to `logger`). */
export type KafkaClientSpec = Kafka | KafkaConfig;

function isClient(k: KafkaClientSpec): k is Kafka {
  return typeof (k as Partial<Kafka>).producer === 'function';
}

/**
 * The client itself, or a new one from our settings (with `overrides` on top); either way with the
 * codecs registered.
 */
export function kafkaClient(spec: KafkaClientSpec, logger: Logger, overrides: Partial<KafkajsConfig> = {}): Kafka {
  registerCodecs();
  return isClient(spec) ? spec : new kafkajs.Kafka({ ...kafkajsConfig(spec, logger), ...overrides });
}

/** An admin client connected on first use; a failed connect is forgotten, so the next use tries again. */
export class LazyAdmin {
  #admin: Promise<Admin> | null = null;

  constructor(private readonly kafka: Kafka) {}

  get(): Promise<Admin> {
    this.#admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })();
    const p = this.#admin;
    p.catch(() => {
      if (this.#admin === p) this.#admin = null;
    });
    return p;
  }

  /** Disconnects (bounded by timeoutMs) if connected; the next get() connects again. Never rejects. */
  async close(timeoutMs: number): Promise<void> {
    const p = this.#admin;
    this.#admin = null;
    if (p === null) return;
    await withTimeout(p.then((a) => a.disconnect()), timeoutMs, 'kafka: admin disconnect').catch(() => {});
  }
}
