// The one table of options: environment variable, CLI flag (derived), type and allowed values,
// default, help, and whether it holds a secret. The parser (reader.ts), --help, the README table
// (scripts/update-readme-options.mjs) and the redaction (secrets.ts) all read it.
// A row is one line; a component adding options adds rows here and reads them with its own parser.
import { KAFKA_COMPRESSIONS } from '../kafka/compression.js';
import { DECODER_DEFAULTS } from '../core/messages.js';
import { WINDOW_STORE_DEFAULTS } from '../windows/store.js';
import { REDIS_DEFAULTS } from '../sources/redis/config.js';
import { API_DEFAULTS } from '../api/config.js';

export type OptionGroup = 'engine' | 'format' | 'windows' | 'limits' | 'io' | 'generator' | 'kafka' | 'redis' | 'ops';

/**
 * What a value may be. Text (a row without a type) is checked by its component's parser: a URL, a
 * path, a list.
 */
export type OptionType =
  | { readonly type: 'int'; readonly min: number; readonly max: number; readonly also?: readonly string[] }
  | { readonly type: 'number'; readonly min: number; readonly max: number }
  | { readonly type: 'enum'; readonly values: readonly string[] }
  | { readonly type?: 'text' };

/**
 * Where a secret sits and how it is hidden. `value`: the whole value (a password); `url`: the user
 * info and password-like query parameters of a URL; `file`: the contents of the file the value names
 * (the path itself may be shown). `at` is where the secret lands in Config.
 */
export interface SecretMark {
  readonly kind: 'value' | 'url' | 'file';
  readonly at: string;
}

export type OptionSpec = OptionType & {
  readonly env: string;
  /** Default as the user would write it; '' = unset. */
  readonly default: string;
  readonly help: string;
  readonly group: OptionGroup;
  /** Never logged or echoed back; see SecretMark. */
  readonly secret?: SecretMark;
};

const int = (min: number, max: number) => ({ type: 'int', min, max }) as const;
/** An integer, or one of the words `also` (auto). */
const intOr = <const A extends readonly string[]>(min: number, max: number, also: A) => ({ type: 'int', min, max, also }) as const;
const num = (min: number, max: number) => ({ type: 'number', min, max }) as const;
const oneOf = <const V extends readonly string[]>(values: V) => ({ type: 'enum', values }) as const;
const bool = { type: 'enum', values: ['true', 'false'] } as const;
const MIB = 1024 * 1024;

