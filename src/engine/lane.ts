// The lane lives in src/windows (pure, so the worker that owns a lane with LANE_STATE=worker runs
// the same state machine); the engine's modules and tests name it here.
export { Lane, LaneStateError, subBatch, type LaneState, type StoreSettings } from '../windows/lane.js';
