// kafkajs 2.2.4's transactional producer asks the cluster for a coordinator (a FindCoordinator
// request, a round trip each) before every coordinator request: AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit (the group's coordinator) and EndTxn, so four lookups per transaction, each as dear
// in CPU as the request it precedes, and four round trips more on the lane's critical path. The
// answer changes only when a coordinator moves, and then the coordinator says so (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, a dropped connection): a request to it fails, and kafkajs's retry looks
// the coordinator up again.
//
// So a transactional producer's cluster remembers each lookup's broker, and hands it out again while
// that broker is connected and no coordinator request to it has failed since (any failure but
// CONCURRENT_TRANSACTIONS: the retry after it does a real lookup, exactly as before). Only clusters that looked up a transaction
// coordinator remember (a transactional producer's own): a consumer's or an admin's group lookups
// are left as they are.
import { isConcurrentTransactions } from './errors.js';
import { kafkajsInternals } from './internals.js';

const PATCHED = Symbol.for('streamstats.coordinatorLookupsPatched');
const CACHE = Symbol.for('streamstats.coordinatorCache');
const FAILURES = Symbol.for('streamstats.coordinatorRequestFailures');

/** kafkajs's protocol/coordinatorTypes.js TRANSACTION. */
const TRANSACTION = 1;

/** Broker requests that go to a coordinator found by a lookup: a failed one invalidates the lookups that found its broker. */
const COORDINATOR_REQUESTS = [
  'initProducerId',
  'addPartitionsToTxn',
  'addOffsetsToTxn',
  'txnOffsetCommit',
  'endTxn',
  'heartbeat',
  'joinGroup',
  'syncGroup',
  'leaveGroup',
  'offsetCommit',
  'offsetFetch',
  'describeGroups',
] as const;

interface Broker {
  isConnected(): boolean;
  [FAILURES]?: number;
}

interface Lookup {
  readonly broker: Broker;
  /** The broker's coordinator request failures when it was found. */
  readonly failures: number;
}

interface ClusterProto {
  findGroupCoordinator(this: ClusterProto, a: { groupId: string; coordinatorType?: number }): Promise<Broker>;
  [CACHE]?: Map<string, Lookup>;
  [PATCHED]?: true;
}

type BrokerProto = Record<string, unknown> & { [PATCHED]?: true };

/** Lookups a cluster remembers: for the tests, which check that a transaction asks for none. */
export function rememberedCoordinators(cluster: unknown): number {
  return (cluster as ClusterProto)[CACHE]?.size ?? 0;
}

/** Installs the cache on kafkajs 2.2.4 (idempotent); false for another release or layout (left as it is). */
export function patchCoordinatorLookups(): boolean {
  const protos = kafkajsInternals((r) => ({
    cluster: (r('kafkajs/src/cluster/index.js') as { prototype: ClusterProto }).prototype,
    broker: (r('kafkajs/src/broker/index.js') as { prototype: BrokerProto }).prototype,
  }));
  if (protos === null) return false;
  const { cluster, broker } = protos;
  if (cluster[PATCHED] === true && broker[PATCHED] === true) return true;
  const find = cluster.findGroupCoordinator;
  if (typeof find !== 'function' || COORDINATOR_REQUESTS.some((m) => typeof broker[m] !== 'function')) return false;
  for (const m of COORDINATOR_REQUESTS) {
    const request = broker[m] as (this: Broker, ...a: unknown[]) => Promise<unknown>;
    broker[m] = async function coordinatorRequest(this: Broker, ...a: unknown[]): Promise<unknown> {
      try {
        return await request.apply(this, a);
      } catch (err) {
        // CONCURRENT_TRANSACTIONS (the previous transaction's markers still being written, common
        // between back-to-back transactions) is the right coordinator answering: nothing moved.
        if (!isConcurrentTransactions(err)) this[FAILURES] = (this[FAILURES] ?? 0) + 1;
        throw err;
      }
    };
  }
  broker[PATCHED] = true;
  cluster.findGroupCoordinator = async function findGroupCoordinator(this: ClusterProto, a: { groupId: string; coordinatorType?: number }): Promise<Broker> {
    let cache = this[CACHE];
    if (cache === undefined) {
      if (a.coordinatorType !== TRANSACTION) return find.call(this, a);
      cache = this[CACHE] = new Map();
    }
    const key = `${a.coordinatorType ?? 0}:${a.groupId}`;
    const known = cache.get(key);
    if (known !== undefined) {
      if (known.broker.isConnected() && (known.broker[FAILURES] ?? 0) === known.failures) return known.broker;
      cache.delete(key);
    }
    const found = await find.call(this, a);
    cache.set(key, { broker: found, failures: found[FAILURES] ?? 0 });
    return found;
  };
  cluster[PATCHED] = true;
  return true;
}
