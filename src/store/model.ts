/**
 * The store's model: the rows and views it reads and writes, and the few pure rules about them
 * (the 202 body, the order of fan-out positions, which endpoints an event goes to), shared by both
 * engines and by everything above the store, which imports them from here and the interface
 * from store.ts. Each aggregate's types are in their own module under store/model/.
 */
import type { DestinationThrottle } from '../domain/destinations.js';

export * from './model/accounts.js';
export * from './model/dmarc.js';
export * from './model/inbound.js';
export * from './model/messages.js';
export * from './model/queue.js';
export * from './model/status.js';
export * from './model/webhooks.js';
export type { TlsReportClaim, TlsReportRecord } from './tls-report-store.js';
export type { DestinationThrottle };
