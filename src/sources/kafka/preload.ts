// Imported first by an entry point (before any module that imports kafkajs), this puts the Kafka
// source's fetch decoder (./records.ts) and Batch (./batch.ts) in kafkajs's module cache while they
// can still be: kafkajs's consumer takes its Batch when kafkajs is first loaded. The source installs
// both itself too, which for the decoder is in time (kafkajs loads it on the first fetch) but not for Batch.
import { installFastBatch } from './batch.js';
import { installFastRecords } from './records.js';

installFastRecords();
installFastBatch();
