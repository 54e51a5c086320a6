// dist/cjs/package.json: the files of `tsc -p tsconfig.cjs.json` are CommonJS (the
// package itself is "type": "module"), for the `require` entries of package.json's exports.
import { writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{ "type": "commonjs" }\n');
