// The Kafka statistics sink (./sink.ts) and what its users name.
export { KafkaSink } from './sink.js';
export { KAFKA_SINK_DEFAULTS, type KafkaSinkOptions } from './options.js';
export { rowIdentityKey } from './messages.js';
