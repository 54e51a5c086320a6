// dist/cjs/package.json: the files of `tsc -p tsconfig.cjs.json` are CommonJS (the
// package itself is "type": "module"), for the `require` entries of package.json's exports.
// The one `import.meta.url` of the sources (src/direct/migrate.ts, which finds the
// package's sql/) becomes its CommonJS equivalent there.
import { readFileSync, writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{ "type": "commonjs" }\n');
const migrate = new URL("../dist/cjs/direct/migrate.js", import.meta.url);
const source = readFileSync(migrate, "utf8");
if (!source.includes("import.meta.url")) throw new Error("dist/cjs/direct/migrate.js: no import.meta.url to rewrite");
writeFileSync(migrate, source.replaceAll("import.meta.url", 'require("node:url").pathToFileURL(__filename).href'));
