import type { CustomerStore, DomainStore, KeyStore, SuppressionStore, UserStore } from '../../store.js';
import * as customers from '../customers.js';
import type { Db } from '../db.js';
import * as domains from '../domains.js';
import * as inbound from '../inbound.js';
import * as keys from '../keys.js';
import * as quotas from '../quotas.js';
import * as suppressions from '../suppressions.js';
import * as users from '../users.js';

/** Customers, API keys, domains, suppressions and dashboard users on SQLite: each call one function of this folder. */

export function sqliteCustomers(db: Db): CustomerStore {
  return {
    ensureDefault: async (now) => customers.ensureDefaultCustomer(db, now),
    add: async (name, now) => customers.addCustomer(db, name, now),
    find: async (name) => customers.findCustomer(db, name),
    byId: async (id) => customers.customerById(db, id),
    list: async () => customers.listCustomers(db),
    counts: async (id) => customers.customerCounts(db, id),
    unsubscribeDefault: async (id) => customers.unsubscribeDefault(db, id),
    setUnsubscribeDefault: async (id, on) => customers.setUnsubscribeDefault(db, id, on),
    pools: async () => customers.customerPools(db),
    setPools: async (id, change) => customers.setCustomerPools(db, id, change),
    quotas: async (id) => quotas.customerQuotas(db, id),
    setQuotas: async (id, q) => quotas.setCustomerQuotas(db, id, q),
    quotaUse: async (id, now) => quotas.quotaUse(db, id, now),
  };
}

export function sqliteKeys(db: Db): KeyStore {
  return {
    create: async (input) => keys.createKey(db, input),
    authenticate: async (presented) => keys.authenticate(db, presented),
    list: async (customerId) => keys.listKeys(db, customerId),
    get: async (id, customerId) => keys.getKey(db, id, customerId),
    revoke: async (id, now) => keys.revokeKey(db, id, now),
    authEpoch: async () => keys.readAuthEpoch(db),
  };
}

export function sqliteDomains(db: Db): DomainStore {
  return {
    add: async (input) => domains.addDomain(db, input),
    find: async (name) => domains.findDomain(db, name),
    findSending: async (name) => domains.findSendingDomain(db, name),
    list: async (customerId) => domains.listDomains(db, customerId),
    setVerified: async (id, at) => domains.setVerified(db, id, at),
    setVerification: async (id, input) => domains.setVerification(db, id, input),
    setReturnPath: async (id, host) => domains.setReturnPath(db, id, host),
    setReceiving: async (id, on) => domains.setReceiving(db, id, on),
    remove: async (id) => domains.removeDomain(db, id),
    rotateDkim: async (id, now) => domains.rotateDkim(db, id, now),
    switchDkim: async (id, now) => domains.switchDkim(db, id, now),
    receiving: async (name) => inbound.receivingDomain(db, name),
    inboundLimits: async (id) => inbound.inboundLimitsOf(db, id),
    setInboundLimits: async (id, limits) => inbound.setInboundLimits(db, id, limits),
  };
}

export function sqliteSuppressions(db: Db): SuppressionStore {
  return {
    find: async (customerId, addresses) => suppressions.findSuppressed(db, customerId, addresses),
    addMany: async (customerId, entries, now) => suppressions.addSuppressions(db, customerId, entries, now),
    page: async (customerId, after, limit) => suppressions.suppressionPage(db, customerId, after, limit),
    add: async (input) => suppressions.addSuppression(db, input),
    list: async (customerId, opts) => suppressions.listSuppressions(db, customerId, opts),
    remove: async (customerId, address) => suppressions.removeSuppression(db, customerId, address),
    search: async (customerId, prefix, limit) => suppressions.searchSuppressions(db, customerId, prefix, limit),
    simulated: async (customerId, addresses, limit) =>
      suppressions.simulatedSuppressions(db, customerId, addresses, limit),
    unsubscribe: async (recipientId, method, now) => suppressions.unsubscribe(db, recipientId, method, now),
  };
}

export function sqliteUsers(db: Db): UserStore {
  return {
    add: async (input) => users.addUser(db, input),
    find: async (email) => users.findUser(db, email),
    list: async () => users.listUsers(db),
    remove: async (email) => users.removeUser(db, email),
    setPassword: async (email, hash) => users.setPassword(db, email, hash),
    createSession: async (user, customerId, now) => users.createSession(db, user, customerId, now),
    useSession: async (id, now, idleMs) => users.useSession(db, id, now, idleMs),
    showCustomer: async (id, customerId) => users.showCustomer(db, id, customerId),
    endSession: async (id) => users.endSession(db, id),
    purgeSessions: async (now, idleMs) => users.purgeSessions(db, now, idleMs),
  };
}
