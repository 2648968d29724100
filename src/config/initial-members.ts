// The initial voters: the nodes a new cluster bootstraps with. A node marked `join: true` is a member
// added later (`members add`), listed so that one file can serve every node a deployment may grow to.
import type { NodeConfig } from './types.js';

export function initialMembers(nodes: readonly NodeConfig[]): NodeConfig[] {
  return nodes.filter((n) => n.join !== true);
}
