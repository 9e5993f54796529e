// Dead letters the Redis source writes itself: entries without REDIS_FIELD never reach the pool.
import type { RejectReason } from '../../core/messages.js';
import type { Missing } from './entries.js';

/** A dead letter the source writes itself (an entry without REDIS_FIELD): the dead-letter output's entry shape. */
export interface SourceRejected {
  time: string;
  reason: RejectReason;
  detail: string;
  source: string;
  partition: number;
  offset: string;
  batch_seq: number;
  message_index: number;
  element: number;
  value: string;
  value_encoding: 'utf8';
  key: string;
  topic: string;
  kafka_partition: number;
}

/** The pipeline's dead-letter output, as the source sees it (sources know no sinks: typed here). */
export interface SourceDeadLetter {
  write(entries: readonly SourceRejected[]): Promise<void>;
}

/** One missing_field dead letter per entry, except those an earlier run dead-lettered already (below the restored applied end). */
export function missingFieldLetters(
  missing: readonly Missing[],
  lane: { readonly id: number; readonly stream: string; readonly partition: number; readonly restoredAppliedEnd: number; readonly field: string; readonly source: string },
): SourceRejected[] {
  const out: SourceRejected[] = [];
  for (const m of missing) {
    if (m.position < lane.restoredAppliedEnd) continue;
    out.push({
      time: new Date().toISOString(),
      reason: 'missing_field',
      detail: `redis entry ${m.id} of stream ${JSON.stringify(lane.stream)} has no field ${JSON.stringify(lane.field)} (REDIS_FIELD); its fields: ${m.fieldNames.join(', ') || 'none'}`,
      source: lane.source,
      partition: lane.id,
      offset: String(m.position),
      batch_seq: -1,
      message_index: -1,
      element: -1,
      value: '',
      value_encoding: 'utf8',
      key: Buffer.from(m.id).toString('base64'),
      topic: lane.stream,
      kafka_partition: lane.partition,
    });
  }
  return out;
}
