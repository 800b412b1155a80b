// tap's `after` script (.taprc): the run's PostgreSQL cluster goes with it.
import { stopSharedCluster } from './postgres.js';

stopSharedCluster();
