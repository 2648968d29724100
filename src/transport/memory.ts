// An in-process transport for driver-level tests: nodes in one process exchange messages through a hub
// that can drop links (partition) and delay delivery. The seeded simulator in test/sim drives the pure
// core directly; this hub exercises the real driver (timers, async storage) end to end.
import type { Message, NodeId } from '../raft/core/types.js';
import type { PeerSender } from '../raft/transport.js';

export class MemoryHub {
  private receivers = new Map<NodeId, (m: Message) => void>();
  private blocked = new Set<string>();
  delayMs = 0;

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
      if (this.delayMs > 0) setTimeout(fire, this.delayMs).unref?.();
      else setImmediate(fire);
    }
  }
}
