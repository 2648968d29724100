// An in-process transport for driver-level tests: nodes in one process exchange messages through a hub
// that can drop links (partition) and delay delivery. Delivery goes through a Scheduler, so a test that
// runs the drivers on virtual time (test/unit/node) runs the hub on it too.
import type { Message, NodeId } from '../raft/core/types.js';
import { realScheduler, type Scheduler } from '../raft/env.js';
import type { PeerSender } from '../raft/peer-sender.js';

export class MemoryHub {
  private receivers = new Map<NodeId, (m: Message) => void>();
  private blocked = new Set<string>();
  delayMs = 0;

  constructor(private readonly scheduler: Scheduler = realScheduler) {}

  register(id: NodeId, receive: (m: Message) => void): PeerSender {
    this.receivers.set(id, receive);
    return { send: (messages) => this.deliver(messages) };
  }

  unregister(id: NodeId): void {
    this.receivers.delete(id);
  }

  /** Cut both directions between `id` and everyone else. */
  isolate(id: NodeId): void {
    for (const other of this.receivers.keys()) {
      if (other === id) continue;
      this.blocked.add(`${id}>${other}`);
      this.blocked.add(`${other}>${id}`);
    }
  }

  heal(): void {
    this.blocked.clear();
  }

  private deliver(messages: Message[]): void {
    for (const m of messages) {
      if (this.blocked.has(`${m.from}>${m.to}`)) continue;
      const fire = () => {
        if (this.blocked.has(`${m.from}>${m.to}`)) return;
        this.receivers.get(m.to)?.(m);
      };
      if (this.delayMs > 0) this.scheduler.after(this.delayMs, fire);
      else this.scheduler.soon(fire);
    }
  }
}