export const OPTIONS = [
  { env: 'SOURCE', default: 'generator', group: 'io', help: 'generator | file:PATH | stdin | kafka | redis' },
  { env: 'SINK', default: 'stdout', group: 'io', secret: { kind: 'url', at: 'sink.url' }, help: 'stdout | file:PATH (NDJSON rows) | postgres://USER:PASSWORD@HOST:PORT/DB (upserted, exactly-once with SOURCE=kafka) | kafka (to OUTPUT_TOPIC)' },
  { env: 'OUTPUT_TOPIC', default: '', group: 'io', help: 'SINK=kafka: topic of the statistics rows (JSON keyed by row identity)' },
  { env: 'OUTPUT_COMPRESSION', default: 'none', group: 'io', ...oneOf(KAFKA_COMPRESSIONS), help: 'SINK=kafka and DEAD_LETTER=kafka: compression of what is produced (zstd needs Node >= 22.15)' },
  { env: 'EXACTLY_ONCE', default: 'false', group: 'io', ...bool, help: 'SINK=kafka: true = rows and consumed offsets commit in one Kafka transaction (read with read_committed)' },
  { env: 'DEAD_LETTER', default: 'file:streamstats-dead-letter.ndjson', group: 'io', help: 'file:PATH | stderr | kafka (to DLQ_TOPIC): where rejected records go, with their reason' },
  { env: 'DEAD_LETTER_MAX_BYTES', default: String(100 * MIB), group: 'io', ...int(1024, 1024 * 1024 * MIB), help: 'DEAD_LETTER=file:PATH: a file this big is renamed PATH.1 (PATH.1 to PATH.2, ...) and a new PATH begun; a single larger dead letter gets a file of its own. Only regular files are renamed or deleted: a PATH that is a device (/dev/null), FIFO, socket or symbolic link is written as it is, never rotated' },
  { env: 'DEAD_LETTER_FILES', default: '5', group: 'io', ...int(1, 1000), help: 'DEAD_LETTER=file:PATH: files kept, PATH included; the oldest beyond is deleted (streamstats_dead_letter_deleted_bytes_total), so at most DEAD_LETTER_MAX_BYTES x this is on disk' },
  { env: 'DLQ_TOPIC', default: '', group: 'io', help: 'DEAD_LETTER=kafka: topic for rejected records (original key and value, reason in headers)' },
  { env: 'FORMAT', default: 'monasca', group: 'format', ...oneOf(['monasca', 'ceilometer', 'json']), help: 'the records\' JSON layout' },
  { env: 'CEILOMETER_METADATA', default: '', group: 'format', help: 'FORMAT=ceilometer: comma list of resource_metadata keys (dotted paths) kept as dimensions resource_metadata.KEY, for metadata.KEY filters and groupby; empty = none (the fast path is off when set)' },
  { env: 'JSON_NAME', default: '', group: 'format', help: 'FORMAT=json: path of the meter name (a.b.c), or =CONSTANT' },
  { env: 'JSON_VALUE', default: '=1', group: 'format', help: 'FORMAT=json: path of the value, or =NUMBER (=1 counts events)' },
  { env: 'JSON_TIMESTAMP', default: 'timestamp', group: 'format', help: 'FORMAT=json: path of the event time (ms since epoch or ISO 8601)' },
  { env: 'JSON_UNIT', default: '', group: 'format', help: 'FORMAT=json: path of the unit, or =CONSTANT; empty = no unit' },
  { env: 'JSON_DIMENSIONS', default: '', group: 'format', help: 'FORMAT=json: comma list of NAME=PATH or PATH (name = path)' },
  { env: 'GROUP_BY', default: '', group: 'windows', help: 'comma list of dimension names a series is keyed by; empty = all dimensions' },
  { env: 'WINDOW_SECONDS', default: '60', group: 'windows', ...int(1, 86400), help: 'tumbling event-time window length, aligned to the epoch (whole seconds)' },
  { env: 'ALLOWED_LATENESS_SECONDS', default: '5', group: 'windows', ...num(0, 86400 * 7), help: 'watermark = max event time seen - this; later records are dead-lettered as late' },
  { env: 'LATE_RECORDS', default: 'auto', group: 'windows', ...oneOf(['auto', 'dead-letter', 'amend']), help: 'a record whose window was already emitted: dead-letter = dead-lettered as late; amend = merged into its window, which is emitted again as a new revision of the same row (PostgreSQL: updated in place; Kafka, stdout, file: appended, readers keep the highest revision per identity); auto = chosen per sink (README, late records: amend where a reader sees one row per identity)' },
  { env: 'AMEND_HORIZON_SECONDS', default: '3600', group: 'windows', ...num(1, 86400 * 30), help: 'LATE_RECORDS=amend: how long after its window closed (in event time, by the watermark) a late record can still amend it; later ones are dead-lettered as late. Closed windows are kept this long, in MAX_STATE_MB, and a restart replays from the first record of the oldest kept one' },
  { env: 'WATERMARK_CONFIRM_RECORDS', default: String(WINDOW_STORE_DEFAULTS.confirmRecords), group: 'windows', ...int(1, 1_000_000), help: 'records more than ALLOWED_LATENESS_SECONDS ahead of a partition\'s stream time move its watermark only once this many confirm the jump (1 = follow every record)' },
  { env: 'PERCENTILES', default: '', group: 'windows', help: 'comma list of percentiles (0..100) per window, e.g. 50,95,99 (from a mergeable DDSketch); empty = none' },
  { env: 'PERCENTILE_ACCURACY', default: '0.01', group: 'windows', ...num(0.0001, 0.1), help: 'relative accuracy of the percentile sketch' },
  { env: 'MAX_SERIES', default: '100000', group: 'limits', ...int(1, 100_000_000), help: 'open series cap; records of new series beyond it are dead-lettered (series_limit)' },
  { env: 'MAX_STATE_MB', default: '512', group: 'limits', ...int(1, 1_048_576), help: 'estimated main-thread MiB of open series (about 512 + 6 x key bytes each) and their percentile sketches (520 + 56 bytes a bucket); records of new series beyond it, and with PERCENTILES records whose sketch would grow past it, are dead-lettered (series_limit, detail names MAX_STATE_MB). With LATE_RECORDS=amend the closed windows kept for amendment count here too and give way to open series (the oldest are evicted; their late records are dead-lettered). The process stays within the README memory budget (3 x this and the decode threads)' },
  { env: 'MAX_DIMENSIONS', default: '64', group: 'limits', ...int(0, 10_000), help: 'dimensions per record, Monasca meta _tenant_id and _region included; more is rejected (too_many_dimensions)' },
  { env: 'MAX_MESSAGE_BYTES', default: '1048576', group: 'limits', ...int(16, 256 * MIB), help: 'larger messages are rejected (too_large)' },
  { env: 'MAX_NAME_BYTES', default: String(DECODER_DEFAULTS.maxNameBytes), group: 'limits', ...int(1, 256 * MIB), help: 'UTF-8 bytes of a meter name or unit; longer is rejected (too_long). The default holds any 255-character name' },
  { env: 'MAX_DIMENSION_BYTES', default: String(DECODER_DEFAULTS.maxDimensionBytes), group: 'limits', ...int(1, 256 * MIB), help: 'UTF-8 bytes of a dimension name or value; longer is rejected (too_long). The default holds any 255 characters' },
  { env: 'MAX_SERIES_KEY_BYTES', default: String(DECODER_DEFAULTS.maxSeriesKeyBytes), group: 'limits', ...int(16, 256 * MIB), help: 'bytes of a series identity as JSON [name, unit, [[dimension, value], ...]] (group-by dimensions); more is rejected (too_long). The default keeps PostgreSQL\'s key entry under its 2704-byte limit' },
  { env: 'MAX_FUTURE_SECONDS', default: '86400', group: 'limits', ...num(0, 86400 * 365 * 100), help: 'event times further ahead of the wall clock are rejected (future_timestamp); 0 = off' },
  { env: 'WORKER_THREADS', default: 'auto', group: 'engine', ...intOr(0, 256, ['auto']), help: 'worker threads; auto = every usable CPU (cgroup quota aware) when the lanes live in their owner workers (LANE_STATE) or the source is a file, else usable CPUs - 1, at least 1; 0 = decode on the main thread (the lanes then stay there too)' },
  { env: 'LANE_STATE', default: 'auto', group: 'engine', ...oneOf(['auto', 'main', 'worker']), help: "where each lane's window state lives: auto = worker with SOURCE=kafka, redis or generator where the other options allow it, else main (a file or stdin is one lane, which one owner alone would decode; the start-up log says which and why); main = on the main thread (workers decode batches); worker = in one worker that owns the lane for its life and decodes, merges, closes and formats its rows, so the main thread only moves bytes and commits; with SOURCE=generator the owners also generate the points, one lane per owner with its share of the series (needs WORKER_THREADS >= 1 and SINK=stdout, file:PATH, postgres, or kafka, at least once or EXACTLY_ONCE=true; with SINK=postgres the owners also encode the rows' COPY tuples). PERCENTILES sketches and the closed windows LATE_RECORDS=amend keeps live in the owner too, which amends them and formats their revisions; MAX_STATE_MB counts them over all owners, and kept windows give way to the open series of their own owner. A worker that dies takes its lanes' open and kept windows with it: with SOURCE=kafka or redis each of its lanes is rebuilt by reading its input again from the lane's commit point (a partition from its offset, a Redis consumer's pending entries) while the other lanes go on (streamstats_lane_rebuilds_total; after 3 rebuilds from one point the process exits); with other sources the process exits non-zero (STREAMSTATS_LANE_OWNER_LOST) for its supervisor to restart it, and every lane resumes from its commit point, so at-least-once holds" },
  { env: 'BATCH_SIZE', default: 'auto', group: 'engine', ...intOr(1, 100_000, ['auto']), help: 'messages per batch handed to a worker; larger batches pre-aggregate more in the worker, and the watermark moves once a batch; auto = 4000, or 32000 with SOURCE=file (a file is read whole: batches that hold a series several times spare the merge on the main thread)' },
  { env: 'BATCH_MAX_BYTES', default: 'auto', group: 'engine', ...intOr(1024, 1024 * MIB, ['auto']), help: 'a batch is cut once it holds this many bytes (at least MAX_MESSAGE_BYTES); auto = 4 MiB, or with SOURCE=file what 128 MiB allows for the 2 x POOL_QUEUE batches held at once, between 4 and 16 MiB (and never below MAX_MESSAGE_BYTES)' },
  { env: 'POOL_QUEUE', default: 'auto', group: 'engine', ...intOr(1, 10000, ['auto']), help: 'batches in flight (queued + running) before the source is paused; auto = 2 x threads + 1, or threads + 1 with SOURCE=file (its batches are large)' },
  { env: 'TASK_TIMEOUT_SECONDS', default: '60', group: 'engine', ...num(0.1, 86400), help: 'a batch still decoding after this long is aborted, retried once, then dead-lettered' },
  { env: 'WORKER_MAX_MEMORY_MB', default: '512', group: 'engine', ...int(16, 65536), help: 'old-generation heap limit of each worker; a worker beyond it is replaced' },
  { env: 'GEN_COUNT', default: '690000', group: 'generator', ...int(0, 1e12), help: 'points the generator emits (seed 000: 690 calls x 1000 points)' },
  { env: 'GEN_METRICS', default: '1000', group: 'generator', ...int(1, 10_000_000), help: 'distinct metric names (aaa.perf_000..)' },
  { env: 'GEN_HOSTS', default: '4', group: 'generator', ...int(1, 1_000_000), help: 'distinct hostname dimension values (agent_0..)' },
  { env: 'GEN_INTERVAL_SECONDS', default: '30', group: 'generator', ...num(0.001, 86400), help: 'event-time step between two points of one series' },
  { env: 'GEN_START', default: '2020-02-11T12:42:13Z', group: 'generator', help: 'event time of the first point (ISO 8601)' },
  { env: 'GEN_SEED', default: '1', group: 'generator', ...int(0, 2 ** 32 - 1), help: 'PRNG seed; the same seed gives the same workload' },
  { env: 'GEN_RATE', default: '0', group: 'generator', ...num(0, 1e9), help: 'points per second (wall clock); 0 = as fast as possible' },
  { env: 'KAFKA_BROKERS', default: '127.0.0.1:9092', group: 'kafka', help: 'SOURCE=kafka: comma list of host:port bootstrap brokers' },
  { env: 'KAFKA_TOPICS', default: '', group: 'kafka', help: 'SOURCE=kafka: comma list of topics to consume (required)' },
  { env: 'KAFKA_GROUP_ID', default: 'streamstats', group: 'kafka', help: 'consumer group; run more instances with the same id to scale out' },
  { env: 'KAFKA_CLIENT_ID', default: 'streamstats', group: 'kafka', help: 'client id sent to the brokers' },
  { env: 'KAFKA_FROM', default: 'earliest', group: 'kafka', ...oneOf(['earliest', 'latest']), help: 'where a group without committed offsets starts' },
  { env: 'KAFKA_SSL', default: 'false', group: 'kafka', ...bool, help: 'TLS to the brokers' },
  { env: 'KAFKA_SSL_CA', default: '', group: 'kafka', help: 'TLS: path of a PEM CA bundle' },
  { env: 'KAFKA_SSL_CERT', default: '', group: 'kafka', help: 'TLS: path of a PEM client certificate' },
  { env: 'KAFKA_SSL_KEY', default: '', group: 'kafka', secret: { kind: 'file', at: 'kafka.ssl.key' }, help: 'TLS: path of the PEM client key' },
  { env: 'KAFKA_SSL_REJECT_UNAUTHORIZED', default: 'true', group: 'kafka', ...bool, help: 'TLS: verify the brokers\' certificates' },
  { env: 'KAFKA_SASL_MECHANISM', default: '', group: 'kafka', ...oneOf(['plain', 'scram-sha-256', 'scram-sha-512']), help: 'SASL mechanism; empty = no SASL' },
  { env: 'KAFKA_SASL_USERNAME', default: '', group: 'kafka', help: 'SASL user name' },
  { env: 'KAFKA_SASL_PASSWORD', default: '', group: 'kafka', secret: { kind: 'value', at: 'kafka.sasl.password' }, help: 'SASL password' },
  { env: 'KAFKA_SESSION_TIMEOUT_MS', default: '30000', group: 'kafka', ...int(6000, 300000), help: 'consumer group session timeout' },
  { env: 'KAFKA_HEARTBEAT_INTERVAL_MS', default: '3000', group: 'kafka', ...int(100, 300000), help: 'heartbeat interval (must be below the session timeout)' },
  { env: 'KAFKA_MAX_WAIT_MS', default: '100', group: 'kafka', ...int(0, 60000), help: 'longest a fetch waits for data (also how long a fully paused consumer sleeps)' },
  { env: 'KAFKA_INTAKE_MAX_BYTES', default: '33554432', group: 'kafka', ...int(1024, 16 * 1024 * MIB), help: 'fetched bytes waiting for the pool before partitions are paused (a memory bound)' },
  { env: 'KAFKA_MAX_BYTES_PER_PARTITION', default: '1048576', group: 'kafka', ...int(1024, 256 * MIB), help: 'fetch size per partition' },
  { env: 'COMMIT_INTERVAL_SECONDS', default: '5', group: 'kafka', ...num(0.1, 3600), help: 'offsets are committed this often (and on rebalance and shutdown), never past an open window' },
  { env: 'IDLE_FLUSH_SECONDS', default: '30', group: 'kafka', ...num(0.1, 86400), help: 'a caught-up partition without records this long lets its watermark follow the wall clock' },
  { env: 'LAG_INTERVAL_SECONDS', default: '5', group: 'kafka', ...num(0.1, 3600), help: 'how often high watermarks are polled for the lag metrics between scrapes (a scrape of /metrics polls them too)' },
  { env: 'KAFKA_RETRY_MAX_SECONDS', default: '30', group: 'kafka', ...num(1, 3600), help: 'longest back-off between reconnection attempts when the brokers are unreachable' },
  // SOURCE=redis: text rows, checked by src/sources/redis/config.ts (its defaults constant and validator).
  { env: 'REDIS_URL', default: REDIS_DEFAULTS.url, group: 'redis', secret: { kind: 'url', at: 'redis.url' }, help: 'SOURCE=redis: redis://[USER:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS (ACL user and password)' },
  { env: 'REDIS_STREAMS', default: '', group: 'redis', help: 'SOURCE=redis: comma list of stream keys to consume (required); each stream is a lane with its own windows and watermark' },
  { env: 'REDIS_GROUP_ID', default: REDIS_DEFAULTS.groupId, group: 'redis', help: 'consumer group (created on first use); run more instances with the same id to scale out' },
  { env: 'REDIS_CONSUMER', default: '', group: 'redis', help: 'this instance\'s consumer name, stable across restarts (its pending entries are replayed); empty = the host name' },
  { env: 'REDIS_FIELD', default: REDIS_DEFAULTS.field, group: 'redis', help: 'entry field holding the message; other fields are ignored, entries without it dead-lettered (missing_field)' },
  { env: 'REDIS_FROM', default: REDIS_DEFAULTS.from, group: 'redis', help: 'earliest | latest: where a group created by streamstats starts (the first entry, or new entries only)' },
  { env: 'REDIS_READ_COUNT', default: String(REDIS_DEFAULTS.readCount), group: 'redis', help: 'XREADGROUP COUNT: most entries per read (1..100000)' },
  { env: 'REDIS_READ_MAX_BYTES', default: String(REDIS_DEFAULTS.readMaxBytes), group: 'redis', help: 'bytes of entries one read keeps, every field counted (entries after the one that reaches it are left pending and read next; an entry larger than it is read alone)' },
  { env: 'REDIS_BLOCK_MS', default: String(REDIS_DEFAULTS.blockMs), group: 'redis', help: 'XREADGROUP BLOCK: longest a read waits for new entries (1..60000)' },
  { env: 'REDIS_CLAIM_IDLE_MS', default: String(REDIS_DEFAULTS.claimIdleMs), group: 'redis', help: 'a consumer without its lease and idle this long is taken over: its pending entries are processed by another instance' },
  { env: 'REDIS_TLS_CA', default: '', group: 'redis', help: 'rediss://: path of a PEM CA bundle' },
  { env: 'REDIS_TLS_REJECT_UNAUTHORIZED', default: 'true', group: 'redis', help: 'rediss://: true | false: verify the server certificate' },
  { env: 'METRICS_PORT', default: '9464', group: 'ops', ...int(0, 65535), help: 'HTTP port of /metrics, /healthz, /readyz; 0 = any free port (logged)' },
  { env: 'METRICS_HOST', default: '0.0.0.0', group: 'ops', help: 'address the HTTP server binds' },
  { env: 'API_PORT', default: String(API_DEFAULTS.port), group: 'ops', ...int(0, 65535), help: 'HTTP port of the Ceilometer v2 statistics API (SINK=postgres only), its own listener apart from METRICS_PORT; 0 = any free port (logged)' },
  { env: 'API_HOST', default: API_DEFAULTS.host, group: 'ops', help: 'address the statistics API binds; the default keeps it off the network until an interface is chosen' },
  { env: 'API_TOKENS_FILE', default: API_DEFAULTS.tokensFile, group: 'ops', secret: { kind: 'file', at: 'api.tokens' }, help: 'statistics API tokens, one a line: TOKEN admin | TOKEN project:ID (sent as X-Auth-Token or Authorization: Bearer); unset = API off unless API_AUTH=none' },
  { env: 'API_AUTH', default: API_DEFAULTS.auth, group: 'ops', ...oneOf(['token', 'none']), help: 'token (API_TOKENS_FILE) | none: serve the statistics API to anyone, every project (logged as a warning)' },
  { env: 'API_CONNECTIONS', default: String(API_DEFAULTS.connections), group: 'ops', ...int(1, 1000), help: 'statistics API: PostgreSQL connections of its pool, and answers (query + sending) under way at once' },
  { env: 'API_TOKEN_QUERIES', default: String(API_DEFAULTS.tokenQueries), group: 'ops', ...int(1, 1000), help: 'statistics API: answers one token may have under way at once (at most API_CONNECTIONS), so one token cannot hold every connection' },
  { env: 'API_TOKEN_WAITING', default: String(API_DEFAULTS.tokenWaiting), group: 'ops', ...int(0, 100_000), help: 'statistics API: requests of one token waiting for its turn; one more is a 503 with Retry-After for that token only' },
  { env: 'API_MAX_WAITING', default: String(API_DEFAULTS.maxWaiting), group: 'ops', ...int(1, 100_000), help: 'statistics API: requests waiting in all tokens together; one more is a 503 with Retry-After' },
  { env: 'API_MAX_RESULTS', default: String(API_DEFAULTS.maxResults), group: 'ops', ...int(1, 100_000), help: 'statistics API: result groups one query may build; more is a 400 that says how to narrow the query' },
  { env: 'API_MAX_SKETCH_BUCKETS', default: String(API_DEFAULTS.maxSketchBuckets), group: 'ops', ...int(1000, 100_000_000), help: 'statistics API: stored sketch buckets one percentile query may read; more is a 400 that says how to narrow the query' },
  { env: 'API_SEND_TIMEOUT_SECONDS', default: String(API_DEFAULTS.sendTimeoutSeconds), group: 'ops', ...num(0.1, 3600), help: 'statistics API: a client that takes no byte of its answer for this long is disconnected (the answer streams, at most 64 KiB buffered per connection)' },
  { env: 'API_MAX_CONNECTIONS', default: String(API_DEFAULTS.maxConnections), group: 'ops', ...int(1, 1_000_000), help: 'statistics API: HTTP connections open at once; more are closed on arrival' },
  { env: 'LOG_LEVEL', default: 'info', group: 'ops', ...oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), help: 'JSON logs on stderr from this level up' },
  { env: 'PROGRESS', default: 'auto', group: 'ops', ...oneOf(['auto', 'on', 'off']), help: 'progress line with records, rate, ETA (Kafka, Redis: rate, lag, lanes); auto = on when stderr is a TTY' },
  { env: 'SHUTDOWN_TIMEOUT_SECONDS', default: '30', group: 'ops', ...num(1, 3600), help: 'SIGTERM/SIGINT: time allowed to drain, flush and close before exiting non-zero' },
] as const satisfies readonly OptionSpec[];

