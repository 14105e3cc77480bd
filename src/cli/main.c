/* main.c - the savedmodel command line: dispatches to one file per subcommand.
 *
 * savedmodel show     what saved_model_cli show prints (show.c)
 * savedmodel vars     what inspect_checkpoint prints (vars.c)
 * savedmodel convert  rewrite a SavedModel through this library (convert.c)
 * savedmodel run      what saved_model_cli run prints (run.c)
 * savedmodel scan     what saved_model_cli scan prints, plus ops the runtime lacks (scan.c)
 * savedmodel serve    a TensorFlow Serving-compatible REST model server (serve.c, src/serve/)
 * savedmodel validate every check without running anything (validate.c)
 * savedmodel train    train the seeds' CNN on MNIST-format data and export it (train.c) */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#ifndef SM_CLI_VERSION
#define SM_CLI_VERSION "0.1.0" /* CMake passes the project's version */
#endif

static const char usage[] =
    "usage: savedmodel <command> [flags]\n"
    "\n"
    "commands:\n"
    "  show     Show tag-sets, SignatureDefs, inputs/outputs and ops of a SavedModel\n"
    "           (the output of `saved_model_cli show`, byte for byte).\n"
    "  vars     List the variables of a SavedModel or checkpoint, or print one\n"
    "           (the output of TensorFlow's inspect_checkpoint).\n"
    "  convert  Write a copy of a SavedModel through libsavedmodel (.pb or .pbtxt).\n"
    "  run      Run a SignatureDef on inputs from .npy/.npz files, Python literals or\n"
    "           tf.Example dicts, printing the outputs (`saved_model_cli run`).\n"
    "  scan     Report denylisted ops (`saved_model_cli scan`) and ops the runtime lacks.\n"
    "  serve    Serve SavedModels over TensorFlow Serving's REST API (/v1/models/...).\n"
    "  train    Train the seeds' CNN on MNIST-format data (Fashion-MNIST by default) and\n"
    "           export it as a SavedModel.\n"
    "  validate Check a SavedModel without running it (graph, kernels, assets, every checksum).\n"
    "\n"
    "\n"
    "options:\n"
    "  --help, -h     Print this text and exit.\n"
    "  --version, -v  Print the version (savedmodel X.Y.Z) and exit.\n"
    "\n"
    "`savedmodel <command> --help` describes each command's flags. Exit status: 0 success,\n"
    "1 failure (message on stderr; scan and validate: findings), 2 usage error.\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-v")) {
    printf("savedmodel %s\n", SM_CLI_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "show")) return sm__cli_show(argc - 1, argv + 1);
  if (!strcmp(cmd, "vars")) return sm__cli_vars(argc - 1, argv + 1);
  if (!strcmp(cmd, "convert")) return sm__cli_convert(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return sm__cli_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "scan")) return sm__cli_scan(argc - 1, argv + 1);
  if (!strcmp(cmd, "serve")) return sm__cli_serve(argc - 1, argv + 1);
  if (!strcmp(cmd, "train")) return sm__cli_train(argc - 1, argv + 1);
  if (!strcmp(cmd, "validate")) return sm__cli_validate(argc - 1, argv + 1);
  fprintf(stderr, "savedmodel: unknown command '%s'\n%s", cmd, usage);
  return 2;
}
