// The outbound side of the peer transport, as the driver needs it.
import type { Message } from './core/types.js';

/** Sending never blocks and never throws: a message to a dead or unreachable peer is dropped
 *  (Raft retries by itself: heartbeats, re-sent appends, new elections). */
export interface PeerSender {
  send(messages: Message[]): void;
}
