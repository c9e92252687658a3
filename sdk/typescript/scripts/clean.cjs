// Removes a build folder, so that a file whose source is gone is not packed.
require("node:fs").rmSync(process.argv[2], { recursive: true, force: true });
