/* main.c - the savedmodel command line: dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    fprintf(stderr, "usage: savedmodel {show,vars} ...\n");
    return argc < 2 ? 2 : 0;
  }
  fprintf(stderr, "savedmodel: unknown command '%s'\n", argv[1]);
  return 2;
}
