// kafkajs client settings from our config, with kafkajs's logs routed into ours.
import kafkajs, { type KafkaConfig as KafkajsConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../config/index.js';

const KafkaLogLevel = kafkajs.logLevel;

function logCreator(logger: Logger) {
  return () => (entry: LogEntry) => {
    const { message, ...extra } = entry.log;
    const fields = { kafka: entry.namespace, ...extra };
    switch (entry.level) {
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
    logCreator: logCreator(logger),
  };
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
