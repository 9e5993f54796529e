// The xAPI workload of seed 003 (learning events on an event bus): xAPI statements with an actor,
// a verb, an object, a context and an ISO 8601 timestamp. Pure and seeded, shared by the demo
// producer, the tests and the benchmark; FORMAT=json reads them with XAPI_JSON_MAPPING.
import { prng } from '../generator.js';

export const XAPI_VERBS = ['http://adlnet.gov/expapi/verbs/experienced', 'http://adlnet.gov/expapi/verbs/answered', 'http://adlnet.gov/expapi/verbs/completed', 'https://w3id.org/xapi/video/verbs/played', 'http://adlnet.gov/expapi/verbs/passed'] as const;

/** Environment for FORMAT=json: one series per (verb, course); the value is the scaled score (or 1 = a count). */
export const XAPI_JSON_MAPPING = {
  FORMAT: 'json',
  JSON_NAME: 'verb.id',
  JSON_VALUE: 'result.score.scaled',
  JSON_TIMESTAMP: 'timestamp',
  JSON_DIMENSIONS: 'course=context.extensions.course,org=context.platform',
} as const;

export interface XapiWorkload {
  readonly count: number;
  readonly learners: number;
  readonly courses: number;
  /** Event time of the first statement and the step between two statements (ms). */
  readonly startMs: number;
  readonly stepMs: number;
  readonly seed: number;
}

export interface XapiStatement {
  readonly json: string;
  readonly verb: string;
  readonly course: string;
  readonly tsMs: number;
  readonly score: number;
}

export function* xapiStatements(w: XapiWorkload): Generator<XapiStatement> {
  const rand = prng(w.seed);
  for (let i = 0; i < w.count; i++) {
    const verb = XAPI_VERBS[Math.floor(rand() * XAPI_VERBS.length)]!;
    const course = `course-v1:edX+DemoX+${Math.floor(rand() * w.courses)}`;
    const learner = Math.floor(rand() * w.learners);
    const score = Math.round(rand() * 1000) / 1000;
    const tsMs = w.startMs + i * w.stepMs;
    const statement = {
      id: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
      actor: { objectType: 'Agent', account: { homePage: 'https://lms.example.org', name: `learner-${learner}` } },
      verb: { id: verb, display: { 'en-US': verb.slice(verb.lastIndexOf('/') + 1) } },
      object: { objectType: 'Activity', id: `https://lms.example.org/xblock/block-v1:${course}+type@problem+block@${learner % 7}` },
      result: { score: { scaled: score }, completion: verb.endsWith('completed') },
      context: { platform: 'openedx', extensions: { course } },
      timestamp: new Date(tsMs).toISOString(),
      version: '1.0.3',
    };
    yield { json: JSON.stringify(statement), verb, course, tsMs, score };
  }
}
