// The package is "type": "module"; this marks the CommonJS build's folder as CommonJS.
require("node:fs").writeFileSync(`${process.argv[2]}/package.json`, '{ "type": "commonjs" }\n');
