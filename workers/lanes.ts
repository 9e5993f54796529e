// Worker entry of LANE_STATE=worker: one owner of lanes per worker (its pool has this one thread, so
// every task for a lane reaches the worker that holds its state). Imports only pure code from
// src/windows: no pool, no metrics, no I/O.
import { workerData } from 'node:worker_threads';
import { LaneOwner, type OwnerReply, type OwnerSettings, type OwnerTask } from '../src/windows/owner.js';

let owner: LaneOwner | undefined;

export default function run(task: OwnerTask): OwnerReply {
  owner ??= new LaneOwner(workerData as OwnerSettings);
  return owner.run(task);
}
