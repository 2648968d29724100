// The probe behind "peer unreachable" reports (PeerLink.confirmGone). A broken stream alone is weak
// evidence (a peer restarting, a reset connection, a stream it refused); a broken stream AND a fresh
// connection attempt that fails (TRANSIENT_FAILURE: refused, nobody listens) is what a killed process
// looks like — its kernel closed the sockets and its port is closed. A connection that comes back (READY)
// is not a report; a silent peer (a machine that vanished, a network that drops packets) gives no signal
// and the election timeout handles it. A false report is harmless to Raft (Raft.leaderUnreachable:
// Pre-Vote first), so this only has to be good evidence, not proof.
import * as grpc from '@grpc/grpc-js';

/** Watches `channel` for up to `windowMs`; calls `verdict(true)` when a connection attempt fails, `verdict(false)`
 *  when the window ends, the channel shuts down or the link closes first. */
export function probeGone(
  channel: ReturnType<grpc.Client['getChannel']>,
  windowMs: number,
  closed: () => boolean,
  verdict: (gone: boolean) => void,
): void {
  const deadline = Date.now() + windowMs;
  const watch = (): void => {
    if (closed()) return verdict(false);
    const state = channel.getConnectivityState(true); // true: start a connection attempt if idle
    if (state === grpc.connectivityState.TRANSIENT_FAILURE) return verdict(true);
    if (state === grpc.connectivityState.SHUTDOWN) return verdict(false);
    // READY may still be the old connection's state for a moment: keep watching until the deadline.
    channel.watchConnectivityState(state, deadline, (err) => {
      if (err)
        verdict(false); // deadline: no verdict
      else watch();
    });
  };
  watch();
}
