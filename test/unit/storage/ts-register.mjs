// `node --import ./ts-register.mjs child.ts` — installs ts-hooks.mjs (see there for why).
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