export type OptionName = (typeof OPTIONS)[number]['env'];
export type SpecOf<N extends OptionName> = Extract<(typeof OPTIONS)[number], { env: N }>;

const BY_NAME = new Map<string, OptionSpec>(OPTIONS.map((o) => [o.env, o]));

export function specOf(env: string): OptionSpec {
  const o = BY_NAME.get(env);
  if (o === undefined) throw new Error(`unknown option ${env}`);
  return o;
}

export function flagFor(env: string): string {
  return `--${env.toLowerCase().replace(/_/g, '-')}`;
}

export function defaultOf(env: OptionName): string {
  return specOf(env).default;
}

/** What a value may be, as --help and the README say it; '' for text checked by its component. */
export function allowedText(o: OptionSpec): string {
  switch (o.type) {
    case 'int':
      return `integer ${o.min}..${o.max}${o.also === undefined || o.also.length === 0 ? '' : ` or ${o.also.join(', ')}`}`;
    case 'number':
      return `number ${o.min}..${o.max}`;
    case 'enum':
      return o.values.join(' | ');
    default:
      return '';
  }
}

/** What --help and the README say of a secret row; '' for the others. */
export function secretNote(o: OptionSpec): string {
  if (o.secret === undefined) return '';
  return { value: ' (secret: never logged or echoed)', url: ' (user info and password-like parameters never logged or echoed)', file: ' (its contents are secret: never logged)' }[o.secret.kind];
}

/** The README's configuration table; a test keeps README.md equal to it (npm run docs:options rewrites it). */
export function optionsMarkdownTable(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const head = '| Variable | Flag | Default | Allowed | Meaning |\n|---|---|---|---|---|';
  const rows = OPTIONS.map((o: OptionSpec) => {
    const allowed = allowedText(o);
    return `| \`${o.env}\` | \`${flagFor(o.env)}\` | ${o.default === '' ? '' : `\`${o.default}\``} | ${cell(allowed)} | ${cell(o.help + secretNote(o))} |`;
  });
  return `${head}\n${rows.join('\n')}`;
}
