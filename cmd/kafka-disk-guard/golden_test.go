package main

import "flag"

// update rewrites the golden files of the subcommand tests: go test -update.
var update = flag.Bool("update", false, "rewrite the golden files")
