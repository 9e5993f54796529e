// Imported by an entry point before any module that imports kafkajs: our produce path
// (./produce-request.ts) must be in kafkajs's module cache before its producer is loaded.
import { installProduceEncoder } from './produce-request.js';

installProduceEncoder();
