// `await using` needs Symbol.asyncDispose at run time. Node >= 20.4 has it; older runtimes get the same
// registered symbol TypeScript's downlevel helpers look up. Imported first by every module that uses it.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for('Symbol.asyncDispose');
(Symbol as { dispose?: symbol }).dispose ??= Symbol.for('Symbol.dispose');

export {};
