// What a node id may be: one rule for the config file and for `members add`, so an id the config file
// accepts is never refused when it is added (two rules differing by one character did exactly that). 63 is
// a DNS label's limit, so an id can also name a host or a certificate's subject.
export const NODE_ID_MAX_LENGTH = 63;

const NODE_ID = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${NODE_ID_MAX_LENGTH - 1}}$`);

/** The rule in words, for error messages. */
export const NODE_ID_RULE = `1-${NODE_ID_MAX_LENGTH} letters, digits, '.', '_' or '-', starting with a letter or digit`;

export function isNodeId(id: string): boolean {
  return NODE_ID.test(id);
}
